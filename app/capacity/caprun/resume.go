package caprun

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/runner"
	"sparkbench/runner/llamacpp"
)

// Resuming a run folder (RunSpec.Resume).
//
// run.json is written when the run folder is made, rewritten (in_progress) after every server
// lifetime and quality guard, and written a last time when the run ends, however it ends: a
// stopped or halted run records why (error) and which lifetime the interruption cut
// (interrupted); a killed run leaves its last checkpoint. A resumed run keeps every lifetime
// run.json records as finished (all its client levels measured, not cut, its files there, with
// results: a lifetime without results, no_results, is measured again), runs the others on the
// pass clocks recorded in pass_origins, and assembles the whole folder as `capacity assemble`
// would. A lifetime run again keeps its earlier attempt's files (the notebook's leg of that
// attempt names them, and a receipt carries them): the new attempt writes into a new sibling
// folder (capacity.LifetimeDirs). A quality guard run again has its folder emptied.

// errLocked: another process holds the run folder's lock.
var errLocked = errors.New("the run folder is locked")

// lockRunDir takes an exclusive lock on the run folder for the run's duration, so that two
// processes never write one folder (a killed process's lock goes with it).
func lockRunDir(dir string) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another sparkbench process is running into %s; wait for it or stop it: %w", dir, errLocked)
		}
		return nil, fmt.Errorf("lock %s: %v", dir, err)
	}
	return func() { f.Close() }, nil
}

// openResume checks that dir is a run folder of the plan with this SHA-256, locks it and reads
// its run.json (nil when there is none).
func openResume(dir, planSHA string) (*capacity.RunReport, func(), error) {
	if dir == "" {
		return nil, nil, capacity.Refuse("no run folder to resume")
	}
	bad := func(format string, a ...any) error {
		return &capacity.ResumeError{Dir: dir, Why: fmt.Sprintf(format, a...)}
	}
	if st, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil, bad("it does not exist")
	} else if err != nil {
		return nil, nil, bad("%v", err)
	} else if !st.IsDir() {
		return nil, nil, bad("it is not a folder")
	}
	unlock, err := lockRunDir(dir)
	if errors.Is(err, errLocked) {
		return nil, nil, fmt.Errorf("%w: %v", capacity.ErrBusy, err) // not a folder to give up on: busy
	} else if err != nil {
		return nil, nil, bad("%v", err)
	}
	fail := func(err error) (*capacity.RunReport, func(), error) {
		unlock()
		return nil, nil, err
	}
	planPath := filepath.Join(dir, capacity.RunPlanFile)
	if _, err := os.Stat(planPath); err != nil {
		return fail(bad("it has no %s: it is not a capacity run folder", capacity.RunPlanFile))
	}
	p, err := capacity.Load(planPath)
	if err != nil {
		return fail(bad("%v", err))
	}
	p.Defaults()
	sum, _, err := p.SHA256()
	if err != nil {
		return fail(bad("%s: %v", capacity.RunPlanFile, err))
	}
	if sum != planSHA {
		return fail(bad("its %s is plan %s, not this plan (%s): it is the run folder of another plan, or the plan changed since it ran", capacity.RunPlanFile, sum, planSHA))
	}
	data, err := os.ReadFile(filepath.Join(dir, capacity.RunManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, unlock, nil
	}
	if err != nil {
		return fail(bad("%v", err))
	}
	var prev capacity.RunReport
	if err := json.Unmarshal(data, &prev); err != nil {
		return fail(bad("%s: %v", capacity.RunManifestFile, err))
	}
	return &prev, unlock, nil
}

// resumeState is what a resumed run keeps: finished lifetimes and guards by key.
type resumeState struct {
	lifetimes map[string]capacity.RunLifetime
	guards    map[string]capacity.RunGuard
	info      capacity.RunResume
}

func (s *resumeState) lifetime(k capacity.LifetimeKey) (capacity.RunLifetime, bool) {
	if s == nil {
		return capacity.RunLifetime{}, false
	}
	rl, ok := s.lifetimes[k.String()]
	return rl, ok
}

func (s *resumeState) guard(k capacity.QualityKey) (capacity.RunGuard, bool) {
	if s == nil {
		return capacity.RunGuard{}, false
	}
	rg, ok := s.guards[k.String()]
	return rg, ok
}

// planResume decides what a resumed run keeps of prev (the folder's run.json, nil when it has
// none), notes the lifetimes' folders it runs again beside and empties the guards' folders it
// runs again. cur is the new run's report as
// far as it is known (prompt plan, quality cases, build, machine); server the llama-server
// binary it will run.
func planResume(out string, prev *capacity.RunReport, cur *capacity.RunReport, sched []capacity.Lifetime, guards []guardRun, server string) (*resumeState, error) {
	bad := func(format string, a ...any) error {
		return &capacity.ResumeError{Dir: out, Why: fmt.Sprintf(format, a...)}
	}
	s := &resumeState{lifetimes: map[string]capacity.RunLifetime{}, guards: map[string]capacity.RunGuard{}, info: capacity.RunResume{Lifetimes: []string{}}}
	if prev == nil {
		for _, sub := range []string{"runs", "quality"} {
			if ents, err := os.ReadDir(filepath.Join(out, sub)); err == nil && len(ents) > 0 {
				return nil, bad("it has no %s but holds %s/: the run was killed before it wrote one, so which server lifetimes finished is unknown", capacity.RunManifestFile, sub)
			}
		}
		s.info.Previous = "no " + capacity.RunManifestFile + ": the run ended before any lifetime"
		return s, s.clear(out, sched, guards)
	}
	switch {
	case prev.Schema != SchemaRun:
		return nil, bad("%s is %q, not %s", capacity.RunManifestFile, prev.Schema, SchemaRun)
	case prev.PlanSHA256 != cur.PlanSHA256:
		return nil, bad("%s records plan %s, not this plan (%s)", capacity.RunManifestFile, prev.PlanSHA256, cur.PlanSHA256)
	case prev.PromptPlan != cur.PromptPlan:
		return nil, bad("the prompt plan hashed to %s in that run and to %s now", prev.PromptPlan, cur.PromptPlan)
	}
	if why := buildDiffers(prev.Build, cur.Build); why != "" {
		return nil, bad("%s: a study measures one build", why)
	}
	if why := machineDiffers(prev.Machine, cur.Machine); why != "" {
		return nil, bad("%s: a study measures one machine", why)
	}
	byKey := map[string]capacity.Lifetime{}
	for _, lt := range sched {
		byKey[lt.Key.String()] = lt
	}
	absServer, _ := filepath.Abs(server)
	for _, rl := range prev.Lifetimes {
		lt, ok := byKey[rl.Key]
		if !ok || rl.Interrupted != "" || rl.NoResults != "" || len(rl.Cells) != len(lt.Clients) || !filesThere(out, rl.Files, "requests", "server_log", "evidence") {
			continue
		}
		if cur.Build == nil && prev.Build == nil && len(rl.Server.Argv) > 0 && absServer != "" {
			if was, _ := filepath.Abs(rl.Server.Argv[0]); was != absServer {
				return nil, bad("%s ran %s, this run would run %s: a study measures one build", rl.Key, rl.Server.Argv[0], server)
			}
		}
		if prev.PassOrigins[lt.Key.Pass].IsZero() {
			return nil, bad("%s records no clock origin for pass %s (it was written before runs could be resumed)", capacity.RunManifestFile, lt.Key.Pass)
		}
		s.lifetimes[rl.Key] = rl
	}
	if len(guards) > 0 && prev.QualityCases == cur.QualityCases {
		want := map[string]bool{}
		for _, g := range guards {
			want[g.key.String()] = true
		}
		for _, rg := range prev.Guards {
			if want[rg.Key] && rg.Interrupted == "" && filesThere(out, rg.Files, "quality") {
				s.guards[rg.Key] = rg
			}
		}
	}
	for _, lt := range sched {
		if _, ok := s.lifetimes[lt.Key.String()]; ok {
			s.info.Lifetimes = append(s.info.Lifetimes, lt.Key.String())
		}
	}
	for _, g := range guards {
		if _, ok := s.guards[g.key.String()]; ok {
			s.info.Guards = append(s.info.Guards, g.key.String())
		}
	}
	switch {
	case prev.Error != "":
		s.info.Previous = prev.Error
	case prev.InProgress:
		s.info.Previous = "killed: the run ended without its final " + capacity.RunManifestFile + " (its last checkpoint was read)"
	case prev.Study != "":
		s.info.Previous = "complete"
	}
	return s, s.clear(out, sched, guards)
}

// clear empties the folders of the guards the resumed run runs again. The lifetimes it runs
// again keep their earlier attempts' files, in their folders (Kept lists them): each new
// attempt writes into a free sibling (attemptDir).
func (s *resumeState) clear(out string, sched []capacity.Lifetime, guards []guardRun) error {
	for _, lt := range sched {
		if _, ok := s.lifetimes[lt.Key.String()]; ok {
			continue
		}
		for _, rel := range attemptDirs(out, lt.Key) {
			s.info.Kept = append(s.info.Kept, rel)
		}
	}
	var rels []string
	for _, g := range guards {
		if _, ok := s.guards[g.key.String()]; !ok {
			rels = append(rels, guardDir(g.key))
		}
	}
	for _, rel := range rels {
		dir := filepath.Join(out, rel)
		if _, err := os.Lstat(dir); err != nil {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("clear %s to run it again: %w", dir, err)
		}
		s.info.Cleared = append(s.info.Cleared, rel)
	}
	return nil
}

// filesThere says whether every role is recorded in files and the file is in the run folder.
func filesThere(out string, files map[string]string, roles ...string) bool {
	for _, role := range roles {
		rel := files[role]
		if rel == "" {
			return false
		}
		if st, err := os.Stat(filepath.Join(out, rel)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// buildDiffers says how two build fingerprints differ ("" when they agree or one is unknown).
func buildDiffers(was, now *llamacpp.Build) string {
	if was == nil || now == nil {
		return ""
	}
	if was.VersionLine != now.VersionLine {
		return fmt.Sprintf("the run folder was measured with %q, this run would use %q", was.VersionLine, now.VersionLine)
	}
	for _, b := range was.Binaries {
		i := slices.IndexFunc(now.Binaries, func(x llamacpp.Binary) bool { return x.Name == b.Name })
		if i >= 0 && now.Binaries[i].SHA256 != b.SHA256 {
			return fmt.Sprintf("%s hashed to %s in the run folder's run and to %s now", b.Name, b.SHA256, now.Binaries[i].SHA256)
		}
	}
	return ""
}

// machineDiffers says how two machine fingerprints differ in what the measurements depend on
// ("" when they agree or one is unknown).
func machineDiffers(was, now *runner.Machine) string {
	if was == nil || now == nil {
		return ""
	}
	var d []string
	if was.CPUModel != now.CPUModel {
		d = append(d, fmt.Sprintf("CPU %q, now %q", was.CPUModel, now.CPUModel))
	}
	if was.LogicalCPUs != now.LogicalCPUs {
		d = append(d, fmt.Sprintf("%d logical CPUs, now %d", was.LogicalCPUs, now.LogicalCPUs))
	}
	if was.Arch != now.Arch {
		d = append(d, fmt.Sprintf("arch %s, now %s", was.Arch, now.Arch))
	}
	if len(d) == 0 {
		return ""
	}
	return "the run folder was measured on another machine (" + strings.Join(d, "; ") + ")"
}

// passClock turns a recorded wall-clock pass origin into a time with a monotonic reading, so
// the resumed part of a pass is timed like the rest: milliseconds since the same origin.
func passClock(wall time.Time) time.Time {
	now := time.Now()
	return now.Add(wall.Sub(now))
}

// passUsed says whether a kept lifetime belongs to pass.
func (s *resumeState) passUsed(pass string) bool {
	for _, rl := range s.lifetimes {
		if k, err := capacity.ParseLifetimeKey(rl.Key); err == nil && k.Pass == pass {
			return true
		}
	}
	return false
}

// guardKeys are the kept guards' keys.
func (s *resumeState) guardKeys() []string {
	if s == nil {
		return nil
	}
	return s.info.Guards
}

// attemptDirs are the run-folder relative folders of lifetime k that hold an earlier attempt's
// files: its lifetimeDir and the siblings DIR.2, DIR.3, … that are not empty, in order.
func attemptDirs(out string, k capacity.LifetimeKey) []string {
	var rels []string
	for n := 1; ; n++ {
		rel := lifetimeDir(k)
		if n > 1 {
			rel = fmt.Sprintf("%s.%d", rel, n)
		}
		ents, err := os.ReadDir(filepath.Join(out, rel))
		if err != nil {
			return rels
		}
		if len(ents) > 0 {
			rels = append(rels, rel)
		}
	}
}
