package caprun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/app/energy"
	"sparkbench/runner/loadgen"
	"sparkbench/runner/server"
)

func makeRunDir(dir string) error {
	if dir == "" {
		return errors.New("no output folder")
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("output folder %s exists and is not empty; pick a new --out", dir)
	}
	return os.MkdirAll(dir, 0o755)
}

// lifetimeDir is the run-folder relative folder of the first attempt of lifetime k
// (capacity.LifetimeDir).
func lifetimeDir(k capacity.LifetimeKey) string {
	return filepath.FromSlash(capacity.LifetimeDir(k))
}

// attemptDir is the run-folder relative folder this attempt of lifetime k writes into: its
// lifetimeDir when that is absent or empty, else the first free sibling (DIR.2, DIR.3, …), so
// that an earlier attempt's files, which its leg names, are never written over.
func attemptDir(out string, k capacity.LifetimeKey) (string, error) {
	return filepath.Rel(out, freeRunDir(filepath.Join(out, lifetimeDir(k))))
}

// lifetime runs one server lifetime and writes its raw files. Only an I/O failure (or Stop)
// is an error: a server that fails yields request records that say so, and the run goes on.
// A lifetime whose client levels the run's end cut short still ends with lifetime_done (its
// Error says so) and returns the run's end as its error: it did not finish. origin is the
// pass's clock; wall the same origin as a wall-clock time.
func (r *Run) lifetime(p *capacity.Plan, planSHA string, cand capacity.Candidate, lt capacity.Lifetime, prompts *loadgen.PromptPlan, origin, wall time.Time) (capacity.RunLifetime, error) {
	spec := r.spec
	rel, err := attemptDir(spec.OutDir, lt.Key)
	if err != nil {
		return capacity.RunLifetime{Key: lt.Key.String(), Dir: lifetimeDir(lt.Key), Cells: []capacity.RunCell{}, Files: map[string]string{}}, err
	}
	dir := filepath.Join(spec.OutDir, rel)
	rl := capacity.RunLifetime{Key: lt.Key.String(), Dir: rel, Cells: []capacity.RunCell{}, Files: map[string]string{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rl, err
	}
	started := capacity.RunEvent{Type: capacity.LifetimeStarted, Lifetime: rl.Key, Origin: wall}
	if rel != lifetimeDir(lt.Key) {
		started.Dir = filepath.ToSlash(rel)
	}
	r.emit(started)
	tel := r.beginTelemetry()
	defer tel.stop()
	logf, err := os.Create(filepath.Join(dir, capacity.RunServerLogFile))
	if err != nil {
		return rl, err
	}
	defer logf.Close()
	reqf, err := os.Create(filepath.Join(dir, capacity.RunRequestsFile))
	if err != nil {
		return rl, err
	}
	defer reqf.Close()
	rw, err := capacity.NewRequestWriter(reqf, capacity.RequestHeader{Pass: lt.Key.Pass, Candidate: lt.Key.Candidate, Slots: lt.Key.Slots, PlanSHA256: planSHA})
	if err != nil {
		return rl, err
	}
	rl.Files["requests"] = filepath.Join(rel, capacity.RunRequestsFile)
	rl.Files["server_log"] = filepath.Join(rel, capacity.RunServerLogFile)

	sspec := r.serverSpec(lt.Args, logLines{logf, r, rl.Key})
	sspec.Markers = server.Markers{Must: cand.Markers.Must, MustNot: cand.Markers.MustNot}
	srv, serr := server.Start(r.ctx, sspec)
	var (
		rss      server.RSS
		evidence server.Evidence
		gone     string // why the server is not there to serve (empty while it is)
	)
	if serr != nil {
		var se *server.StartError
		if !errors.As(serr, &se) {
			return rl, serr
		}
		rl.Server, rss = failedStart(se)
		evidence = se.Evidence
		gone = "llama-server did not become healthy: " + se.Reason
		r.emit(capacity.RunEvent{Type: capacity.ServerFailed, Lifetime: rl.Key, Server: &rl.Server, Error: clipText(serr.Error())})
	} else {
		rl.Server = capacity.RunServer{Argv: srv.Argv(), Port: srv.Port(), Pid: srv.Pid(), ReadyIn: srv.ReadyIn(), Attempts: srv.Attempts(),
			Network: r.network(srv)}
		r.emit(capacity.RunEvent{Type: capacity.ServerReady, Lifetime: rl.Key, Server: &rl.Server})
	}

	next := 1 // prompt numbers: unique within the lifetime
	per := p.WarmupCount() + p.Measured
	for _, c := range lt.Clients {
		if r.ctx.Err() != nil {
			break
		}
		r.emit(capacity.RunEvent{Type: capacity.CellStarted, Lifetime: rl.Key, Clients: c})
		if gone == "" && srv != nil && !srv.Alive() {
			gone = serverGone(srv)
		}
		base := next
		cfg := loadgen.Config{Clients: c, Warmups: p.WarmupCount(), Measured: p.Measured, NPredict: p.NPredict,
			Seed: p.Seed, Prompt: func(i int) string { return prompts.Prompt(base + i) }, Timeout: spec.RequestTimeout,
			Origin: origin}
		next += per
		var cell capacity.RunCell
		var werr error
		tel.mark(energy.MarkCellStart, c)
		if gone != "" {
			cell, werr = r.notSent(rw, rl.Key, c, p, origin, gone)
		} else {
			cell, werr = r.cell(rw, rl.Key, srv, cfg, p.NPredict)
			if !srv.Alive() {
				gone = serverGone(srv)
			}
		}
		tel.mark(energy.MarkCellEnd, c)
		if werr != nil {
			if srv != nil {
				srv.Stop(context.Background())
			}
			return rl, werr
		}
		rl.Cells = append(rl.Cells, cell)
		r.advance(1, 0)
		r.emit(capacity.RunEvent{Type: capacity.CellDone, Lifetime: rl.Key, Clients: c, Cell: &cell})
	}
	if p.Serving != nil && r.ctx.Err() == nil {
		if err := r.servingProbes(p, planSHA, lt.Key, srv, gone, prompts, &next, origin, &rl); err != nil && r.ctx.Err() == nil {
			if srv != nil {
				srv.Stop(context.Background())
			}
			return rl, err
		}
	}
	// Every client level ran to its end unless the run was stopped by now: a stop after this
	// point leaves the measurements whole.
	cut := r.ctx.Err() != nil
	if err := endLifetime(srv, &rl, dir, rel, reqf, rss, evidence); err != nil {
		return rl, err
	}
	if err := tel.write(dir, rel, &rl); err != nil {
		return rl, err
	}
	// The model the lifetime's server loaded must be the file the run read: one that changed
	// meanwhile leaves the lifetime without results, and the run halts after it.
	changed := r.modelChanged(lt.Key.Candidate)
	switch {
	case !cut && changed != "":
		rl.NoResults = CodeModelChanged + ": " + changed
	case !cut && !hasResults(rl):
		rl.NoResults = noResultsReason(rl, gone)
	}
	r.advance(0, 1)
	done := capacity.RunEvent{Type: capacity.LifetimeDone, Lifetime: rl.Key, Server: &rl.Server, NoResults: rl.NoResults}
	if cut {
		done.Error = clipText("cut short: " + context.Cause(r.ctx).Error())
	}
	r.emit(done)
	if cut {
		return rl, context.Cause(r.ctx)
	}
	if changed != "" {
		return rl, &ModelChangedError{Why: changed}
	}
	return rl, nil
}

// endLifetime stops the server (its RSS, evidence and exit go into rl; without one, those of
// its failed start), writes the server records and syncs the requests file. A server on a host
// that was left running there (or could not be checked) is its error, after the records.
func endLifetime(srv *server.Server, rl *capacity.RunLifetime, dir, rel string, reqf *os.File, rss server.RSS, evidence server.Evidence) error {
	var left error // a server on a host that stayed there
	if srv != nil {
		st := srv.Stop(context.Background())
		rss, evidence = st.RSS, st.Evidence
		rl.Server.Class, rl.Server.Reason = string(st.Exit.Class), st.Exit.Reason
		rl.Server.Unexpect, rl.Server.Escalated = st.Unexpected, st.Exit.Escalated
		if err := srv.LogError(); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(rel, capacity.RunServerLogFile), err)
		}
		left = remoteStopped(&rl.Server, st)
	}
	if err := writeServerRecords(rl, dir, rss, evidence); err != nil {
		return err
	}
	if err := reqf.Sync(); err != nil {
		return err
	}
	return left
}

// failedStart is the server record of a llama-server that never became healthy: its attempts
// (the last one's argv, port and pid), why, and its peak RSS when the kernel reported one.
func failedStart(se *server.StartError) (capacity.RunServer, server.RSS) {
	rs := capacity.RunServer{Attempts: se.Attempts, Class: string(se.Class), Reason: se.Reason}
	if n := len(se.Attempts); n > 0 {
		rs.Argv, rs.Port, rs.Pid = se.Attempts[n-1].Argv, se.Attempts[n-1].Port, se.Attempts[n-1].Pid
	}
	var rss server.RSS
	if se.Exit.PeakRSS > 0 {
		rss = server.RSS{KiB: se.Exit.PeakRSS / 1024, Source: "wait4 rusage"}
	}
	return rs, rss
}

// writeServerRecords writes the lifetime's peak RSS record (when there is one) and its server
// evidence into its folder dir, and names them in rl.
func writeServerRecords(rl *capacity.RunLifetime, dir string, rss server.RSS, evidence server.Evidence) error {
	if rss.KiB > 0 {
		rl.Server.RSS = &rss
		b, _ := canon.Marshal(capacity.RSSRecord{Schema: capacity.SchemaRSS, VmHWMKiB: rss.KiB, Source: rss.Source})
		if err := os.WriteFile(filepath.Join(dir, capacity.RunRSSFile), append(b, '\n'), 0o644); err != nil {
			return err
		}
		rl.Files["rss"] = filepath.Join(rl.Dir, capacity.RunRSSFile)
	}
	rl.Server.Evidence = &evidence
	eb, _ := canon.Marshal(struct {
		Key      string          `json:"key"`
		Argv     []string        `json:"argv"`
		Evidence server.Evidence `json:"evidence"`
	}{rl.Key, rl.Server.Argv, evidence})
	if err := os.WriteFile(filepath.Join(dir, capacity.RunEvidenceFile), append(eb, '\n'), 0o644); err != nil {
		return err
	}
	rl.Files["evidence"] = filepath.Join(rl.Dir, capacity.RunEvidenceFile)
	return nil
}

// hasResults says whether any measured request of the lifetime completed.
func hasResults(rl capacity.RunLifetime) bool {
	for _, c := range rl.Cells {
		if c.Completed > 0 {
			return true
		}
	}
	return false
}

// noResultsReason says why a lifetime ended without results: why its server was not there
// (gone), else its first failed request.
func noResultsReason(rl capacity.RunLifetime, gone string) string {
	if gone != "" {
		return clipText(gone)
	}
	for _, c := range rl.Cells {
		if c.FirstErr != "" {
			return clipText("no measured request completed; the first failed: " + c.FirstErr)
		}
	}
	return "no measured request completed"
}

// serverGone waits (bounded) for a dead server's exit status and says how it ended.
func serverGone(srv *server.Server) string {
	select {
	case <-srv.Done():
	case <-time.After(10 * time.Second):
	}
	if x, ok := srv.Exited(); ok {
		return exitText(x.Class, x.Reason)
	}
	return "llama-server exited"
}

func exitText[C ~string](class C, reason string) string {
	s := "llama-server exited: " + string(class)
	if reason != "" {
		s += " (" + reason + ")"
	}
	return s
}

// cell runs one client level against a live server. A server that dies during the cell cuts
// its requests short with that reason. Request events go out as requests end; the file gets
// the cell's records at its end, where a failed record also names the server's exit.
func (r *Run) cell(rw *capacity.RequestWriter, key string, srv *server.Server, cfg loadgen.Config, nPredict int) (capacity.RunCell, error) {
	a, done := r.startOn(srv, cfg, cfg.Clients)
	defer done()
	var recs []capacity.RequestRecord
	var werr error
	retries := 0
	for res := range a.Results() {
		rec := requestRecord(res)
		recs = append(recs, rec)
		retries += res.Retries
		r.emit(capacity.RunEvent{Type: capacity.RequestDone, Lifetime: key, Clients: cfg.Clients, Request: &rec})
	}
	// A request cut by a lost connection usually means the server died; its exit may not have
	// been observed yet on a loaded machine (the pty drains, then the wait returns): give it a
	// bounded moment before deciding the server is alive.
	if srv.Alive() && slices.ContainsFunc(recs, func(r capacity.RequestRecord) bool { return connectionLost(r.Error) }) {
		select {
		case <-srv.Done():
		case <-time.After(3 * time.Second):
		}
	}
	// A dead server explains every failure of the cell: say so in each failed record.
	if !srv.Alive() {
		why := serverGone(srv)
		for i := range recs {
			if recs[i].Error != "" && !strings.Contains(recs[i].Error, "llama-server exited") {
				recs[i].Error += "; " + why
			}
		}
	}
	cell := capacity.RunCell{Clients: cfg.Clients, Retries: retries}
	for i := range recs {
		if werr = rw.Write(recs[i]); werr != nil {
			break
		}
	}
	summarise(&cell, recs, nPredict)
	return cell, werr
}

// startOn starts the load of cfg on a live server with a transport of conns connections; a
// server that dies cuts the load short with its exit. done releases the watch and transport.
func (r *Run) startOn(srv *server.Server, cfg loadgen.Config, conns int) (a *loadgen.Attack, done func()) {
	cfg.URL = srv.URL()
	cfg.Transport = loadgen.NewTransport(conns)
	srv.Track(cfg.Transport)
	actx, acancel := context.WithCancelCause(r.ctx)
	go func() {
		select {
		case <-srv.Done():
			x, _ := srv.Exited()
			acancel(errors.New(exitText(x.Class, x.Reason)))
		case <-actx.Done():
		}
	}()
	return loadgen.Start(actx, cfg), func() {
		acancel(nil)
		cfg.Transport.CloseIdleConnections()
	}
}

// connectionLost says whether a request error is the connection failing under it (refused,
// reset, closed mid-stream) rather than an HTTP or protocol error.
func connectionLost(e string) bool {
	for _, s := range []string{"connection refused", "connection reset", "broken pipe", "EOF"} {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// notSent writes the records of a client level the server was not there to serve.
func (r *Run) notSent(rw *capacity.RequestWriter, key string, c int, p *capacity.Plan, origin time.Time, why string) (capacity.RunCell, error) {
	now := msSince(time.Since(origin))
	var recs []capacity.RequestRecord
	for i := 0; i < p.WarmupCount()+p.Measured; i++ {
		rec := capacity.RequestRecord{Clients: c, Phase: capacity.PhaseWarmup, Seq: i, SendMs: now, EndMs: now, Error: "not sent: " + why}
		if i >= p.WarmupCount() {
			rec.Phase, rec.Seq = capacity.PhaseMeasured, i-p.WarmupCount()
		}
		recs = append(recs, rec)
	}
	cell := capacity.RunCell{Clients: c}
	for i := range recs {
		if err := rw.Write(recs[i]); err != nil {
			return cell, err
		}
		rec := recs[i]
		r.emit(capacity.RunEvent{Type: capacity.RequestDone, Lifetime: key, Clients: c, Request: &rec})
	}
	summarise(&cell, recs, p.NPredict)
	return cell, nil
}

func summarise(cell *capacity.RunCell, recs []capacity.RequestRecord, nPredict int) {
	var measured []capacity.RequestRecord
	for _, rec := range recs {
		if rec.Phase != capacity.PhaseMeasured {
			continue
		}
		measured = append(measured, rec)
		cell.Attempted++
		if rec.Completed(nPredict) {
			cell.Completed++
		} else if cell.FirstErr == "" {
			cell.FirstErr = rec.Error
			if cell.FirstErr == "" {
				cell.FirstErr = fmt.Sprintf("HTTP %d, %d of %d tokens", rec.HTTPStatus, rec.Tokens, nPredict)
			}
		}
	}
	m := capacity.CellMetrics("", measured, nPredict)
	if m.GenerationRate != nil {
		cell.Rate = *m.GenerationRate
	}
}

func msSince(d time.Duration) float64 { return float64(d) / 1e6 }

// requestRecord turns a load generator result into a request record the reader accepts.
func requestRecord(res loadgen.Result) capacity.RequestRecord {
	rec := capacity.RequestRecord{Clients: res.Clients, Phase: res.Phase, Seq: res.Seq, SendMs: msSince(res.Send),
		EndMs: msSince(res.End), Tokens: res.Tokens, HTTPStatus: res.HTTPStatus, Error: res.Error}
	if rec.EndMs < rec.SendMs {
		rec.EndMs = rec.SendMs
	}
	if res.HasFirstToken {
		ft := math.Min(math.Max(msSince(res.FirstToken), rec.SendMs), rec.EndMs)
		rec.FirstTokenMs = &ft
		if rec.Tokens >= 2 && ft == rec.EndMs {
			rec.EndMs = math.Nextafter(ft, math.Inf(1)) // the records refuse an undefined ITL
		}
	} else if rec.Tokens > 0 {
		// Tokens the server counted but never showed (no content event): unknown to the client.
		rec.Tokens = 0
		if rec.Error == "" {
			rec.Error = "no event carried generated content"
		}
	}
	if t := res.Timings; t != nil {
		rec.Timings = &capacity.Timings{PromptN: t.PromptN, PromptMs: t.PromptMs, PredictedN: t.PredictedN, PredictedMs: t.PredictedMs}
	}
	if res.HTTPStatus != 0 && (res.HTTPStatus < 100 || res.HTTPStatus > 599) {
		rec.HTTPStatus = 0
	}
	return rec
}
