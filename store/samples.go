package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"sparkbench/runner/benchfmt"
)

// benchConfig is the configuration part of a llama-bench row (fields build_commit …
// fit_min_ctx) plus which of them are known; rows of one leg share it, so it is stored once.
type benchConfig struct {
	known                                                   benchfmt.FieldSet
	buildCommit, cpuInfo, gpuInfo, backends, modelFilename  string
	modelType, cpuMask, typeK, typeV, splitMode, devices    string
	tensorSplit, tensorBuftOverrides, loadMode, lazyMode    string
	buildNumber, modelSize, modelNParams, nBatch, nUbatch   int64
	nThreads, poll, nGPULayers, nCPUMoE, mainGPU, flashAttn int64
	noOpOffload, fitTarget, fitMinCtx                       int64
	cpuStrict, noKVOffload, embeddings, noHost, repack      bool
}

// lastConfigField is the last field stored in bench_configs; the fields after it are per row.
const lastConfigField = benchfmt.FFitMinCtx

const configMask = benchfmt.FieldSet(1)<<(lastConfigField+1) - 1

func configOf(r *benchfmt.Result) benchConfig {
	return benchConfig{
		known:       r.Known & configMask,
		buildCommit: r.BuildCommit, cpuInfo: r.CPUInfo, gpuInfo: r.GPUInfo, backends: r.Backends,
		modelFilename: r.ModelFilename, modelType: r.ModelType, cpuMask: r.CPUMask, typeK: r.TypeK,
		typeV: r.TypeV, splitMode: r.SplitMode, devices: r.Devices, tensorSplit: r.TensorSplit,
		tensorBuftOverrides: r.TensorBuftOverrides, loadMode: r.LoadMode, lazyMode: r.LazyMode,
		buildNumber: r.BuildNumber, modelSize: r.ModelSize, modelNParams: r.ModelNParams,
		nBatch: r.NBatch, nUbatch: r.NUbatch, nThreads: r.NThreads, poll: r.Poll,
		nGPULayers: r.NGPULayers, nCPUMoE: r.NCPUMoE, mainGPU: r.MainGPU, flashAttn: r.FlashAttn,
		noOpOffload: r.NoOpOffload, fitTarget: r.FitTarget, fitMinCtx: r.FitMinCtx,
		cpuStrict: r.CPUStrict, noKVOffload: r.NoKVOffload, embeddings: r.Embeddings,
		noHost: r.NoHost, repack: r.Repack,
	}
}

// result is the configuration as a Result (test and measurement fields unknown).
func (c benchConfig) result() benchfmt.Result {
	return benchfmt.Result{
		Known:       c.known,
		BuildCommit: c.buildCommit, CPUInfo: c.cpuInfo, GPUInfo: c.gpuInfo, Backends: c.backends,
		ModelFilename: c.modelFilename, ModelType: c.modelType, CPUMask: c.cpuMask, TypeK: c.typeK,
		TypeV: c.typeV, SplitMode: c.splitMode, Devices: c.devices, TensorSplit: c.tensorSplit,
		TensorBuftOverrides: c.tensorBuftOverrides, LoadMode: c.loadMode, LazyMode: c.lazyMode,
		BuildNumber: c.buildNumber, ModelSize: c.modelSize, ModelNParams: c.modelNParams,
		NBatch: c.nBatch, NUbatch: c.nUbatch, NThreads: c.nThreads, Poll: c.poll,
		NGPULayers: c.nGPULayers, NCPUMoE: c.nCPUMoE, MainGPU: c.mainGPU, FlashAttn: c.flashAttn,
		NoOpOffload: c.noOpOffload, FitTarget: c.fitTarget, FitMinCtx: c.fitMinCtx,
		CPUStrict: c.cpuStrict, NoKVOffload: c.noKVOffload, Embeddings: c.embeddings,
		NoHost: c.noHost, Repack: c.repack,
	}
}

var configColumns = func() []string {
	var out []string
	for f := benchfmt.Field(0); f <= lastConfigField; f++ {
		out = append(out, f.Name())
	}
	return out
}()

// sqlValue converts a known field's value for SQLite (bools as 0/1); unknown is NULL.
func sqlValue(r *benchfmt.Result, f benchfmt.Field) any {
	v, known := r.Value(f)
	if !known {
		return nil
	}
	if b, ok := v.(bool); ok {
		if b {
			return int64(1)
		}
		return int64(0)
	}
	return v
}

// pendingBench is a row ready for INSERT: encoded by the caller's goroutine (AddBench), so
// the writer goroutine only binds and steps.
type pendingBench struct {
	legID, studyID, seq int64
	cfg                 benchConfig
	known               benchfmt.FieldSet
	nPrompt, nGen       int64
	nDepth              int64
	avgNs, stddevNs     int64
	avgTs, stddevTs     float64
	testTime            string
	samplesNs           string
	samplesTs           string
	extra               string
	line                int64
}

func newPendingBench(legID, studyID, seq int64, r *benchfmt.Result, buf []byte) (pendingBench, []byte, error) {
	p := pendingBench{legID: legID, studyID: studyID, seq: seq, cfg: configOf(r), known: r.Known,
		nPrompt: r.NPrompt, nGen: r.NGen, nDepth: r.NDepth, avgNs: r.AvgNs, stddevNs: r.StddevNs,
		avgTs: r.AvgTs, stddevTs: r.StddevTs, testTime: r.TestTime, line: int64(r.Line)}
	if math.IsNaN(p.avgTs) || math.IsInf(p.avgTs, 0) {
		p.known &^= 1 << benchfmt.FAvgTs
	}
	if math.IsNaN(p.stddevTs) || math.IsInf(p.stddevTs, 0) {
		p.known &^= 1 << benchfmt.FStddevTs
	}
	if r.Known.Has(benchfmt.FSamplesNs) {
		buf = appendInts(buf[:0], r.SamplesNs)
		p.samplesNs = string(buf)
	}
	if r.Known.Has(benchfmt.FSamplesTs) {
		for _, x := range r.SamplesTs {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return p, buf, fmt.Errorf("leg %d row %d: samples_ts holds %v", legID, seq, x)
			}
		}
		buf = appendFloats(buf[:0], r.SamplesTs)
		p.samplesTs = string(buf)
	}
	if len(r.Extra) > 0 {
		b, err := CanonicalJSON(r.Extra)
		if err != nil {
			return p, buf, fmt.Errorf("leg %d row %d: extra fields: %w", legID, seq, err)
		}
		p.extra = string(b)
	}
	return p, buf, nil
}

// known-or-NULL helpers for the row's own fields
func (p *pendingBench) int(f benchfmt.Field, v int64) any {
	if p.known.Has(f) {
		return v
	}
	return nil
}

func (p *pendingBench) float(f benchfmt.Field, v float64) any {
	if p.known.Has(f) {
		return v
	}
	return nil
}

func (p *pendingBench) text(f benchfmt.Field, v string) any {
	if p.known.Has(f) {
		return v
	}
	return nil
}

const benchInsertCols = "leg_id, study_id, seq, config_id, n_prompt, n_gen, n_depth, test_time, avg_ns, stddev_ns, avg_ts, stddev_ts, samples_ns, samples_ts, extra_json, known_mask, source_line"

const benchColsPerRow = 17

// benchRowsPerStmt rows go into one multi-row INSERT: fewer cgo round trips per row.
const benchRowsPerStmt = 32

func benchInsertSQL(rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO bench_samples (" + benchInsertCols + ") VALUES ")
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", benchColsPerRow), ",") + ")"
	for i := 0; i < rows; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(one)
	}
	return b.String()
}

var (
	benchInsertMulti  = benchInsertSQL(benchRowsPerStmt)
	benchInsertSingle = benchInsertSQL(1)
)

// insertBench writes bench rows, resolving (and caching) their configuration ids.
func insertBench(tx *sql.Tx, cache map[benchConfig]int64, rows []pendingBench) error {
	if len(rows) == 0 {
		return nil
	}
	var multi, single *sql.Stmt
	defer func() {
		if multi != nil {
			multi.Close()
		}
		if single != nil {
			single.Close()
		}
	}()
	args := make([]any, 0, benchColsPerRow*benchRowsPerStmt)
	var last *benchConfig
	lastID := int64(-1)
	var series seriesBatch
	var ids [benchRowsPerStmt]int64
	for i := 0; i < len(rows); {
		k := len(rows) - i
		if k >= benchRowsPerStmt {
			k = benchRowsPerStmt
		} else {
			k = 1
		}
		args = args[:0]
		for j := i; j < i+k; j++ {
			p := &rows[j]
			id := lastID
			if last == nil || p.cfg != *last {
				var err error
				if id, err = configID(tx, cache, p.cfg); err != nil {
					return err
				}
				last, lastID = &p.cfg, id
			}
			ids[j-i] = id
			var extra, line any
			if p.extra != "" {
				extra = p.extra
			}
			if p.line > 0 {
				line = p.line
			}
			args = append(args, p.legID, p.studyID, p.seq, id,
				p.int(benchfmt.FNPrompt, p.nPrompt), p.int(benchfmt.FNGen, p.nGen), p.int(benchfmt.FNDepth, p.nDepth),
				p.text(benchfmt.FTestTime, p.testTime), p.int(benchfmt.FAvgNs, p.avgNs), p.int(benchfmt.FStddevNs, p.stddevNs),
				p.float(benchfmt.FAvgTs, p.avgTs), p.float(benchfmt.FStddevTs, p.stddevTs),
				p.text(benchfmt.FSamplesNs, p.samplesNs), p.text(benchfmt.FSamplesTs, p.samplesTs), extra, int64(p.known), line)
		}
		var stmt *sql.Stmt
		var err error
		if k == benchRowsPerStmt {
			if multi == nil {
				if multi, err = tx.Prepare(benchInsertMulti); err != nil {
					return err
				}
			}
			stmt = multi
		} else {
			if single == nil {
				if single, err = tx.Prepare(benchInsertSingle); err != nil {
					return err
				}
			}
			stmt = single
		}
		if _, err := stmt.Exec(args...); err != nil {
			return fmt.Errorf("insert bench rows of leg %d: %w", rows[i].legID, err)
		}
		for j := i; j < i+k; j++ {
			series.add(&rows[j], ids[j-i])
		}
		i += k
	}
	return series.flush(tx)
}

type seriesKey struct{ study, leg, config, nPrompt, nGen, nDepth int64 }

type seriesAgg struct {
	n, nSD               int64
	sum, min, max, sumSD float64
}

// seriesBatch aggregates a batch's rows per bench_series key.
type seriesBatch struct {
	keys []seriesKey
	aggs map[seriesKey]*seriesAgg
}

func (s *seriesBatch) add(p *pendingBench, config int64) {
	if !p.known.Has(benchfmt.FAvgTs) {
		return
	}
	k := seriesKey{p.studyID, p.legID, config, p.nPrompt, p.nGen, p.nDepth}
	if s.aggs == nil {
		s.aggs = map[seriesKey]*seriesAgg{}
	}
	a, ok := s.aggs[k]
	if !ok {
		a = &seriesAgg{min: p.avgTs, max: p.avgTs}
		s.aggs[k] = a
		s.keys = append(s.keys, k)
	}
	a.n++
	a.sum += p.avgTs
	a.min = math.Min(a.min, p.avgTs)
	a.max = math.Max(a.max, p.avgTs)
	if p.known.Has(benchfmt.FStddevTs) {
		a.nSD++
		a.sumSD += p.stddevTs
	}
}

func (s *seriesBatch) flush(tx *sql.Tx) error {
	if len(s.keys) == 0 {
		return nil
	}
	stmt, err := tx.Prepare(`INSERT INTO bench_series (study_id, leg_id, config_id, n_prompt, n_gen, n_depth, n, sum_ts, min_ts, max_ts, n_sd, sum_sd)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (study_id, leg_id, config_id, n_prompt, n_gen, n_depth) DO UPDATE SET
		n = n + excluded.n, sum_ts = sum_ts + excluded.sum_ts, min_ts = min(min_ts, excluded.min_ts),
		max_ts = max(max_ts, excluded.max_ts), n_sd = n_sd + excluded.n_sd, sum_sd = sum_sd + excluded.sum_sd`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, k := range s.keys {
		a := s.aggs[k]
		if _, err := stmt.Exec(k.study, k.leg, k.config, k.nPrompt, k.nGen, k.nDepth, a.n, a.sum, a.min, a.max, a.nSD, a.sumSD); err != nil {
			return fmt.Errorf("update bench series: %w", err)
		}
	}
	return nil
}

func appendInts(b []byte, v []int64) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return append(b, ']')
}

func appendFloats(b []byte, v []float64) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFloat(b, x) // callers pass finite values

	}
	return append(b, ']')
}

// configID finds or creates the bench_configs row for cfg.
func configID(tx *sql.Tx, cache map[benchConfig]int64, cfg benchConfig) (int64, error) {
	if id, ok := cache[cfg]; ok {
		return id, nil
	}
	r := cfg.result()
	m := map[string]any{}
	vals := make([]any, 0, len(configColumns)+1)
	for f := benchfmt.Field(0); f <= lastConfigField; f++ {
		v := sqlValue(&r, f)
		vals = append(vals, v)
		if v != nil {
			m[f.Name()] = v
		}
	}
	canon, err := CanonicalJSON(m)
	if err != nil {
		return 0, err
	}
	key := SHA256Hex(canon)
	var id int64
	err = tx.QueryRow("SELECT id FROM bench_configs WHERE key_sha256 = ?", key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		q := "INSERT INTO bench_configs (key_sha256, " + strings.Join(configColumns, ", ") + ") VALUES (?" + strings.Repeat(", ?", len(configColumns)) + ")"
		res, err := tx.Exec(q, append([]any{key}, vals...)...)
		if err != nil {
			return 0, fmt.Errorf("insert bench configuration: %w", err)
		}
		id, err = res.LastInsertId()
		if err != nil {
			return 0, err
		}
	} else if err != nil {
		return 0, err
	}
	cache[cfg] = id
	return id, nil
}

// Request phases.
const (
	PhaseWarmup   = "warmup"
	PhaseMeasured = "measured"
	PhaseQuality  = "quality"
)

const requestCols = "leg_id, study_id, seq, candidate, arm, slots, clients, pass, phase, req_index, client_index, t_send_ns, t_first_ns, t_last_ns, t_end_ns, http_status, n_predict, tokens_predicted, tokens_evaluated, stop_type, prompt_ms, predicted_ms, predicted_per_second, error, extra_json"

type pendingChunk struct {
	legID, seq int64
	raw        int64
	data       []byte // gzip
}

func insertChunks(tx *sql.Tx, chunks []pendingChunk) error {
	for _, c := range chunks {
		if _, err := tx.Exec("INSERT INTO transcript_chunks (leg_id, seq, codec, raw_bytes, data) VALUES (?, ?, 'gzip', ?, ?)",
			c.legID, c.seq, c.raw, c.data); err != nil {
			return fmt.Errorf("insert transcript of leg %d: %w", c.legID, err)
		}
	}
	return nil
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// SampleWriter records a running leg's samples and transcript. Adds return at once; rows are
// committed by the writer goroutine in batches (see Options.FlushInterval). It is safe for
// concurrent use.
type SampleWriter struct {
	n       *Notebook
	leg     int64
	study   int64
	mu      sync.Mutex
	bench   int64 // next seq
	request int64
	chunk   int64
}

// SampleWriter returns a writer for an existing running leg (StartLeg returns one too).
func (n *Notebook) SampleWriter(ctx context.Context, legID int64) (*SampleWriter, error) {
	if n.readOnly {
		return nil, ErrReadOnly
	}
	sw := &SampleWriter{n: n, leg: legID}
	err := n.write(ctx, func(tx *sql.Tx) error {
		var state string
		if err := tx.QueryRow("SELECT study_id, state FROM legs WHERE id = ?", legID).Scan(&sw.study, &state); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("leg %d does not exist", legID)
			}
			return err
		}
		if state != LegRunning {
			return fmt.Errorf("leg %d is %s: only a running leg takes samples", legID, state)
		}
		for _, q := range []struct {
			sql string
			dst *int64
		}{
			{"SELECT COALESCE(MAX(seq) + 1, 0) FROM bench_samples WHERE leg_id = ?", &sw.bench},
			{"SELECT COALESCE(MAX(seq) + 1, 0) FROM request_samples WHERE leg_id = ?", &sw.request},
			{"SELECT COALESCE(MAX(seq) + 1, 0) FROM transcript_chunks WHERE leg_id = ?", &sw.chunk},
		} {
			if err := tx.QueryRow(q.sql, legID).Scan(q.dst); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sw, nil
}

// Leg is the leg's id.
func (sw *SampleWriter) Leg() int64 { return sw.leg }

// AddBench queues llama-bench rows.
func (sw *SampleWriter) AddBench(rows ...benchfmt.Result) error {
	if err := sw.n.w.legErr(sw.leg); err != nil {
		return err
	}
	p := make([]pendingBench, len(rows))
	var buf []byte
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for i := range rows {
		var err error
		if p[i], buf, err = newPendingBench(sw.leg, sw.study, sw.bench+int64(i), &rows[i], buf); err != nil {
			return err
		}
	}
	sw.bench += int64(len(rows))
	return sw.n.w.send(context.Background(), writeReq{bench: p})
}

// AddRequests queues server request records.
func (sw *SampleWriter) AddRequests(recs ...RequestRecord) error {
	if err := sw.n.w.legErr(sw.leg); err != nil {
		return err
	}
	for _, r := range recs {
		switch r.Phase {
		case PhaseWarmup, PhaseMeasured, PhaseQuality:
		default:
			return fmt.Errorf("request record: phase %q is not warmup, measured or quality", r.Phase)
		}
		if r.TSend.IsZero() {
			return errors.New("request record: TSend (when the request was sent) is required")
		}
	}
	p := make([]pendingRequest, len(recs))
	sw.mu.Lock()
	for i := range recs {
		p[i] = pendingRequest{legID: sw.leg, studyID: sw.study, seq: sw.request, r: recs[i]}
		sw.request++
	}
	err := sw.n.w.send(context.Background(), writeReq{reqs: p})
	sw.mu.Unlock()
	return err
}

// AddTranscript queues a piece of the verbatim transcript (stored gzip-compressed).
func (sw *SampleWriter) AddTranscript(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := sw.n.w.legErr(sw.leg); err != nil {
		return err
	}
	c := pendingChunk{legID: sw.leg, raw: int64(len(b)), data: gzipBytes(b)}
	sw.mu.Lock()
	c.seq = sw.chunk
	sw.chunk++
	err := sw.n.w.send(context.Background(), writeReq{chunk: &c})
	sw.mu.Unlock()
	return err
}

// Flush waits until everything added so far is committed, and reports any commit failure of
// this leg's samples.
func (sw *SampleWriter) Flush(ctx context.Context) error { return sw.n.w.flushLeg(ctx, sw.leg) }

// The columns hashed into a leg's sample digest, in order. Never change these lists: digests
// recorded in the journal depend on them.
const (
	benchDigestCols   = "seq, build_commit, build_number, cpu_info, gpu_info, backends, model_filename, model_type, model_size, model_n_params, n_batch, n_ubatch, n_threads, cpu_mask, cpu_strict, poll, type_k, type_v, n_gpu_layers, n_cpu_moe, split_mode, main_gpu, no_kv_offload, flash_attn, devices, tensor_split, tensor_buft_overrides, load_mode, lazy_mode, embeddings, no_op_offload, no_host, repack, fit_target, fit_min_ctx, n_prompt, n_gen, n_depth, test_time, avg_ns, stddev_ns, avg_ts, stddev_ts, samples_ns, samples_ts, extra_json, known_mask"
	requestDigestCols = "seq, candidate, arm, slots, clients, pass, phase, req_index, client_index, t_send_ns, t_first_ns, t_last_ns, t_end_ns, http_status, n_predict, tokens_predicted, tokens_evaluated, stop_type, prompt_ms, predicted_ms, predicted_per_second, error, extra_json"
)
