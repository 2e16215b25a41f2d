package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sparkbench/app/receipt"
	"sparkbench/runner/atomicfile"
)

// ArchiveTime is the modification time of every archive entry: a fixed value, so the same
// files give the same .tar.gz bytes.
var ArchiveTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// WriteDir writes files into dir, which must not exist or be an empty folder. The files go
// into a hidden temporary sibling (".<base>.writing-<pid>-<random>", created exclusively through
// an os.Root on it, each synced) which is renamed into place at the end, as the .tar.gz path
// writes beside its target: a reader, a full disk or a kill never leaves a half-written bundle
// at dir. On an error nothing is left (dir is as it was); a sibling left by a killed writer is
// removed by the next write to the same folder once its process is gone.
func WriteDir(dir string, files receipt.Files) error {
	for _, name := range files.Names() {
		if err := receipt.CheckName(name); err != nil {
			return fmt.Errorf("write bundle: %w", err)
		}
	}
	dir = filepath.Clean(dir)
	switch ents, err := os.ReadDir(dir); {
	case err == nil && len(ents) > 0:
		return fmt.Errorf("%s is not empty (%d entries); write the bundle into a new or empty folder", dir, len(ents))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", parent, err)
	}
	removeAbandoned(parent, base)
	tmp, err := os.MkdirTemp(parent, fmt.Sprintf(".%s.writing-%d-*", base, os.Getpid()))
	if err != nil {
		return fmt.Errorf("create a folder beside %s: %w", dir, err)
	}
	if err := writeFiles(tmp, files); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("%w; nothing was written at %s (free what is short and run the command again)", err, dir)
	}
	err = os.Chmod(tmp, 0o755)
	if err == nil {
		// rename(2) replaces an empty folder and refuses a non-empty one: a folder filled
		// since the check above is not overwritten.
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("write %s: %w; nothing was written there", dir, err)
	}
	syncDir(parent)
	return nil
}

// writeFiles writes files into the new folder dir, each created exclusively and synced.
func writeFiles(dir string, files receipt.Files) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, name := range files.Names() {
		if d := path.Dir(name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("write %s: %w", name, err)
			}
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		_, err = f.Write(files[name])
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", name, bare(err))
		}
	}
	return nil
}

// bare is the system's error without the temporary folder's path, which names nothing the
// user will find.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// removeAbandoned removes the temporary siblings of parent/base whose writer process is gone
// (a kill -9 mid-write); a live writer's is left alone.
func removeAbandoned(parent, base string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	prefix := "." + base + ".writing-"
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if pid != os.Getpid() && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}

// syncDir syncs a folder (best effort: some file systems refuse to).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// TarGz returns files as a deterministic gzip-compressed tar archive: entries in byte order of
// their names, all under the folder top, regular files with mode 0644, owner 0, the fixed
// ArchiveTime; the gzip header carries no name or time.
func TarGz(files receipt.Files, top string) ([]byte, error) {
	if err := receipt.CheckName(top); err != nil || strings.Contains(top, "/") {
		return nil, fmt.Errorf("archive folder %q: want one plain name", top)
	}
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, name := range files.Names() {
		if err := receipt.CheckName(name); err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: top + "/" + name, Mode: 0o644, Size: int64(len(files[name])),
			ModTime: ArchiveTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("archive %s: %w", name, err)
		}
		if _, err := tw.Write(files[name]); err != nil {
			return nil, fmt.Errorf("archive %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TopName is the archive folder for an output file: its base name without .tar.gz / .tgz.
func TopName(out string) string {
	b := filepath.Base(out)
	for _, ext := range []string{".tar.gz", ".tgz"} {
		b = strings.TrimSuffix(b, ext)
	}
	if b == "" || b == "." || b == ".." {
		b = "bundle"
	}
	return b
}

// IsArchiveName says whether an output path asks for an archive (.tar.gz or .tgz).
func IsArchiveName(out string) bool {
	return strings.HasSuffix(out, ".tar.gz") || strings.HasSuffix(out, ".tgz")
}

// Write writes a bundle to out: a .tar.gz (written beside it and renamed into place) when the
// name ends in .tar.gz or .tgz, else a new or empty folder.
func Write(out string, files receipt.Files) error {
	if !IsArchiveName(out) {
		return WriteDir(out, files)
	}
	data, err := TarGz(files, TopName(out))
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(out, data, 0o644)
}
