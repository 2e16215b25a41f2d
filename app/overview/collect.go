package overview

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"sparkbench/app/study"
	"sparkbench/runner/benchfmt"
	"sparkbench/runner/gguf"
	"sparkbench/store"
)

// Cell is one measured value with the row it came from, as the notebook names it.
type Cell struct {
	Study int64   `json:"study"`
	Leg   string  `json:"leg"` // the plan leg, e.g. "tiny/d256"
	Row   string  `json:"row"` // the row reference, "leg N seq S"
	Depth int64   `json:"depth"`
	TS    float64 `json:"ts"` // llama-bench's avg_ts
}

// Series is one study's result rows of one model, tg test, backend and configuration, by
// depth (one row per depth: a depth measured twice — repeatability copies — keeps the row of
// the plan leg that is not a copy, else the first).
type Series struct {
	StudyRef
	Model        string  `json:"model"`  // the plan's model ID
	File         string  `json:"file"`   // the model file's base name
	SHA256       string  `json:"sha256"` // the plan's SHA-256 of the file
	Test         string  `json:"test"`   // tg128
	Backend      string  `json:"backend"`
	Config       string  `json:"config"`
	BandwidthGBs float64 `json:"bandwidth_gbs"` // the study's (plan or measured); 0: none
	Points       []Cell  `json:"points"`
	path         string  // the model file as the plan resolves it here
}

// collect lists the throughput studies and the tg series of each (from the cache when the
// study has not changed, else from its stored summary of the same version unless fromRows,
// else from its rows), keeping the series of test.
func (s *Service) collect(ctx context.Context, test string, fromRows bool) ([]StudyEntry, []Series, error) {
	refs, err := s.Src.ThroughputStudies(ctx)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].ID < refs[j].ID })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache == nil {
		s.cache = map[int64]cached{}
	}
	got := make([]cached, len(refs))
	var stale []int
	for i, ref := range refs {
		c, ok := s.cache[ref.ID]
		if !ok || ref.Version == "" || c.version != ref.Version || fromRows && c.fromSummary {
			stale = append(stale, i)
			continue
		}
		got[i] = c
	}
	sums, _ := s.Src.(SummaryStore)
	if sums != nil && !fromRows {
		stale = fromSummaries(ctx, sums, refs, stale, got)
	}
	if err := s.read(ctx, refs, stale, got); err != nil {
		return nil, nil, err
	}
	if sums != nil && sums.Writable() {
		putSummaries(ctx, sums, refs, stale, got)
	}
	entries := make([]StudyEntry, 0, len(refs))
	var all []Series
	for i, ref := range refs {
		c := got[i]
		if ref.Version != "" {
			s.cache[ref.ID] = c
		}
		e := StudyEntry{StudyRef: ref, Skipped: c.skipped}
		for _, sr := range c.series {
			if matchTest(test, sr.Test) {
				sr.StudyRef = ref
				all = append(all, sr)
				e.Series++
			}
		}
		entries = append(entries, e)
	}
	return entries, all, nil
}

// fromSummaries fills got from the stored summaries of the stale studies that have one of
// their current version that decodes, and returns the studies still to read from rows. A
// summary that cannot be read or decoded is passed over: the rows are the record.
func fromSummaries(ctx context.Context, sums SummaryStore, refs []StudyRef, stale []int, got []cached) []int {
	want := false
	for _, i := range stale {
		want = want || refs[i].Version != ""
	}
	if !want {
		return stale
	}
	stored, err := sums.Summaries(ctx)
	if err != nil || len(stored) == 0 {
		return stale
	}
	var rest []int
	for _, i := range stale {
		ref := refs[i]
		found := false
		for _, sum := range stored[ref.ID] {
			if ref.Version == "" || sum.Version != ref.Version {
				continue
			}
			if c, err := decodeSummary(sum.Payload, ref.ID); err == nil {
				c.version, c.fromSummary = ref.Version, true
				got[i], found = c, true
			}
			break
		}
		if !found {
			rest = append(rest, i)
		}
	}
	return rest
}

// putSummaries keeps what was read from the rows of the studies that have a version, so the
// next cold open reads the summary; an error only costs that (the overview is unchanged).
func putSummaries(ctx context.Context, sums SummaryStore, refs []StudyRef, read []int, got []cached) {
	batch := map[int64]store.Summary{}
	for _, i := range read {
		if v := refs[i].Version; v != "" {
			batch[refs[i].ID] = store.Summary{Version: v, Payload: encodeSummary(got[i])}
		}
	}
	if len(batch) > 0 && ctx.Err() == nil {
		_ = sums.PutSummaries(ctx, batch)
	}
}

// read reads the stale studies, s.Readers at a time, into got; the first error wins.
func (s *Service) read(ctx context.Context, refs []StudyRef, stale []int, got []cached) error {
	readers := min(max(s.Readers, 1), 4)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, readers)
	var wg sync.WaitGroup
	for w := 0; w < min(readers, len(stale)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := cached{version: refs[i].Version}
				var err error
				c.series, c.skipped, err = studySeries(ctx, s.Src, refs[i])
				if err != nil {
					errs <- err
					cancel()
					return
				}
				got[i] = c
			}
		}()
	}
	var err error
feed:
	for _, i := range stale {
		select {
		case next <- i:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	select {
	case e := <-errs:
		return e
	default:
	}
	return err
}

// matchTest: "tg" matches any tg test, "tgN" itself.
func matchTest(want, test string) bool {
	return want == test || want == "tg" && strings.HasPrefix(test, "tg")
}

// studySeries reads one study as `study show` does and groups its tg result rows. A study
// that cannot be read as a throughput study is skipped with the reason, not an error.
func studySeries(ctx context.Context, src Source, ref StudyRef) ([]Series, string, error) {
	if !ref.HasPlan {
		return nil, "no registered plan (imported llama-bench rows, which name no model by SHA-256)", nil
	}
	l, err := study.LoadStudy(ctx, src, ref.ID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, fmt.Sprintf("cannot be read: %v", err), nil
	}
	res := study.BuildResults(l, nil, 0)
	bw := l.Bandwidth()
	models := map[string]study.Model{}
	for _, m := range l.Plan.Models {
		models[m.ID] = m
	}
	copies := map[string]bool{}
	for _, lp := range l.Legs {
		copies[lp.ID] = lp.Of != ""
	}
	type key struct{ model, test, backend, config string }
	byKey := map[key]*Series{}
	var order []key
	for _, row := range res.Rows {
		r := &row.Result
		if r.Kind() != benchfmt.KindTG {
			continue
		}
		m, ok := models[row.Model]
		if !ok {
			continue
		}
		k := key{row.Model, benchfmt.TestName(r.NPrompt, r.NGen, 0), backendOf(r), configLabel(r)}
		sr := byKey[k]
		if sr == nil {
			sr = &Series{Model: m.ID, File: filepath.Base(m.Path), SHA256: m.SHA256, Test: k.test, Backend: k.backend, Config: k.config,
				BandwidthGBs: bw, path: study.ResolvePath(l.St.PlanDir, m.Path)}
			byKey[k] = sr
			order = append(order, k)
		}
		c := Cell{Study: ref.ID, Leg: row.Leg, Row: row.Ref, Depth: r.NDepth, TS: r.AvgTs}
		sr.Points = addPoint(sr.Points, c, copies)
	}
	out := make([]Series, 0, len(order))
	for _, k := range order {
		sr := byKey[k]
		sort.Slice(sr.Points, func(i, j int) bool { return sr.Points[i].Depth < sr.Points[j].Depth })
		out = append(out, *sr)
	}
	return out, "", nil
}

// addPoint adds c unless its depth is there already; a plan leg's row replaces a
// repeatability copy's.
func addPoint(pts []Cell, c Cell, copies map[string]bool) []Cell {
	for i, p := range pts {
		if p.Depth == c.Depth {
			if copies[p.Leg] && !copies[c.Leg] {
				pts[i] = c
			}
			return pts
		}
	}
	return append(pts, c)
}

func backendOf(r *benchfmt.Result) string {
	if b := r.RanOn(); b != "" {
		return b
	}
	return "unknown"
}

// configLabel names a row's configuration as `study show` does (ubatch, batch, flash
// attention, KV types, threads, GPU layers, and devices when not the default).
func configLabel(r *benchfmt.Result) string {
	fa := map[int64]string{-1: "auto", 0: "off", 1: "on"}[r.FlashAttn]
	s := fmt.Sprintf("ub%d b%d fa-%s kv-%s/%s t%d ngl%d", r.NUbatch, r.NBatch, fa, r.TypeK, r.TypeV, r.NThreads, r.NGPULayers)
	if r.Known.Has(benchfmt.FDevices) && r.Devices != "" && r.Devices != "auto" {
		s += " dev-" + r.Devices
	}
	return s
}

// headers reads each model's GGUF header once per SHA-256, trying the paths of every study
// that names it (an imported study's plan folder does not exist here; a local study of the
// same file may).
func (s *Service) headers(all []Series) map[string]header {
	read := s.ReadHeader
	if read == nil {
		read = gguf.ReadFile
	}
	out := map[string]header{}
	tried := map[string]bool{}
	for _, sr := range all {
		h, ok := out[sr.SHA256]
		if ok && h.file != nil || tried[sr.path] {
			continue
		}
		tried[sr.path] = true
		f, err := read(sr.path)
		if err != nil {
			if !ok {
				out[sr.SHA256] = header{err: fmt.Sprintf("its file could not be read here (%s): %v", sr.File, trimPath(err, sr.path, sr.File))}
			}
			continue
		}
		out[sr.SHA256] = header{file: f}
	}
	return out
}

type header struct {
	file *gguf.File
	err  string
}

// trimPath keeps machine paths out of the message: the path becomes the file's base name.
func trimPath(err error, path, base string) string {
	return strings.ReplaceAll(err.Error(), path, base)
}
