package capacity

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"
)

const (
	sha0 = "0000000000000000000000000000000000000000000000000000000000000000"
	sha1 = "1111111111111111111111111111111111111111111111111111111111111111"
)

// levelSpec describes one client level of a synthetic request file. Measured request i goes
// to client i % clients; each client sends its requests back to back, gap ms apart.
type levelSpec struct {
	clients int
	ttft    []float64 // per measured seq (ms)
	gen     []float64 // end - first token per measured seq (ms)
	gap     float64
	stagger float64          // client k sends its first request k*stagger ms after client 0
	status  map[int]int      // measured seq -> HTTP status (default 200)
	tokens  map[int]int      // measured seq -> tokens (default nPredict; 0 when status != 200)
	errs    map[int]string   // measured seq -> error text
	timings map[int]*Timings // measured seq -> server timings override
}

// uniform: every measured request has the same TTFT and E2E.
func uniform(clients, measured int, ttft, e2e, gap float64) levelSpec {
	s := levelSpec{clients: clients, gap: gap}
	for range measured {
		s.ttft = append(s.ttft, ttft)
		s.gen = append(s.gen, e2e-ttft)
	}
	return s
}

// requestFile renders a request file: header, then per level (in the given order) the
// warmups (sequential, one client) and the measured requests, lines sorted by send time.
func requestFile(t testing.TB, h RequestHeader, warmups, nPredict int, levels []levelSpec) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewRequestWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	clock := 1000.0
	for _, lv := range levels {
		var recs []RequestRecord
		for i := range warmups {
			ft := clock + lv.ttft[0]
			end := ft + lv.gen[0]
			recs = append(recs, RequestRecord{Clients: lv.clients, Phase: PhaseWarmup, Seq: i, SendMs: clock, FirstTokenMs: &ft, EndMs: end,
				Tokens: nPredict, HTTPStatus: 200, Timings: &Timings{PromptN: 100, PromptMs: lv.ttft[0] * 0.9, PredictedN: nPredict, PredictedMs: lv.gen[0] * 0.98}})
			clock = end + 10
		}
		start := clock + 50
		next := make([]float64, lv.clients)
		for k := range next {
			next[k] = start + float64(k)*lv.stagger
		}
		last := start
		for i := range lv.ttft {
			k := i % lv.clients
			send := next[k]
			ft := send + lv.ttft[i]
			end := ft + lv.gen[i]
			r := RequestRecord{Clients: lv.clients, Phase: PhaseMeasured, Seq: i, SendMs: send, FirstTokenMs: &ft, EndMs: end,
				Tokens: nPredict, HTTPStatus: 200,
				Timings: &Timings{PromptN: 100 + i%5, PromptMs: lv.ttft[i] * 0.9, PredictedN: nPredict, PredictedMs: lv.gen[i] * 0.98}}
			if st, ok := lv.status[i]; ok {
				r.HTTPStatus = st
				if st != 200 {
					r.Tokens, r.FirstTokenMs, r.Timings, r.Error = 0, nil, nil, fmt.Sprintf("HTTP %d", st)
					r.EndMs = send + lv.ttft[i]
				}
			}
			if n, ok := lv.tokens[i]; ok {
				r.Tokens = n
				if r.Timings != nil {
					r.Timings.PredictedN = n
				}
			}
			if e, ok := lv.errs[i]; ok {
				r.Error = e
			}
			if tm, ok := lv.timings[i]; ok {
				r.Timings = tm
			}
			recs = append(recs, r)
			next[k] = r.EndMs + lv.gap
			last = max(last, r.EndMs)
		}
		sort.SliceStable(recs, func(i, j int) bool { return recs[i].SendMs < recs[j].SendMs })
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		clock = last + 500
	}
	return buf.Bytes()
}

func rssTimeV(kib int64) []byte {
	return fmt.Appendf(nil, "\tCommand being timed: \"llama-server -m model.gguf --parallel 4\"\n\tUser time (seconds): 41.20\n"+
		"\tSystem time (seconds): 2.31\n\tPercent of CPU this job got: 280%%\n\tMaximum resident set size (kbytes): %d\n"+
		"\tAverage resident set size (kbytes): 0\n\tExit status: 0\n", kib)
}

func rssRecord(kib int64) []byte {
	return fmt.Appendf(nil, "{\"schema\":%q,\"vmhwm_kib\":%d,\"source\":\"/proc/4242/status\"}\n", SchemaRSS, kib)
}

// serverLog is a llama-server log at -lv 4 with the default two loads (dry fitting pass, then
// the real load); firstExtra and lastExtra are lines added to each load block.
func serverLog(firstExtra, lastExtra []string) []byte {
	var b strings.Builder
	b.WriteString("0.00.003.828 I srv  llama_server: initializing ...\n")
	b.WriteString("0.00.048.274 I srv    load_model: loading model '/srv/models/model.gguf'\n")
	b.WriteString("0.00.048.381 I cmn  common_init_: fitting params to device memory ...\n")
	b.WriteString("0.00.048.949 I llama_model_loader: loaded meta data with 17 key-value pairs and 21 tensors from /srv/models/model.gguf (version GGUF V3 (latest))\n")
	b.WriteString("0.00.050.852 I load_tensors: loading model tensors, this can take a while... (load_mode = none)\n")
	for _, l := range firstExtra {
		b.WriteString("0.00.053.100 I load_tensors: " + l + "\n")
	}
	b.WriteString("0.00.053.144 I load_tensors:          CPU model buffer size =     0.00 MiB\n")
	b.WriteString("0.00.057.223 I common_fit_params: successfully fit params to free device memory\n")
	b.WriteString("0.00.059.707 I llama_model_loader: loaded meta data with 17 key-value pairs and 21 tensors from /srv/models/model.gguf (version GGUF V3 (latest))\n")
	b.WriteString("0.00.065.512 I load_tensors: loading model tensors, this can take a while... (load_mode = mmap)\n")
	for _, l := range lastExtra {
		b.WriteString("0.00.065.700 I load_tensors: " + l + "\n")
	}
	b.WriteString("0.00.065.776 I load_tensors:   CPU_Mapped model buffer size =   812.63 MiB\n")
	b.WriteString("0.00.066.030 I llama_context: constructing llama_context\n")
	b.WriteString("0.00.328.614 I srv  llama_server: model loaded\n")
	b.WriteString("0.00.328.665 I srv  llama_server: listening on http://127.0.0.1:18080\n")
	return []byte(b.String())
}

// smallPlan: candidates a and b, slots {1,2}, clients {1,2}, two passes, generous limits.
func smallPlan() *Plan {
	p := &Plan{
		Schema: SchemaCapacity, Name: "small",
		Candidates: []Candidate{
			{ID: "a", Label: "A", Model: FileRef{"a.gguf", sha0}, ServerFlags: []string{"-t", "4", "-lv", "4"}},
			{ID: "b", Label: "B", Model: FileRef{"b.gguf", sha1}, ServerFlags: []string{"-t", "4", "-lv", "4"}},
		},
		Slots: []int{1, 2}, Clients: []int{1, 2},
		PromptPlan: FileRef{"prompts.json", sha0},
		Limits:     Limits{TTFTMsP95Max: 1000, E2EMsP95Max: 5000, PeakRSSMiBMax: 4096},
	}
	p.Defaults()
	return p
}

// spec gives the client levels of one server lifetime.
type spec func(k LifetimeKey) []levelSpec

// fixture renders every input of a plan: request files from levels, RSS (in KiB) from rss,
// server logs from logs (nil: a plain two-load log).
type fixture struct {
	levels spec
	rss    func(k LifetimeKey) []byte
	logs   func(k LifetimeKey) []byte
}

// okLevels: every level passes the small plan's gates; rate = 8*64 / (4*1000 + 3*gap) etc.
func okLevels(p *Plan) spec {
	return func(k LifetimeKey) []levelSpec {
		var out []levelSpec
		for _, c := range p.ClientLevels(k.Slots) {
			out = append(out, uniform(c, p.Measured, 200, 1000, 0))
		}
		return out
	}
}

func (f fixture) inputs(t testing.TB, p *Plan) Inputs {
	t.Helper()
	in := Inputs{Requests: map[LifetimeKey]InputFile{}, RSS: map[LifetimeKey]InputFile{}, ServerLogs: map[LifetimeKey]InputFile{}}
	for _, pass := range p.Passes {
		for _, c := range p.Candidates {
			for _, s := range p.Slots {
				k := LifetimeKey{pass, c.ID, s}
				levels := okLevels(p)(k)
				if f.levels != nil {
					levels = f.levels(k)
				}
				in.Requests[k] = InputFile{"req/" + k.String() + ".jsonl",
					requestFile(t, RequestHeader{Pass: pass, Candidate: c.ID, Slots: s}, p.WarmupCount(), p.NPredict, levels)}
				rss := rssTimeV(1024 * 1024)
				if f.rss != nil {
					rss = f.rss(k)
				}
				in.RSS[k] = InputFile{"rss/" + k.String() + ".txt", rss}
				log := serverLog(nil, nil)
				if f.logs != nil {
					log = f.logs(k)
				}
				in.ServerLogs[k] = InputFile{"log/" + k.String() + ".log", log}
			}
		}
	}
	return in
}

func mustAssemble(t testing.TB, p *Plan, in Inputs) Result {
	t.Helper()
	r, err := Assemble(p, in)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func cellOf(t testing.TB, r Result, cand string, slots, clients int) CellResult {
	t.Helper()
	for _, c := range r.Candidates {
		if c.ID != cand {
			continue
		}
		if cell := findCell(c.Cells, slots, clients); cell != nil {
			return *cell
		}
	}
	t.Fatalf("no cell %s P%d/C%d", cand, slots, clients)
	return CellResult{}
}

func candOf(t testing.TB, r Result, id string) CandidateResult {
	t.Helper()
	for _, c := range r.Candidates {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no candidate %s", id)
	return CandidateResult{}
}
