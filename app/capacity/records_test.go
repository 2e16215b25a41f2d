package capacity

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

const hdr = `{"schema":"sparkbench.requests/v1","pass":"forward","candidate":"a","slots":1}` + "\n"
const okLine = `{"clients":1,"phase":"measured","seq":0,"send_ms":0,"first_token_ms":10,"end_ms":100,"tokens":64,"http_status":200,"timings":null}` + "\n"

func TestReadRequestsRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"empty", "", "r.jsonl:1: empty file"},
		{"no header", okLine, `r.jsonl:1:`},
		{"no header hint", okLine, "the first line is the header"},
		{"header schema", `{"schema":"x","pass":"forward","candidate":"a","slots":1}` + "\n", `r.jsonl:1: header schema "x"`},
		{"header pass", `{"schema":"sparkbench.requests/v1","pass":"up","candidate":"a","slots":1}` + "\n", `header pass "up"`},
		{"header slots", `{"schema":"sparkbench.requests/v1","pass":"forward","candidate":"a","slots":0}` + "\n", "header slots 0"},
		{"unknown field", hdr + okLine + `{"clients":1,"phase":"measured","seq":1,"send":0}` + "\n", `r.jsonl:3:`},
		{"unknown field name", hdr + `{"clients":1,"phase":"measured","seq":1,"send":0}` + "\n", `unknown field "send"; check its spelling against docs/requests.md`},
		{"missing fields", hdr + `{"clients":1,"phase":"measured","seq":1}` + "\n", "r.jsonl:2: missing send_ms, end_ms, tokens, http_status"},
		{"syntax", hdr + okLine + "{\"clients\":1,\n", "r.jsonl:3:"},
		{"two objects", hdr + strings.TrimSuffix(okLine, "\n") + " {}\n", "r.jsonl:2:"},
		{"blank line", hdr + "\n" + okLine, "r.jsonl:2: blank line"},
		{"phase", hdr + strings.Replace(okLine, "measured", "warm", 1), `phase "warm"`},
		{"clients", hdr + strings.Replace(okLine, `"clients":1`, `"clients":0`, 1), "clients 0"},
		{"end before send", hdr + strings.Replace(okLine, `"send_ms":0`, `"send_ms":200`, 1), "end_ms 100 is before send_ms 200"},
		{"first token outside", hdr + strings.Replace(okLine, `"first_token_ms":10`, `"first_token_ms":110`, 1), "first_token_ms 110 is outside"},
		{"tokens without first", hdr + strings.Replace(okLine, `"first_token_ms":10`, `"first_token_ms":null`, 1), "first_token_ms is null"},
		{"ITL undefined", hdr + strings.Replace(okLine, `"first_token_ms":10`, `"first_token_ms":100`, 1), "inter-token latency is undefined"},
		{"negative tokens", hdr + strings.Replace(okLine, `"tokens":64`, `"tokens":-1`, 1), "tokens -1"},
		{"http status", hdr + strings.Replace(okLine, `"http_status":200`, `"http_status":42`, 1), "http_status 42"},
		{"string number", hdr + strings.Replace(okLine, `"seq":0`, `"seq":"0"`, 1), "want int"},
		{"duplicate seq", hdr + okLine + okLine, "r.jsonl:3: clients 1 measured seq 0 repeats line 2"},
		{"timings", hdr + strings.Replace(okLine, `"timings":null`, `"timings":{"prompt_n":-1,"prompt_ms":1,"predicted_n":1,"predicted_ms":1}`, 1), "timings:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadRequests("r.jsonl", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// A failed request: no token, no timings, HTTP 0.
	f, err := ReadRequests("r.jsonl", []byte(hdr+`{"clients":1,"phase":"measured","seq":0,"send_ms":5,"end_ms":6,"tokens":0,"http_status":0,"error":"connection refused"}`+"\n"))
	if err != nil || len(f.Records) != 1 || f.Records[0].Completed(64) || f.Records[0].Line != 2 {
		t.Fatalf("%+v %v", f, err)
	}
}

func TestRequestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewRequestWriter(&buf, RequestHeader{Pass: PassReverse, Candidate: "q8", Slots: 4, PlanSHA256: sha1})
	if err != nil {
		t.Fatal(err)
	}
	ft := 12.25
	recs := []RequestRecord{
		{Clients: 4, Phase: PhaseWarmup, Seq: 0, SendMs: 1.5, FirstTokenMs: &ft, EndMs: 99.125, Tokens: 64, HTTPStatus: 200, Timings: &Timings{12, 8.5, 64, 80.25}},
		{Clients: 4, Phase: PhaseMeasured, Seq: 0, SendMs: 100, EndMs: 100.5, HTTPStatus: 500, Error: "boom"},
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Write(RequestRecord{Clients: 4, Phase: "x"}); err == nil {
		t.Error("writer accepted a record the reader refuses")
	}
	f, err := ReadRequests("w", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Schema != SchemaRequests || f.Header.Key() != (LifetimeKey{PassReverse, "q8", 4}) || f.Header.PlanSHA256 != sha1 {
		t.Errorf("header %+v", f.Header)
	}
	for i := range recs {
		recs[i].Line = i + 2
	}
	if len(f.Records) != 2 || *f.Records[0].FirstTokenMs != ft || *f.Records[0].Timings != *recs[0].Timings || f.Records[1].Error != "boom" ||
		f.Records[1].FirstTokenMs != nil || f.Records[1].Line != 3 {
		t.Errorf("records %+v", f.Records)
	}
	if _, err := NewRequestWriter(&buf, RequestHeader{Pass: "up"}); err == nil {
		t.Error("bad header written")
	}
}

func TestReadRSS(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		kib        int64
		format     string
		err        string
	}{
		{"time -v", string(rssTimeV(3530854)), 3530854, RSSFormatGNUTime, ""},
		{"time -v crlf", strings.ReplaceAll(string(rssTimeV(42)), "\n", "\r\n"), 42, RSSFormatGNUTime, ""},
		{"record", string(rssRecord(2080051)), 2080051, RSSFormatRecord, ""},
		{"bare record", `{"vmhwm_kib": 7}`, 7, RSSFormatRecord, ""},
		{"empty", "  \n", 0, "", "empty file"},
		{"shell time", "real 0m1.2s\nuser 0m1.0s\n", 0, "", "no \"Maximum resident set size (kbytes): N\" line"},
		{"bad number", "\tMaximum resident set size (kbytes): 12x\n", 0, "", "rss:1: maximum resident set size \"12x\""},
		{"zero kbytes", "\tCommand being timed: \"x\"\n\tMaximum resident set size (kbytes): 0\n", 0, "", "rss:2: maximum resident set size \"0\": want a positive whole number"},
		{"one kbyte", "\tMaximum resident set size (kbytes): 1\n", 1, RSSFormatGNUTime, ""},
		{"last line wins", "Maximum resident set size (kbytes): 5\nMaximum resident set size (kbytes): 9\n", 9, RSSFormatGNUTime, ""},
		{"record of 1 KiB", `{"vmhwm_kib": 1}`, 1, RSSFormatRecord, ""},
		{"negative", `{"vmhwm_kib": -3}`, 0, "", "vmhwm_kib -3"},
		{"own schema", `{"schema": "sparkbench.rss/v1", "vmhwm_kib": 5}`, 5, RSSFormatRecord, ""},
		{"zero", `{"vmhwm_kib": 0}`, 0, "", "vmhwm_kib 0"},
		{"unknown field", `{"vmhwm": 5}`, 0, "", `unknown field "vmhwm"`},
		{"schema", `{"schema": "x", "vmhwm_kib": 5}`, 0, "", `schema "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kib, format, err := ReadRSS("rss", []byte(tc.data))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || kib != tc.kib || format != tc.format {
				t.Fatalf("%d %s %v", kib, format, err)
			}
		})
	}
}

func TestLastLoadBlock(t *testing.T) {
	// The real sample's shape: two loads, under a pty (CRLF, colours).
	log := strings.ReplaceAll(string(serverLog([]string{"\x1b[32mCPU_KLEIDIAI model buffer size = 0.00 MiB\x1b[0m"}, nil)), "\n", "\r\n")
	b, checks, err := CheckMarkers("l", []byte(log), Markers{Must: []string{`^0\.00\.\d+\.\d+ I load_tensors:\s+CPU_Mapped model buffer size`}, MustNot: []string{`CPU_KLEIDIAI`}})
	if err != nil {
		t.Fatal(err)
	}
	if b.Loads != 2 || b.StartLine != 9 || len(checks) != 2 || !checks[0].Ok || checks[0].Line != 11 || !checks[1].Ok || checks[1].Found {
		t.Fatalf("block %+v checks %+v", b, checks)
	}
	// One load (-fit off): that block counts.
	one := "a\n0.1 I llama_model_loader: loaded meta data with 3 key-value pairs\nCPU_KLEIDIAI model buffer\n"
	b, checks, _ = CheckMarkers("l", []byte(one), Markers{MustNot: []string{"CPU_KLEIDIAI"}})
	if b.Loads != 1 || b.StartLine != 2 || checks[0].Ok || checks[0].Line != 3 {
		t.Fatalf("block %+v checks %+v", b, checks)
	}
	// A line far past the scanner's first 64 KiB (a verbose server echoing a long prompt)
	// does not end the scan: the load after it is found.
	long := "0.0 I prompt: " + strings.Repeat("x", 200*1024) + "\n" + one
	if b := LastLoadBlock([]byte(long)); b.Loads != 1 || b.StartLine != 3 {
		t.Fatalf("after a 200 KiB line: block %+v, want the load at line 3", b)
	}
	// A marker that is not a regular expression is refused, naming it.
	if _, _, err := CheckMarkers("l", []byte(one), Markers{Must: []string{"CPU_(KLEIDIAI"}}); err == nil || !strings.Contains(err.Error(), "CPU_(KLEIDIAI") {
		t.Fatalf("bad marker: %v", err)
	}
	// No markers: no block needed.
	if _, checks, err := CheckMarkers("l", []byte("x\n"), Markers{}); err != nil || len(checks) != 0 {
		t.Fatal(err)
	}
}

func TestReadQuality(t *testing.T) {
	ok := `{"schema":"sparkbench.quality/v1","candidate":"a","slots":2,"cases":[{"id":"c1","outcome":"pass","matcher":"exact"},{"id":"c2","outcome":"fail","detail":"said 5"}]}`
	q, err := ReadQuality("q", []byte(ok))
	if err != nil || q.Score() != 1 || len(q.Cases) != 2 {
		t.Fatalf("%+v %v", q, err)
	}
	// One slot is a guard server's least --parallel; every case passed scores them all.
	one := strings.Replace(strings.Replace(ok, `"slots":2`, `"slots":1`, 1), `"fail"`, `"pass"`, 1)
	if q, err := ReadQuality("q", []byte(one)); err != nil || q.Slots != 1 || q.Score() != 2 || q.outcomes()["c2"] != "pass" {
		t.Fatalf("one slot, all passed: %+v %v", q, err)
	}
	for _, tc := range []struct{ data, want string }{
		{strings.Replace(ok, `"pass"`, `"PASS"`, 1), `cases[0].outcome "PASS"`},
		{strings.Replace(ok, `"c2"`, `"c1"`, 1), `cases[1].id "c1" repeats cases[0]`},
		{strings.Replace(ok, `"slots":2`, `"slots":0`, 1), "slots 0"},
		{strings.Replace(ok, `quality/v1`, `quality/v2`, 1), "schema"},
		{`{"schema":"sparkbench.quality/v1","candidate":"a","slots":2,"cases":[]}`, "no cases"},
		{strings.Replace(ok, `"id":"c2"`, `"id":" "`, 1), "cases[1].id is empty"},
		{strings.Replace(ok, `"candidate":"a"`, `"candidate":"a b"`, 1), `candidate "a b"`},
		{strings.Replace(ok, `"matcher"`, `"kind"`, 1), `unknown field "kind"`},
	} {
		if _, err := ReadQuality("q", []byte(tc.data)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// TestAssembleInputErrors: every bad input names its flag, key and file, and says what to do.
func TestAssembleInputErrors(t *testing.T) {
	p := smallPlan()
	good := func() Inputs { return fixture{}.inputs(t, p) }
	for _, tc := range []struct {
		name   string
		mutate func(in *Inputs)
		want   []string
	}{
		{"missing requests", func(in *Inputs) { delete(in.Requests, LifetimeKey{PassReverse, "b", 2}) },
			[]string{"--requests reverse/b/p2: missing", "add --requests reverse/b/p2=FILE", "(8 here)"}},
		{"missing rss", func(in *Inputs) { delete(in.RSS, LifetimeKey{PassForward, "a", 1}) }, []string{"--rss forward/a/p1: missing"}},
		{"missing log", func(in *Inputs) { delete(in.ServerLogs, LifetimeKey{PassForward, "a", 1}) }, []string{"--server-log forward/a/p1: missing"}},
		{"extra lifetime", func(in *Inputs) { in.RSS[LifetimeKey{PassForward, "a", 4}] = InputFile{"x", rssTimeV(1)} },
			[]string{"--rss forward/a/p4: not a server lifetime of this plan", "slots [1 2]"}},
		{"wrong file", func(in *Inputs) {
			k1, k2 := LifetimeKey{PassForward, "a", 1}, LifetimeKey{PassForward, "a", 2}
			in.Requests[k1], in.Requests[k2] = in.Requests[k2], in.Requests[k1]
		}, []string{"--requests forward/a/p1: req/forward/a/p2.jsonl: the header names server lifetime forward/a/p2; pass the file as forward/a/p2="}},
		{"incomplete", func(in *Inputs) {
			k := LifetimeKey{PassForward, "b", 1}
			f := in.Requests[k]
			f.Data = f.Data[:bytes.LastIndexByte(f.Data[:len(f.Data)-1], '\n')+1]
			in.Requests[k] = f
		}, []string{"--requests forward/b/p1: req/forward/b/p1.jsonl: clients 2 has 4 warmup and 7 measured requests, the plan says 4 and 8", "re-run"}},
		{"client level", func(in *Inputs) {
			k := LifetimeKey{PassForward, "b", 1}
			f := in.Requests[k]
			f.Data = bytes.Replace(f.Data, []byte(`"clients":2`), []byte(`"clients":3`), 1)
			in.Requests[k] = f
		}, []string{"req/forward/b/p1.jsonl:", "clients 3 is not a client level of this server (plan: [1 2])"}},
		{"seq range", func(in *Inputs) {
			k := LifetimeKey{PassForward, "b", 1}
			f := in.Requests[k]
			f.Data = bytes.Replace(f.Data, []byte(`"phase":"warmup","send_ms":1000,"seq":0`), []byte(`"phase":"warmup","send_ms":1000,"seq":9`), 1)
			in.Requests[k] = f
		}, []string{"warmup seq 9 is outside 0-3"}},
		{"plan sha", func(in *Inputs) {
			k := LifetimeKey{PassForward, "b", 1}
			in.Requests[k] = InputFile{"r", bytes.Replace(in.Requests[k].Data, []byte(`"pass":"forward"`), []byte(`"pass":"forward","plan_sha256":"`+sha1+`"`), 1)}
		}, []string{"recorded for plan 1111", "the plan changed after the run"}},
		{"bad rss", func(in *Inputs) { in.RSS[LifetimeKey{PassReverse, "a", 1}] = InputFile{"t.txt", []byte("real 1s\n")} },
			[]string{"--rss reverse/a/p1: t.txt:1: no \"Maximum resident set size"}},
		{"quality without gate", func(in *Inputs) { in.Quality = map[QualityKey]InputFile{{"a", 1}: {"q", nil}} },
			[]string{"--quality a/p1: the plan declares no quality gate"}},
		{"bench tg candidate", func(in *Inputs) { in.BenchTG = map[string]float64{"c": 40} }, []string{"--bench-tg c: not a candidate"}},
		{"bench tg value", func(in *Inputs) { in.BenchTG = map[string]float64{"a": -1} }, []string{"--bench-tg a: -1: want llama-bench's tg"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := good()
			tc.mutate(&in)
			_, err := Assemble(p, in)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an InputError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
	// A refused plan is an input error naming --plan.
	bad := smallPlan()
	bad.Slots = nil
	if _, err := Assemble(bad, good()); err == nil || !strings.HasPrefix(err.Error(), "--plan: plan refused: slots: empty") {
		t.Errorf("err = %v", err)
	}
}

func TestAssembleQualityInputErrors(t *testing.T) {
	p := qualityPlan(0.5, 0.5)
	in := fixture{}.inputs(t, p)
	in.Quality = qualityFiles(p, func(QualityKey) string { return "PPPF" })
	delete(in.Quality, QualityKey{"b", 2})
	if _, err := Assemble(p, in); err == nil || !strings.Contains(err.Error(), "--quality b/p2: missing") {
		t.Errorf("err = %v", err)
	}
	in.Quality = qualityFiles(p, func(k QualityKey) string {
		if k.Slots == 2 {
			return "PPPFP" // one more case: not the same fixed list
		}
		return "PPPF"
	})
	if _, err := Assemble(p, in); err == nil || !strings.Contains(err.Error(), "its case list differs from a/p1's") {
		t.Errorf("err = %v", err)
	}
	in.Quality = qualityFiles(p, func(QualityKey) string { return "PPPF" })
	in.Quality[QualityKey{"a", 1}], in.Quality[QualityKey{"a", 2}] = in.Quality[QualityKey{"a", 2}], in.Quality[QualityKey{"a", 1}]
	if _, err := Assemble(p, in); err == nil || !strings.Contains(err.Error(), "the evidence is for a/p2") {
		t.Errorf("err = %v", err)
	}
}

func FuzzReadRequests(f *testing.F) {
	f.Add([]byte(handFile))
	f.Add([]byte(hdr + okLine))
	f.Add([]byte(hdr + "{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rf, err := ReadRequests("fuzz", data)
		if err != nil {
			return
		}
		// What the reader accepts, the writer writes and the reader reads back the same.
		var buf bytes.Buffer
		w, err := NewRequestWriter(&buf, rf.Header)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rf.Records {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		again, err := ReadRequests("again", buf.Bytes())
		if err != nil || len(again.Records) != len(rf.Records) {
			t.Fatalf("round trip: %v", err)
		}
		CellMetrics(PassForward, rf.Records, 64)
	})
}

func FuzzReadRSS(f *testing.F) {
	f.Add(rssTimeV(123))
	f.Add(rssRecord(9))
	f.Fuzz(func(t *testing.T, data []byte) {
		kib, _, err := ReadRSS("fuzz", data)
		if err == nil && kib <= 0 {
			t.Fatalf("accepted %d KiB", kib)
		}
	})
}

func FuzzCheckMarkers(f *testing.F) {
	f.Add(serverLog([]string{kleidi}, []string{kleidi}))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, checks, err := CheckMarkers("fuzz", data, Markers{Must: []string{"CPU_KLEIDIAI"}})
		if err == nil && (b.StartLine == 0 || len(checks) != 1 || (checks[0].Found && checks[0].Line < b.StartLine)) {
			t.Fatalf("block %+v checks %+v", b, checks)
		}
	})
}
