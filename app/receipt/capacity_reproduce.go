package receipt

import (
	"sort"

	"sparkbench/app/capacity"
)

// capReproduce writes the commands that re-derive study.json from the raw files.
func capReproduce(w *mdWriter, cb *capacityBundle, r *capacity.Result) {
	p := r.Plan
	w.heading(2, "Reproduce and compare")
	w.line("Run from the extracted bundle with %s. This first verifies every archived file, then requires byte-for-byte matches for both derived outputs.", code(cb.ix.Sparkbench))
	w.blank()
	w.line("<details>")
	w.line("<summary>Show exact commands</summary>")
	w.blank()
	w.line("```bash")
	w.line("sha256sum --check SHA256SUMS")
	w.line("sparkbench verify .")
	w.line("sparkbench capacity assemble \\")
	ci := cb.ix.Capacity
	w.line("  --plan %s \\", ci.Plan)
	keys := func(m map[string]string) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	for _, lt := range capacity.Schedule(p, "") {
		k := lt.Key.String()
		w.line("  --requests %s=%s \\", k, ci.Requests[k])
		w.line("  --rss %s=%s \\", k, ci.RSS[k])
		w.line("  --server-log %s=%s \\", k, ci.ServerLogs[k])
	}
	for _, k := range keys(ci.Quality) {
		w.line("  --quality %s=%s \\", k, ci.Quality[k])
	}
	tgs := make([]string, 0, len(ci.BenchTG))
	for k := range ci.BenchTG {
		tgs = append(tgs, k)
	}
	sort.Strings(tgs)
	for _, k := range tgs {
		w.line("  --bench-tg %s=%s \\", k, num(ci.BenchTG[k]))
	}
	for _, k := range keys(ci.Batched) {
		w.line("  --batched %s=%s \\", k, ci.Batched[k])
	}
	servingReproduce(w, ci)
	for _, k := range keys(ci.Telemetry) {
		w.line("  --telemetry %s=%s \\", k, ci.Telemetry[k])
	}
	w.line("  --output study.reproduced.json")
	w.line("cmp study.json study.reproduced.json")
	w.line("```")
	w.blank()
	w.line("</details>")
	w.blank()
}
