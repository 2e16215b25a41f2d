package workbench

func init() {
	journalCases = append(journalCases,
		struct{ kind, payload, want string }{"study.imported", `{"study":4,"bundle_sha256":"9f86d081884c7d659a2feaa0c55ad015","source":"receipts/study-2.tar.gz","kind":"throughput","sparkbench":"sparkbench 0.9","origin":{"study":2,"name":"demo","status":"complete","head":{"seq":41,"hash":"ab12cd34ef56ab78cd90"},"machines":[]},"excerpt":{"first_seq":3,"last_seq":41,"first_prev_hash":"x","last_hash":"y","entries":27},"legs":{"5":1,"6":2}}`,
			`imported from the receipt bundle receipts/study-2.tar.gz (sha256 9f86d081884c): throughput study 2 "demo" there, complete; 27 journal entries (origin entries 3 to 41), origin head entry 41 ab12cd34ef56, 2 leg(s)`},
		struct{ kind, payload, want string }{"study.fleet", `{"fleet":"lab 2026-12-06T10:00:00Z","host":"spark","hosts":["local","spark","box"],"base_plan_sha256":"00aa11bb22cc33dd44","bandwidth_from":"host"}`,
			`member of fleet "lab 2026-12-06T10:00:00Z" on host spark (one of 3 hosts), base plan sha256 00aa11bb22cc; bandwidth: the host's own figure`},
		struct{ kind, payload, want string }{"study.fleet", `{"fleet":"lab 2026-12-06T10:00:00Z","host":"local","hosts":["local","spark"],"base_plan_sha256":"00aa11bb22cc33dd44"}`,
			`member of fleet "lab 2026-12-06T10:00:00Z" on host local (one of 2 hosts), base plan sha256 00aa11bb22cc`},
		struct{ kind, payload, want string }{"study.host", `{"host":"spark","ssh":"lab@spark","llama_dir":"~/llama.cpp/build/bin","clock_skew_ns":-1500000,"clock_uncertainty_ns":250000,"clock_far_off":false,"timestamps":"desktop"}`,
			"legs run on bench host spark (ssh lab@spark, llama.cpp in ~/llama.cpp/build/bin); its clock 1.5ms behind the desktop (± 250µs); timestamps taken on the desktop"},
		struct{ kind, payload, want string }{"study.host", `{"host":"box","ssh":"box","llama_dir":"/opt/llama","clock_skew_ns":93000000000,"clock_uncertainty_ns":4000000,"clock_far_off":true,"timestamps":"desktop"}`,
			"legs run on bench host box (ssh box, llama.cpp in /opt/llama); its clock 1m33s ahead of the desktop (± 4ms), far off; timestamps taken on the desktop"},
	)
}
