package caprun

import (
	"os"
	"path/filepath"

	"sparkbench/app/capacity"
)

// assembleArgs are the `capacity assemble` arguments that reproduce study.json; dirs are the
// folders of the lifetimes' files (run.json's).
func assembleArgs(out string, dirs capacity.LifetimeDirs, sched []capacity.Lifetime, guards []guardRun) []string {
	args := []string{"--plan", filepath.Join(out, capacity.RunPlanFile)}
	for _, lt := range sched {
		dir := filepath.Join(out, filepath.FromSlash(dirs.Of(lt.Key)))
		k := lt.Key.String()
		args = append(args, capacity.FlagRequests, k+"="+filepath.Join(dir, capacity.RunRequestsFile),
			capacity.FlagRSS, k+"="+filepath.Join(dir, capacity.RunRSSFile), capacity.FlagServerLog, k+"="+filepath.Join(dir, capacity.RunServerLogFile))
		if p, ok := telemetryFile(out, dirs, lt.Key); ok {
			args = append(args, capacity.FlagTelemetry, k+"="+p)
		}
	}
	for _, g := range guards {
		args = append(args, capacity.FlagQuality, g.key.String()+"="+filepath.Join(out, guardDir(g.key), capacity.RunQualityFile))
	}
	for _, id := range batchedInFolder(out, sched) {
		args = append(args, capacity.FlagBatched, id+"="+filepath.Join(out, filepath.FromSlash(capacity.RunBatchedFile(id))))
	}
	if p, err := capacity.Load(filepath.Join(out, capacity.RunPlanFile)); err == nil && p.Serving != nil {
		args = append(args, servingArgs(out, dirs, sched)...)
	}
	return append(args, "--output", filepath.Join(out, capacity.RunStudyFile))
}

// assembleRun reads the run folder's files back (the lifetimes' from dirs, run.json's folders)
// and assembles them exactly as `capacity assemble` would.
func assembleRun(out string, dirs capacity.LifetimeDirs, sched []capacity.Lifetime, guards []guardRun) (capacity.Result, []byte, error) {
	plan, err := capacity.Load(filepath.Join(out, capacity.RunPlanFile))
	if err != nil {
		return capacity.Result{}, nil, err
	}
	in := capacity.Inputs{Requests: map[capacity.LifetimeKey]capacity.InputFile{}, RSS: map[capacity.LifetimeKey]capacity.InputFile{}, ServerLogs: map[capacity.LifetimeKey]capacity.InputFile{},
		Quality: map[capacity.QualityKey]capacity.InputFile{}}
	for _, g := range guards {
		path := filepath.Join(out, guardDir(g.key), capacity.RunQualityFile)
		data, err := os.ReadFile(path)
		if err != nil {
			return capacity.Result{}, nil, &capacity.InputError{Flag: capacity.FlagQuality, Key: g.key.String(), Err: err}
		}
		in.Quality[g.key] = capacity.InputFile{Name: path, Data: data}
	}
	for _, lt := range sched {
		dir := filepath.Join(out, filepath.FromSlash(dirs.Of(lt.Key)))
		for _, f := range []struct {
			flag  string
			name  string
			files map[capacity.LifetimeKey]capacity.InputFile
		}{{capacity.FlagRequests, capacity.RunRequestsFile, in.Requests}, {capacity.FlagRSS, capacity.RunRSSFile, in.RSS}, {capacity.FlagServerLog, capacity.RunServerLogFile, in.ServerLogs}} {
			path := filepath.Join(dir, f.name)
			data, err := os.ReadFile(path)
			if err != nil {
				return capacity.Result{}, nil, &capacity.InputError{Flag: f.flag, Key: lt.Key.String(), Err: err}
			}
			f.files[lt.Key] = capacity.InputFile{Name: path, Data: data}
		}
		if path, ok := telemetryFile(out, dirs, lt.Key); ok {
			data, err := os.ReadFile(path)
			if err != nil {
				return capacity.Result{}, nil, &capacity.InputError{Flag: capacity.FlagTelemetry, Key: lt.Key.String(), Err: err}
			}
			if in.Telemetry == nil {
				in.Telemetry = map[capacity.LifetimeKey]capacity.InputFile{}
			}
			in.Telemetry[lt.Key] = capacity.InputFile{Name: path, Data: data}
		}
	}
	for _, id := range batchedInFolder(out, sched) {
		path := filepath.Join(out, filepath.FromSlash(capacity.RunBatchedFile(id)))
		data, err := os.ReadFile(path)
		if err != nil {
			return capacity.Result{}, nil, &capacity.InputError{Flag: capacity.FlagBatched, Key: id, Err: err}
		}
		if in.Batched == nil {
			in.Batched = map[string]capacity.InputFile{}
		}
		in.Batched[id] = capacity.InputFile{Name: path, Data: data}
	}
	if err := servingInputs(out, dirs, plan, sched, &in); err != nil {
		return capacity.Result{}, nil, err
	}
	res, err := capacity.Assemble(plan, in)
	if err != nil {
		return capacity.Result{}, nil, err
	}
	data, err := res.Marshal()
	return res, data, err
}
