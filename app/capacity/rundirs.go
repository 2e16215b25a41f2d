package capacity

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"sparkbench/runner/fsread"
)

// Where a server lifetime's files are in a run folder. A lifetime's first attempt writes into
// runs/PASS/CANDIDATE/pP (LifetimeDir). A lifetime measured again (a resumed run measures the
// lifetimes its stop or halt cut) never writes over an earlier attempt's files: the earlier
// attempt's leg in the notebook names them, and a receipt carries them. It writes into the first
// free sibling, runs/PASS/CANDIDATE/pP.2, .3, …, and run.json's entry of the lifetime names the
// folder its results are in (RunLifetime.Dir). Whatever reads a run folder's lifetimes finds
// them through LifetimeDirs; a folder whose lifetimes each ran once reads as it always did.

// LifetimeDir is the run-folder relative folder (slash separated) of the first attempt of the
// server lifetime k: runs/PASS/CANDIDATE/pP.
func LifetimeDir(k LifetimeKey) string {
	return path.Join("runs", k.Pass, k.Candidate, fmt.Sprintf("p%d", k.Slots))
}

// LifetimeDirs are the folders of a run folder's lifetimes, by lifetime key, as its run.json
// lists them (run-folder relative, slash separated). A lifetime it does not list is in its
// LifetimeDir; so is every lifetime of a run folder without run.json (a nil LifetimeDirs).
type LifetimeDirs map[string]string

// Of is the folder of lifetime k's files.
func (d LifetimeDirs) Of(k LifetimeKey) string {
	if dir, ok := d[k.String()]; ok {
		return dir
	}
	return LifetimeDir(k)
}

// LifetimeDirs are the folders r lists for its lifetimes (r nil: none).
func (r *RunReport) LifetimeDirs() LifetimeDirs {
	d := LifetimeDirs{}
	if r == nil {
		return d
	}
	for _, rl := range r.Lifetimes {
		if rl.Dir != "" {
			d[rl.Key] = filepath.ToSlash(rl.Dir)
		}
	}
	return d
}

// ReadLifetimeDirs reads the lifetimes' folders from a run folder's run.json (data; nil: the
// folder has none). Only the lifetimes' keys and folders are read; a folder that is not a clean
// path inside the run folder is refused.
func ReadLifetimeDirs(data []byte) (LifetimeDirs, error) {
	if data == nil {
		return LifetimeDirs{}, nil
	}
	var m struct {
		Lifetimes []struct {
			Key string `json:"key"`
			Dir string `json:"dir"`
		} `json:"lifetimes"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", RunManifestFile, err)
	}
	d := LifetimeDirs{}
	for _, rl := range m.Lifetimes {
		if rl.Dir == "" {
			continue
		}
		dir := filepath.ToSlash(rl.Dir)
		if !filepath.IsLocal(rl.Dir) || path.Clean(dir) != dir {
			return nil, fmt.Errorf("%s: lifetime %s: its folder %q is not a clean path inside the run folder", RunManifestFile, rl.Key, rl.Dir)
		}
		d[rl.Key] = dir
	}
	return d, nil
}

// maxRunManifestBytes bounds run.json read back from a run folder (a few KiB per lifetime).
const maxRunManifestBytes = 64 << 20

// RunFolderDirs are the lifetimes' folders of the run folder runDir, from its run.json (none:
// every lifetime in its LifetimeDir).
func RunFolderDirs(runDir string) (LifetimeDirs, error) {
	path := filepath.Join(runDir, RunManifestFile)
	data, err := fsread.ReadFile(path, maxRunManifestBytes, "a capacity run's "+RunManifestFile)
	if errors.Is(err, os.ErrNotExist) {
		return LifetimeDirs{}, nil
	}
	if err != nil {
		return nil, err
	}
	d, err := ReadLifetimeDirs(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", runDir, err)
	}
	return d, nil
}
