package workbench

import (
	"slices"
	"testing"
)

// Every kind JournalSentence knows, with a payload shaped as its writer journals it (the demo
// run's own entries for the throughput kinds) and the sentence people read.
var journalCases = []struct{ kind, payload, want string }{
	{"study.created", `{"description":"d","kind":"throughput","name":"sparkbench demo","study":1}`, `throughput study "sparkbench demo" created`},
	{"plan.registered", `{"plan":{},"plan_sha256":"0123456789abcdef0123","study":1}`, "plan registered and frozen, sha256 0123456789ab"},
	{"study.status", `{"status":"incomplete","study":1}`, "status: incomplete"},
	{"study.status", `{"reason":"the run of process 4242 (since 2026-12-07T06:00:00Z) ended without recording its end","status":"halted","study":1}`,
		"status: halted: the run of process 4242 (since 2026-12-07T06:00:00Z) ended without recording its end"},
	{"artefact.recorded", `{"artefact":1,"created":true,"path":"/m/tiny.gguf","sha256":"ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12","size_bytes":"1234"}`,
		"model recorded: /m/tiny.gguf (1234 bytes, SHA-256 ab12ab12ab12ab12…)"},
	{"artefact.recorded", `{"artefact":1,"path":"/m/tiny.gguf","sha256":"","size_bytes":"1234"}`,
		"model record updated: /m/tiny.gguf (1234 bytes, SHA-256 not computed yet)"},
	{"prediction.registered", `{"key":"P1","kind":"band","study":1,"text":"the dense tiny model generates faster than 1000 t/s"}`, "prediction P1 (band) registered: the dense tiny model generates faster than 1000 t/s"},
	{"amendment", `{"study":1,"target":"P2","reason":"wrong depth","change":{}}`, "amendment of P2: wrong depth"},
	{"deviation", `{"study":1,"leg":null,"description":"a download ran during leg 3","detail":{}}`, "deviation recorded: a download ran during leg 3"},
	{"leg.started", `{"argv":["/opt/llama/bin/llama-bench","-m","x.gguf","-o","jsonl"],"conditions":["demo: busy"],"kind":"bench","label":"tiny/d128","leg":3,"study":1}`, "leg tiny/d128 started: llama-bench with 4 arguments, under 1 declared condition(s)"},
	{"leg.finished", `{"bench_rows":2,"class":"ok","started_at":"2026-12-03T23:41:33.285521327Z","ended_at":"2026-12-03T23:41:33.804116136Z","kind":"bench","label":"tiny/d128","leg":3,"reason":"","request_rows":0,"state":"finished","study":1}`, "leg tiny/d128 finished ok: 2 rows in 0.52 s"},
	{"leg.rows_marked", `{"discarded":0,"flagged":1,"leg":2,"result":1,"rows":2,"study":1}`, "leg 2's 2 row(s) marked: 1 counted, 1 flagged, 0 discarded"},
	{"verdict", `{"detail":{"expected":">= 1000","outcome":"HIT"},"key":"P1","observed":20459.696032,"outcome":"HIT","source":"computed","study":1}`, "P1: HIT at 20460 (expected >= 1000)"},
	{"verdict.human", `{"author":"ana","key":"P3","outcome":"NOTE","rationale":"tiny models: only the shape matters","study":1}`, "P3: human verdict NOTE by ana: tiny models: only the shape matters"},
	{"finding", `{"body":"","label":"F1","legs":[4,7],"number":1,"predictions":[2],"study":1,"title":"generation falls faster with depth"}`, "finding F1: generation falls faster with depth (2 leg(s), 1 prediction(s))"},
	{"receipt.exported", `{"bytes":5120,"format":"dir","path":"/tmp/r","sha256":"ab","study":1}`, "receipt exported (dir, 5120 bytes) to /tmp/r"},
	{"lease.taken_over", `{"by":{"host":"spark","pid":77},"holder":{"host":"spark","pid":4242,"since":"2026-12-07T06:00:00.000000000Z"},"reason":"…","study":1}`,
		"run lease taken over from process 4242 (host spark, since 2026-12-07T06:00:00.000000000Z), which no longer ran"},
	{"study.plan_source", `{"plan_dir":"/d","plan_file":"/d/demo-study.json","study":1}`, "plan file: /d/demo-study.json"},
	{"study.bandwidth", `{"gbs":41.5}`, "memory bandwidth measured: 41.5 GB/s"},
	{"study.halted", `{"class":"crashed","leg":"tiny/d256","reason":"canary failed"}`, "the run halted at leg tiny/d256: canary failed"},
	{"study.run", `{"bandwidth_gbs":0,"legs_done":0,"legs_total":6}`, "run started with 0 of 6 legs already finished"},
	{"study.run", `{"legs_done":1,"legs_total":6,"samplers":[{"source":"nvml","available":true,"devices":["GPU0"]},{"source":"host","available":true},{"source":"rapl","available":false,"reason":"absent"}]}`, "run started with 1 of 6 legs already finished; telemetry: nvml, host read, 1 not available"},
	{"study.incomplete", `{"legs":[{"leg":"moe/d256","class":"oom"}]}`, "the run ended incomplete: 1 leg(s) without results: moe/d256 (oom)"},
	{"study.adaptive", `{"met":true,"legs":[{"leg":"a"},{"leg":"b"}],"rule":"ci"}`, "adaptive repetitions over 2 leg(s): stopping rule met"},
	{"study.leg_launch", `{"leg":2,"label":"tiny/d0","wrapper":["/usr/bin/taskset","-c","0"],"launched_as":["/usr/bin/taskset","-c","0","llama-bench"],"affinity":{"pid":4242,"how":"exec","cpus_allowed_list":"0","mems_allowed_list":"0"}}`, "leg tiny/d0 launched under /usr/bin/taskset -c 0: llama-bench (PID 4242, exec) may run on CPUs 0"},
	{"study.leg_launch", `{"leg":3,"label":"tiny/d128","wrapper":["/w/pin"],"launched_as":["/w/pin","llama-bench"],"affinity_error":"not read: no process of the leg's group was seen running llama-bench"}`, "leg tiny/d128 launched under /w/pin: affinity not read: no process of the leg's group was seen running llama-bench"},
	{"kv.kld", `{"kv":"q8_0/q8_0","mean_kld":0.00123,"model":"tiny","study":1}`, "KV cache q8_0/q8_0 on tiny: mean KLD 0.00123 against f16"},
	{"capacity.assembled", `{"selected":[{"candidate":"medium","slots":4,"clients":2},{"candidate":"q4","slots":null,"clients":null}]}`, "capacity study assembled: medium at P4/C2; q4: none selected"},
	{"capacity.run", `{"run_dir":"/runs/7","plan_file":"p.json"}`, "capacity run started in /runs/7"},
	{"capacity.run", `{"run_dir":"/runs/7","samplers":[{"source":"rapl","available":false,"reason":"absent"}]}`, "capacity run started in /runs/7; telemetry: no sampler available (1 tried)"},
	{"capacity.resumed", `{"lifetimes_skipped":2,"lifetimes_total":6}`, "capacity run resumed: 2 of 6 server lifetimes skipped"},
	{"capacity.incomplete", `{"lifetimes":[{"key":"medium/P2","class":"crashed"}],"total":6}`, "the run ended incomplete: 1 server lifetime(s) without results: medium/P2 (crashed)"},
	{"capacity.validity", `{"probes":[{"lifetime":"forward/m/p2","probe":1,"offered_rate":2,"requests":16,"completed":16,"contaminated":0,"token_mismatch":0,"behind_schedule":false,"client_bound":false,"failures":[]}]}`, "serving validity over 1 probe(s), 16 requests: every check passed"},
	{"capacity.validity", `{"probes":[{"lifetime":"forward/m/p2","probe":0,"offered_rate":2,"requests":32,"completed":32,"contaminated":0,"token_mismatch":0,"behind_schedule":false,"client_bound":false,"failures":["ttft_ms_p95_above_slo","rate:not_sustained"]}]}`, "serving validity over 1 probe(s), 32 requests: 1 probe(s) not sustained (completions fell behind arrivals)"},
	{"capacity.validity", `{"probes":[{"probe":1,"offered_rate":2,"requests":16,"contaminated":2,"token_mismatch":1,"timing":{"compared":14,"flagged":0,"seqs":[]}},{"probe":2,"offered_rate":4.5,"requests":16,"timing":{"compared":16,"flagged":3,"seqs":[1,4,9]},"behind_schedule":true,"client_bound":true}]}`, "serving validity over 2 probe(s), 32 requests: 2 prompt-cache contaminated (excluded), 1 token-count mismatch(es), client/server timing disagreement in 3 of 30 compared (probe 2 at 4.5 req/s: 3), 1 probe(s) behind schedule, 1 probe(s) client-bound"},
	{"capacity.network", `{"lifetime":"forward/dense/p1","network":{"host":"spark","ssh":"lab@spark","path":"desktop 127.0.0.1:40631 → ssh lab@spark (host spark) → host 127.0.0.1:48390","rtt_probes":20,"rtt_min_ms":0.254,"rtt_median_ms":0.4421,"left":[]}}`, "server lifetime forward/dense/p1 on host spark: desktop 127.0.0.1:40631 → ssh lab@spark (host spark) → host 127.0.0.1:48390; round-trip floor 0.254 ms (median 0.4421 ms, 20 GET /health)"},
	{"capacity.network", `{"lifetime":"forward/dense/p2","network":{"host":"spark","path":"p","rtt_error":"round trip 0: EOF","stop_error":"host spark: 1 llama-server process(es) still there after SIGKILL: 7 x"}}`, "server lifetime forward/dense/p2 on host spark: p; round-trip floor not measured: round trip 0: EOF; host spark: 1 llama-server process(es) still there after SIGKILL: 7 x"},
	{"quant.started", `{"plan_sha256":"feedfacecafebeef00","study":3}`, "ladder run started, plan sha256 feedfacecafe"},
	{"quant.provenance", `{"provenance":{},"study":3}`, "ladder run: the build and machine recorded"},
	{"quant.record", `{"record":{"type":"Q4_K_M","bits_per_weight":4.89,"bytes":1048576},"study":3}`, "ladder candidate Q4_K_M measured (4.89 bits per weight, 1048576 bytes)"},
	{"quant.stale", `{"type":"imatrix","study":3}`, "cached imatrix set aside: it no longer hashed as recorded"},
	{"quant.imatrix", `{"sha256":"00112233445566778899","study":3}`, "importance matrix recorded, sha256 001122334455"},
	{"quant.assembled", `{"selected":"Q8_0","runner_up":"Q4_K_M","study":3}`, "ladder assembled: Q8_0 selected, runner-up Q4_K_M"},
	{"host.recorded", `{"action":"added","labels":{},"llama_dir":"~/llama.cpp/build/bin","model_dirs":[],"name":"spark","rpc_address":"","ssh":"lab@spark"}`, "bench host spark added (ssh lab@spark, llama.cpp in ~/llama.cpp/build/bin)"},
	{"host.recorded", `{"action":"removed","name":"spark","ssh":"lab@spark"}`, "bench host spark removed from the hosts list"},
	{"quant.handoff", `{"capacity_plan":"/p/cap.json","study":3}`, "capacity plan handed off: /p/cap.json"},
	{"models.trust_cache", `{"by":"--trust-cache","study":3}`, "the run took its models' hashes from the notebook's cache (--trust-cache), not from the files: a model written in place with its size, mtime, inode and ctime put back would not be noticed"},
}

func TestJournalSentenceForEveryKind(t *testing.T) {
	var covered []string
	for _, c := range journalCases {
		covered = append(covered, c.kind)
		if got := JournalSentence(c.kind, []byte(c.payload)); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.kind, got, c.want)
		}
		if JournalTone(c.kind) == "other" {
			t.Errorf("%s: no tone", c.kind)
		}
	}
	slices.Sort(covered)
	covered = slices.Compact(covered)
	if !slices.Equal(covered, JournalKinds()) {
		t.Errorf("cases cover %v,\nthe renderer knows %v", covered, JournalKinds())
	}
}

func TestJournalSentenceUnknownAndMalformed(t *testing.T) {
	if got := JournalSentence("telemetry.future", []byte(`{"x":1}`)); got != "telemetry.future entry (see its payload)" {
		t.Errorf("unknown kind: %q", got)
	}
	if got := JournalSentence("leg.finished", []byte(`not json`)); got != "leg.finished entry (see its payload)" {
		t.Errorf("malformed payload: %q", got)
	}
	// A leg.finished of an interrupted canary without an end time: no duration; a server leg
	// is named by its kind and counts requests.
	got := JournalSentence("leg.finished", []byte(`{"kind":"canary","label":"canary baseline","state":"interrupted","class":"","bench_rows":0,"request_rows":0}`))
	if want := "leg canary baseline interrupted: 0 rows"; got != want {
		t.Errorf("interrupted canary: %q, want %q", got, want)
	}
	got = JournalSentence("leg.finished", []byte(`{"kind":"server","label":"medium/P2","state":"finished","class":"ok","bench_rows":0,"request_rows":16}`))
	if want := "server leg medium/P2 finished ok: 16 requests"; got != want {
		t.Errorf("server leg: %q, want %q", got, want)
	}
	if JournalTone("study.halted") != "warning" || JournalTone("telemetry.future") != "other" {
		t.Error("tones of a halt and an unknown kind")
	}
}
