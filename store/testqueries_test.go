package store

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"sparkbench/runner/benchfmt"
)

// Queries that only the tests use (series and rates by configuration, text search): kept here,
// out of the product, as the tests' way to read the notebook back.

// LegFilter chooses which legs' samples a series uses. The zero value takes finished and
// imported legs whose class is not crash, failed or interrupted ("a crashed leg never yields
// data").
type LegFilter struct {
	States         []string
	ExcludeClasses []string
	AllLegs        bool // ignore the two lists: every leg, running and interrupted included
}

func (f LegFilter) sql(studyArg int64) (string, []any) {
	if f.AllLegs {
		return "", nil
	}
	states := f.States
	if len(states) == 0 {
		states = []string{LegFinished, LegImported}
	}
	excl := f.ExcludeClasses
	if excl == nil {
		excl = []string{ClassCrash, "failed", ClassInterrupted}
	}
	q := " AND leg_id IN (SELECT id FROM legs WHERE study_id = ? AND state IN (" + placeholders(len(states)) + ")"
	args := []any{studyArg}
	for _, s := range states {
		args = append(args, s)
	}
	if len(excl) > 0 {
		q += " AND class NOT IN (" + placeholders(len(excl)) + ")"
		for _, c := range excl {
			args = append(args, c)
		}
	}
	return q + ")", args
}

func placeholders(k int) string { return strings.TrimSuffix(strings.Repeat("?,", k), ",") }

// BenchConfig is a stored llama-bench configuration (fields build_commit … fit_min_ctx as a
// Result whose test fields are zero).
type BenchConfig struct {
	ID     int64
	Result benchfmt.Result
}

// BenchPoint is one depth of a series: the rows of that depth aggregated.
type BenchPoint struct {
	Depth      int64
	N          int     // rows (repeated legs) at this depth
	Mean       float64 // mean over rows of avg_ts (t/s)
	MeanStddev float64 // mean over rows of stddev_ts
	Min, Max   float64 // of avg_ts
}

// BenchSeries is a metric by depth for one model/configuration and test (e.g. tg128).
type BenchSeries struct {
	ConfigID int64
	Model    string // model_type
	Config   string // the parameters that distinguish this configuration within the study, e.g. "type_k=q8_0 type_v=q8_0"
	Test     string // test name without depth: pp512, tg128, pp512+tg128
	Kind     benchfmt.Kind
	NPrompt  int64
	NGen     int64
	Points   []BenchPoint // by depth
	Params   benchfmt.Result
}

// BenchSeries returns a study's llama-bench rates (t/s) by depth, one series per
// configuration and test. It reads the bench_series aggregates (a few rows per leg), not the
// samples.
func (n *Notebook) BenchSeries(ctx context.Context, studyID int64, filter LegFilter) ([]BenchSeries, error) {
	where, args := filter.sql(studyID)
	q := `SELECT config_id, n_prompt, n_gen, n_depth, SUM(n), SUM(sum_ts) / SUM(n),
		COALESCE(SUM(sum_sd) / NULLIF(SUM(n_sd), 0), 0), MIN(min_ts), MAX(max_ts)
		FROM bench_series WHERE study_id = ?` + where + `
		GROUP BY config_id, n_prompt, n_gen, n_depth ORDER BY config_id, n_prompt, n_gen, n_depth`
	rows, err := n.rdb.QueryContext(ctx, q, append([]any{studyID}, args...)...)
	if err != nil {
		return nil, err
	}
	var out []BenchSeries
	index := map[[3]int64]int{}
	for rows.Next() {
		var cfg, np, ng int64
		var p BenchPoint
		if err := rows.Scan(&cfg, &np, &ng, &p.Depth, &p.N, &p.Mean, &p.MeanStddev, &p.Min, &p.Max); err != nil {
			rows.Close()
			return nil, err
		}
		key := [3]int64{cfg, np, ng}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, BenchSeries{ConfigID: cfg, NPrompt: np, NGen: ng, Kind: benchfmt.KindOf(np, ng), Test: benchfmt.TestName(np, ng, 0)})
		}
		out[i].Points = append(out[i].Points, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, nil
	}
	ids := map[int64]bool{}
	for _, s := range out {
		ids[s.ConfigID] = true
	}
	cfgs, err := n.benchConfigs(ctx, ids)
	if err != nil {
		return nil, err
	}
	labels := configLabels(cfgs)
	for i := range out {
		c := cfgs[out[i].ConfigID]
		out[i].Params = c.Result
		out[i].Model = c.Result.ModelType
		out[i].Config = labels[out[i].ConfigID]
	}
	kindOrder := map[benchfmt.Kind]int{benchfmt.KindPP: 0, benchfmt.KindTG: 1, benchfmt.KindPG: 2}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.ConfigID != b.ConfigID {
			return a.ConfigID < b.ConfigID
		}
		if a.Kind != b.Kind {
			return kindOrder[a.Kind] < kindOrder[b.Kind]
		}
		if a.NPrompt != b.NPrompt {
			return a.NPrompt < b.NPrompt
		}
		return a.NGen < b.NGen
	})
	return out, nil
}

func (n *Notebook) benchConfigs(ctx context.Context, ids map[int64]bool) (map[int64]BenchConfig, error) {
	list := make([]any, 0, len(ids))
	for id := range ids {
		list = append(list, id)
	}
	rows, err := n.rdb.QueryContext(ctx, "SELECT id, "+strings.Join(configColumns, ", ")+" FROM bench_configs WHERE id IN ("+placeholders(len(list))+")", list...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]BenchConfig{}
	vals := make([]any, len(configColumns)+1)
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	row := make([]any, benchfmt.NumFields+3)
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		clear(row)
		copy(row, vals[1:])
		r, err := resultFromRow(row)
		if err != nil {
			return nil, err
		}
		r.Known &= configMask
		id := vals[0].(int64)
		out[id] = BenchConfig{ID: id, Result: r}
	}
	return out, rows.Err()
}

// configLabels names each configuration by the parameters that differ between the
// configurations of one model (model_type itself is the series' Model).
func configLabels(cfgs map[int64]BenchConfig) map[int64]string {
	byModel := map[string][]int64{}
	for id, c := range cfgs {
		byModel[c.Result.ModelType] = append(byModel[c.Result.ModelType], id)
	}
	out := map[int64]string{}
	for _, ids := range byModel {
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		var differ []benchfmt.Field
		for f := benchfmt.Field(0); f <= lastConfigField; f++ {
			if f == benchfmt.FModelType {
				continue
			}
			r0 := cfgs[ids[0]].Result
			first, _ := r0.Value(f)
			for _, id := range ids[1:] {
				r := cfgs[id].Result
				v, _ := r.Value(f)
				if fmt.Sprint(v) != fmt.Sprint(first) {
					differ = append(differ, f)
					break
				}
			}
		}
		for _, id := range ids {
			r := cfgs[id].Result
			var parts []string
			for _, f := range differ {
				v, known := r.Value(f)
				if !known {
					v = "?"
				}
				parts = append(parts, fmt.Sprintf("%s=%v", f.Name(), v))
			}
			out[id] = strings.Join(parts, " ")
		}
	}
	return out
}

// RateCell is one (slots, clients) cell of a candidate/arm: the cell generation rate is
// generated tokens of the measured requests / (last completion - first send), per pass; the
// reported Rate is the median over passes.
type RateCell struct {
	Slots, Clients int
	Rate           float64            // tokens/s, median over passes
	PassRates      map[string]float64 // pass -> rate
	PerStream      float64            // mean over requests of 1/ITL (tokens/s)
	Requests       int
	Completed      int // HTTP 200 with tokens_predicted == n_predict
}

// RateSeries is a candidate/arm's rate by slots.
type RateSeries struct {
	Candidate, Arm string
	Cells          []RateCell // by slots, then clients
}

// RateSeries returns a serving study's measured cell rates, one series per candidate and arm.
func (n *Notebook) RateSeries(ctx context.Context, studyID int64, filter LegFilter) ([]RateSeries, error) {
	where, args := filter.sql(studyID)
	q := `SELECT candidate, arm, slots, clients, pass, COALESCE(SUM(tokens_predicted), 0), MIN(t_send_ns), MAX(t_end_ns), COUNT(*),
		COALESCE(SUM(http_status = 200 AND tokens_predicted = n_predict), 0),
		AVG(CASE WHEN tokens_predicted > 1 AND t_last_ns > t_first_ns THEN (tokens_predicted - 1) * 1e9 / (t_last_ns - t_first_ns) END)
		FROM request_samples WHERE study_id = ? AND phase = 'measured'` + where + `
		GROUP BY candidate, arm, slots, clients, pass ORDER BY candidate, arm, slots, clients, pass`
	rows, err := n.rdb.QueryContext(ctx, q, append([]any{studyID}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type cellKey struct {
		cand, arm      string
		slots, clients int
	}
	var order []cellKey
	cells := map[cellKey]*RateCell{}
	streams := map[cellKey][]float64{}
	for rows.Next() {
		var k cellKey
		var pass string
		var tokens, reqs, completed int64
		var first int64
		var last sql.NullInt64
		var perStream sql.NullFloat64
		if err := rows.Scan(&k.cand, &k.arm, &k.slots, &k.clients, &pass, &tokens, &first, &last, &reqs, &completed, &perStream); err != nil {
			return nil, err
		}
		c, ok := cells[k]
		if !ok {
			c = &RateCell{Slots: k.slots, Clients: k.clients, PassRates: map[string]float64{}}
			cells[k] = c
			order = append(order, k)
		}
		if last.Valid && last.Int64 > first {
			c.PassRates[pass] = float64(tokens) / (float64(last.Int64-first) / 1e9)
		}
		c.Requests += int(reqs)
		c.Completed += int(completed)
		if perStream.Valid {
			streams[k] = append(streams[k], perStream.Float64)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []RateSeries
	for _, k := range order {
		c := cells[k]
		var rates []float64
		for _, r := range c.PassRates {
			rates = append(rates, r)
		}
		c.Rate = median(rates)
		c.PerStream = mean(streams[k])
		if len(out) == 0 || out[len(out)-1].Candidate != k.cand || out[len(out)-1].Arm != k.arm {
			out = append(out, RateSeries{Candidate: k.cand, Arm: k.arm})
		}
		out[len(out)-1].Cells = append(out[len(out)-1].Cells, *c)
	}
	return out, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var t float64
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

// SearchHit is one text search result.
type SearchHit struct {
	Kind    string // model, artefact, build, study, finding
	ID      int64  // row id (config id for models seen only in llama-bench rows)
	Title   string
	Snippet string
}

// Search finds text (case-insensitive substring) in models (artefacts and model names in
// llama-bench rows), builds, studies and findings.
func (n *Notebook) Search(ctx context.Context, text string, limit int) ([]SearchHit, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	if limit <= 0 {
		limit = 50
	}
	like := "%" + strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(text) + "%"
	const esc = ` ESCAPE '\'`
	q := `SELECT 'artefact', id, CASE WHEN name <> '' THEN name ELSE path END, path || ' ' || architecture || ' ' || quant || ' ' || source || ' ' || revision
		FROM artefacts WHERE name LIKE ?1` + esc + ` OR path LIKE ?1` + esc + ` OR architecture LIKE ?1` + esc + ` OR quant LIKE ?1` + esc + ` OR source LIKE ?1` + esc + ` OR revision LIKE ?1` + esc + `
	UNION ALL
	SELECT 'model', MIN(id), model_type, COALESCE(model_filename, '') FROM bench_configs
		WHERE model_type LIKE ?1` + esc + ` OR model_filename LIKE ?1` + esc + ` GROUP BY model_type, model_filename
	UNION ALL
	SELECT 'build', id, CASE WHEN version_line <> '' THEN version_line ELSE dir END, dir || ' ' || commit_id || ' ' || backends
		FROM builds WHERE version_line LIKE ?1` + esc + ` OR dir LIKE ?1` + esc + ` OR commit_id LIKE ?1` + esc + ` OR backends LIKE ?1` + esc + `
	UNION ALL
	SELECT 'study', id, name, kind || ' ' || status || ' ' || description FROM studies
		WHERE name LIKE ?1` + esc + ` OR description LIKE ?1` + esc + ` OR kind LIKE ?1` + esc + `
	UNION ALL
	SELECT 'finding', id, 'F' || number || ' ' || title, body FROM findings
		WHERE title LIKE ?1` + esc + ` OR body LIKE ?1` + esc + ` OR ('F' || number) = ?2 COLLATE NOCASE
	LIMIT ?3`
	rows, err := n.rdb.QueryContext(ctx, q, like, text, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SearchHit
	for rows.Next() {
		var h SearchHit
		var title, snippet sql.NullString
		if err := rows.Scan(&h.Kind, &h.ID, &title, &snippet); err != nil {
			return nil, err
		}
		h.Title, h.Snippet = title.String, snippetAround(snippet.String, text)
		out = append(out, h)
	}
	return out, rows.Err()
}

func snippetAround(s, text string) string {
	s = strings.Join(strings.Fields(s), " ")
	i := strings.Index(strings.ToLower(s), strings.ToLower(text))
	if i < 0 || len(s) <= 120 {
		if len(s) > 120 {
			return s[:120] + "…"
		}
		return s
	}
	start := max(0, i-40)
	end := min(len(s), i+len(text)+60)
	out := s[start:end]
	if start > 0 {
		out = "…" + out
	}
	if end < len(s) {
		out += "…"
	}
	return strings.ToValidUTF8(out, "")
}
