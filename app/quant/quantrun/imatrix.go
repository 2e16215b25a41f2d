package quantrun

import (
	"context"
	"fmt"
	"time"

	"sparkbench/app/quant"
	"sparkbench/runner"
	"sparkbench/store"
)

// imatrixFile is the importance matrix a run quantizes with: its cached path and SHA-256.
type imatrixFile struct {
	path, sha string
}

// makeImatrix reuses or makes the plan's importance matrix (llama-imatrix on the calibration
// text, measured on the reference), cached like a derived model under a key of the reference,
// the text, the settings and the tool's build, and journals which matrix the candidates use.
// A plan without one does nothing.
func (e *engine) makeImatrix(ctx context.Context) error {
	p := e.plan
	im := p.Imatrix
	if im == nil {
		return nil
	}
	calib, err := e.hash(im.Calibration.Path)
	if err != nil {
		return fmt.Errorf("imatrix calibration text: %w", err)
	}
	if calib != im.Calibration.SHA256 {
		return fmt.Errorf("imatrix calibration text: MISMATCH: %s hashes to %s, the registered plan expects %s", im.Calibration.Path, calib, im.Calibration.SHA256)
	}
	build, err := e.hash(e.itool)
	if err != nil {
		return fmt.Errorf("hash %s: %w", e.itool, err)
	}
	key := quant.ImatrixKey(p.Reference.SHA256, calib, im.Ctx, im.Chunks, build)
	d, ok, err := e.cached(ctx, key, typeImatrix)
	if err != nil {
		return err
	}
	path, _ := cachePaths(e.cacheDir, key)
	if ok {
		e.say(fmt.Sprintf("imatrix: reused %s (cache key %s)", path, key[:12]))
	} else if d, err = e.runImatrix(ctx, key, path, calib, build); err != nil {
		return err
	}
	e.imatrix = imatrixFile{path: path, sha: d.SHA256}
	_, err = e.nb.AppendJournal(ctx, EntryImatrix, map[string]any{"study": e.study.ID, "cache_key": key, "sha256": d.SHA256,
		"calibration_sha256": calib, "ctx": im.Ctx, "chunks": im.Chunks, "argv": d.Argv, "reused": ok}, store.ForStudy(e.study.ID))
	return err
}

// runImatrix makes the matrix at path with llama-imatrix (a leg; a run that lost its last
// lines and wrote no file runs again, each attempt its own leg) and records its provenance.
func (e *engine) runImatrix(ctx context.Context, key, path, calib, build string) (Derived, error) {
	p := e.plan
	spec := runner.ImatrixSpec{Tool: e.itool, Model: p.Reference.Path, Corpus: p.Imatrix.Calibration.Path, Output: path,
		Ctx: p.Imatrix.Ctx, Chunks: p.Imatrix.Chunks, Threads: p.Speed.Threads, Env: e.env, Limits: legLimits, NoFingerprint: true}
	var res *runner.ImatrixResult
	err := e.retry(ctx, "imatrix", perplexityAttempts, func() string { return res.Exit.Reason }, func(id string) (bool, error) {
		spec.ID = id
		l, err := e.startLeg(ctx, id, "other", spec.Argv(path))
		if err != nil {
			return false, err
		}
		run := runner.StartImatrix(ctx, spec)
		e.drain("imatrix", run.Events())
		res = run.Result()
		if err := e.finish(ctx, l, res.Exit, res.Transcript, nil); err != nil {
			return false, err
		}
		return res.Exit.Class == runner.ClassIncomplete && res.Err == nil, nil
	})
	if err != nil {
		return Derived{}, err
	}
	if res.Exit.Class != runner.ClassOK {
		if res.Err != nil {
			return Derived{}, fmt.Errorf("imatrix: %w", res.Err)
		}
		return Derived{}, fmt.Errorf("imatrix: llama-imatrix %s: %s", res.Exit.Class, res.Exit.Reason)
	}
	sum, err := e.hash(path)
	if err != nil {
		return Derived{}, err
	}
	d := Derived{Schema: schemaDerived, Key: key, Parent: p.Reference.SHA256, Type: typeImatrix, Calibration: calib, Build: build,
		SHA256: sum, Bytes: res.Bytes, Argv: res.Argv, CreatedAt: time.Now().UTC().Format(time.RFC3339)}
	if err := e.record(d); err != nil {
		return Derived{}, err
	}
	e.say(fmt.Sprintf("imatrix: made in %s from %d chunks of %d tokens, sha256 %s", res.End.Sub(res.Start).Round(10*time.Millisecond), p.Imatrix.Chunks, p.Imatrix.Ctx, sum[:12]))
	return d, nil
}
