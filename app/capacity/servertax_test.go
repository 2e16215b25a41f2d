package capacity

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// batchedMD is llama-batched-bench's Markdown output (the shape of
// runner/benchfmt/testdata/batched-md.stdout) with hand-picked times: PP 32, TG 8, B 1, 2, 4;
// T = 0.100, 0.080 and 0.200 s, so B×TG/T = 80, 200 and 160 tok/s. The rest is coherent:
// T = T_PP + T_TG, S_PP = B×PP/T_PP, S_TG = B×TG/T_TG, S = N_KV/T.
const batchedMD = `llama_batched_bench: n_kv_max = 1024, n_batch = 2048, n_ubatch = 512, flash_attn = -1, is_pp_shared = 0, is_tg_separate = 0, n_gpu_layers = -1, n_threads = 1, n_threads_batch = 1

|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|
|    32 |      8 |    1 |     40 |    0.060 |   533.33 |    0.040 |   200.00 |    0.100 |   400.00 |
|    32 |      8 |    2 |     80 |    0.050 |  1280.00 |    0.030 |   533.33 |    0.080 |  1000.00 |
|    32 |      8 |    4 |    160 |    0.120 |  1066.67 |    0.080 |   400.00 |    0.200 |   800.00 |
`

// batchedJSONL is the same B=1 and B=2 rows as --output-format jsonl prints them.
const batchedJSONL = `{"n_kv_max": 1024, "n_batch": 2048, "n_ubatch": 512, "flash_attn": -1, "is_pp_shared": 0, "n_gpu_layers": -1, "n_threads": 1, "n_threads_batch": 1, "pp": 32, "tg": 8, "pl": 1, "n_kv": 40, "t_pp": 0.060000, "speed_pp": 533.333313, "t_tg": 0.040000, "speed_tg": 200.000000, "t": 0.100000, "speed": 400.000000}
{"n_kv_max": 1024, "n_batch": 2048, "n_ubatch": 512, "flash_attn": -1, "is_pp_shared": 0, "n_gpu_layers": -1, "n_threads": 1, "n_threads_batch": 1, "pp": 32, "tg": 8, "pl": 2, "n_kv": 80, "t_pp": 0.050000, "speed_pp": 1280.000000, "t_tg": 0.030000, "speed_tg": 533.333313, "t": 0.080000, "speed": 1000.000000}
`

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestServerTaxHandWorked: the small plan's cells run 64c tok/s at C clients (8 requests of
// 64 tokens, each client's requests back to back, 1000 ms each: 512 tokens over 8000/c ms),
// so P1/C1 = 64 and P2/C2 = 128 tok/s. Against B×TG/T = 80 (B=1) and 200 (B=2) the server tax
// is 64/80 = 0.8 and 128/200 = 0.64; B=4 has no diagonal cell and is left unpaired, with a
// note. Markdown and jsonl give the same series; the file is fingerprinted as role "batched".
func TestServerTaxHandWorked(t *testing.T) {
	p := smallPlan()
	for _, tc := range []struct {
		name, file, data, format, note string
	}{
		{"md", "batched-a.md", batchedMD, "batched-md", "not paired: B=4 (no cell P4/C4 in the study)"},
		{"jsonl", "batched-a.jsonl", batchedJSONL, "batched-jsonl", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := fixture{}.inputs(t, p)
			in.Batched = map[string]InputFile{"a": {tc.file, []byte(tc.data)}}
			r := mustAssemble(t, p, in)
			if got := *cellOf(t, r, "a", 1, 1).GenerationRate; !near(got, 64) {
				t.Fatalf("P1/C1 rate %v, want 64 (hand-worked)", got)
			}
			if got := *cellOf(t, r, "a", 2, 2).GenerationRate; !near(got, 128) {
				t.Fatalf("P2/C2 rate %v, want 128 (hand-worked)", got)
			}
			st := candOf(t, r, "a").ServerTax
			if st == nil {
				t.Fatal("candidate a has no server tax")
			}
			if st.PP != 32 || st.TG != 8 || st.Format != tc.format || st.Note != tc.note {
				t.Errorf("server tax header %+v, want PP 32, TG 8, %s, note %q", st, tc.format, tc.note)
			}
			want := []ServerTaxPoint{{B: 1, ServerRate: 64, BatchedRate: 80, Tax: 0.8}, {B: 2, ServerRate: 128, BatchedRate: 200, Tax: 0.64}}
			if len(st.Points) != len(want) {
				t.Fatalf("points %+v, want %+v", st.Points, want)
			}
			for i, w := range want {
				g := st.Points[i]
				if g.B != w.B || !near(g.ServerRate, w.ServerRate) || !near(g.BatchedRate, w.BatchedRate) || !near(g.Tax, w.Tax) || g.Line == 0 {
					t.Errorf("point %d = %+v, want %+v (and the row's line)", i, g, w)
				}
			}
			if tc.name == "md" && (st.Points[0].Line != 5 || st.Points[1].Line != 6) {
				t.Errorf("lines %d, %d, want 5 and 6", st.Points[0].Line, st.Points[1].Line)
			}
			if candOf(t, r, "b").ServerTax != nil {
				t.Error("candidate b has a server tax without a --batched file")
			}
			var ref *InputRef
			for i := range r.Inputs {
				if r.Inputs[i].Role == "batched" {
					ref = &r.Inputs[i]
				}
			}
			if ref == nil || ref.Key != "a" || ref.Bytes != len(tc.data) || len(ref.SHA256) != 64 {
				t.Errorf("batched input ref %+v", ref)
			}
			if !strings.Contains(r.Definitions["server_tax"], "B×TG / T") {
				t.Errorf("definitions lack server_tax: %q", r.Definitions["server_tax"])
			}
		})
	}
}

// TestServerTaxLeavesTheRestAlone: without --batched the result has no server tax and no
// server_tax definition (studies without the input stay byte-identical); with it, only the
// candidate's server_tax, the definitions and the inputs change.
func TestServerTaxLeavesTheRestAlone(t *testing.T) {
	p := smallPlan()
	in := fixture{}.inputs(t, p)
	plain := mustAssemble(t, p, in)
	pb, err := plain.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pb), "server_tax") {
		t.Fatal("a study without --batched mentions server_tax")
	}
	in.Batched = map[string]InputFile{"b": {"b.md", []byte(batchedMD)}}
	with := mustAssemble(t, p, in)
	wb, err := with.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	strip := func(b []byte) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "definitions")
		delete(m, "inputs")
		for _, c := range m["candidates"].([]any) {
			delete(c.(map[string]any), "server_tax")
		}
		return m
	}
	if !reflect.DeepEqual(strip(pb), strip(wb)) {
		t.Error("--batched changed more than server_tax, definitions and inputs")
	}
	if len(with.Inputs) != len(plain.Inputs)+1 || len(with.Definitions) != len(plain.Definitions)+1 {
		t.Errorf("inputs %d → %d, definitions %d → %d: want one more of each", len(plain.Inputs), len(with.Inputs), len(plain.Definitions), len(with.Definitions))
	}
	if _, ok := definitions["server_tax"]; ok {
		t.Error("the shared definitions map was changed")
	}
	r2 := mustAssemble(t, p, in)
	again, _ := r2.Marshal()
	if string(again) != string(wb) {
		t.Error("the same inputs assembled to different bytes")
	}
}

// TestServerTaxNoDiagonal: a batched file whose B values miss every diagonal cell pairs
// nothing: an empty series with a note, not an error.
func TestServerTaxNoDiagonal(t *testing.T) {
	p := smallPlan()
	in := fixture{}.inputs(t, p)
	only4 := strings.Replace(strings.Replace(batchedMD, "|    32 |      8 |    1 |     40 |    0.060 |   533.33 |    0.040 |   200.00 |    0.100 |   400.00 |\n", "", 1),
		"|    32 |      8 |    2 |     80 |    0.050 |  1280.00 |    0.030 |   533.33 |    0.080 |  1000.00 |\n", "", 1)
	in.Batched = map[string]InputFile{"a": {"b4.md", []byte(only4)}}
	st := candOf(t, mustAssemble(t, p, in), "a").ServerTax
	if st == nil || len(st.Points) != 0 || st.Note != "no B of the batched-bench file has a diagonal cell P = C = B with a rate; not paired: B=4 (no cell P4/C4 in the study)" {
		t.Errorf("server tax %+v", st)
	}
}

// TestServerTaxInputErrors: each bad --batched input is an *InputError naming the flag, the
// candidate and, for a bad row, file:line.
func TestServerTaxInputErrors(t *testing.T) {
	p := smallPlan()
	rows := strings.SplitAfter(batchedMD, "\n")
	// rows[4..6] are the table rows (lines 5-7)
	morePP := strings.Join(rows[:5], "") + "|    64 |      8 |    2 |    144 |    0.050 |  2560.00 |    0.030 |   533.33 |    0.080 |  1800.00 |\n"
	moreTG := strings.Join(rows[:5], "") + "|    32 |     16 |    2 |     96 |    0.050 |  1280.00 |    0.030 |  1066.67 |    0.080 |  1200.00 |\n"
	dupB := strings.Join(rows[:6], "") + rows[5]
	badRow := strings.Join(rows[:5], "") + "|    32 |      8 |    2 |     81 |    0.050 |  1280.00 |    0.030 |   533.33 |    0.080 |  1000.00 |\n"
	for _, tc := range []struct {
		name string
		in   map[string]InputFile
		want string
	}{
		{"not a candidate", map[string]InputFile{"c": {"c.md", []byte(batchedMD)}}, "--batched c: not a candidate of this plan (a, b)"},
		{"not batched-bench output", map[string]InputFile{"a": {"x.txt", []byte("hello\nworld\n")}}, "--batched a: x.txt:1: no llama-batched-bench table (| PP | TG | B | N_KV | …) or jsonl rows in the file"},
		{"several PP", map[string]InputFile{"a": {"pp.md", []byte(morePP)}}, "--batched a: pp.md:6: PP 64, but line 5 has PP 32: the server tax pairs one prompt length; run llama-batched-bench with one -npp, the plan's prompt length"},
		{"several TG", map[string]InputFile{"a": {"tg.md", []byte(moreTG)}}, "--batched a: tg.md:6: TG 16, but line 5 has TG 8: the server tax pairs one generation length; run llama-batched-bench with one -ntg, the plan's n_predict"},
		{"B twice", map[string]InputFile{"a": {"dup.md", []byte(dupB)}}, "--batched a: dup.md:7: B 2 again (first at line 6): give one llama-batched-bench run per file"},
		{"bad row", map[string]InputFile{"a": {"row.md", []byte(badRow)}}, "--batched a: row.md:6: "},
		{"bad jsonl", map[string]InputFile{"b": {"j.jsonl", []byte(`{"pp": 32, "tg": 8}` + "\n")}}, "--batched b: j.jsonl:1: no \"pl\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := fixture{}.inputs(t, p)
			in.Batched = tc.in
			_, err := Assemble(p, in)
			var ie *InputError
			if !errors.As(err, &ie) || ie.Flag != FlagBatched {
				t.Fatalf("err = %v, want an InputError for %s", err, FlagBatched)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %q\nwant prefix %q", err, tc.want)
			}
		})
	}
}
