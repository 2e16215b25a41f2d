package receipt

import (
	"fmt"
	"sort"
	"strings"

	"sparkbench/app/capacity"
	"sparkbench/app/study"
)

// failure codes in words, for the rejected-points table.
func failureWords(code string) string {
	pass, c, ok := strings.Cut(code, ":")
	prefix := ""
	if ok {
		prefix = strings.ToUpper(pass[:1]) + pass[1:] + " pass: "
	} else {
		c = code
	}
	w := map[string]string{
		capacity.CodeTTFTAbove:           "observed-p95 TTFT exceeded the limit",
		capacity.CodeE2EAbove:            "observed-p95 E2E exceeded the limit",
		capacity.CodeCompletionBelow:     "completion rate fell below the minimum",
		capacity.CodePassesFailedLoadSLO: "At least one pass missed the load SLO",
		capacity.CodeRateSpreadAbove:     "Generation-rate spread between passes exceeded the limit",
		capacity.CodeE2ESpreadAbove:      "Observed-p95 E2E spread between passes exceeded the limit",
		capacity.CodePeakRSSAbove:        "Peak server RSS exceeded the limit",
		capacity.CodeQualityFailed:       "The quality guard failed",
		capacity.CodeMarkerMissing:       "A required backend marker is missing from the last load block",
		capacity.CodeMarkerForbidden:     "A forbidden backend marker is present in the last load block",
	}[c]
	if w == "" {
		w = "Gate failed"
	}
	return prefix + w
}

func point(slots, clients int) string { return fmt.Sprintf("P%d / C%d", slots, clients) }

func capWord(v study.Verdict) string {
	if v.Outcome == study.Answered && v.Value != nil {
		return "ANSWERED " + num(*v.Value)
	}
	return v.Word()
}

func reverse(s []string) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

func candidatesText(p *capacity.Plan) string {
	var ls []string
	for _, c := range p.Candidates {
		ls = append(ls, inline(c.Label))
	}
	switch len(ls) {
	case 0:
		return "no candidates"
	case 1:
		return ls[0]
	}
	return strings.Join(ls[:len(ls)-1], ", ") + " and " + ls[len(ls)-1]
}

// envelope writes one candidate's grid, its selected point's gates and its rejected points.
func envelope(w *mdWriter, p *capacity.Plan, c capacity.CandidateResult) {
	w.heading(2, "Capacity envelope — "+c.Label)
	clients := []int{}
	seen := map[int]bool{}
	for _, cell := range c.Cells {
		if !seen[cell.Clients] {
			seen[cell.Clients] = true
			clients = append(clients, cell.Clients)
		}
	}
	sort.Ints(clients)
	header := []string{"Server slots"}
	align := "r"
	for _, k := range clients {
		header = append(header, fmt.Sprintf("C%d", k))
		align += "l"
	}
	var rows [][]string
	for _, s := range p.Slots {
		row := []string{fmt.Sprintf("P%d", s)}
		for _, k := range clients {
			txt := "—"
			for _, cell := range c.Cells {
				if cell.Slots == s && cell.Clients == k {
					verdict := "FAIL"
					if cell.Passed {
						verdict = "PASS"
					}
					txt = fmt.Sprintf("**%s · %s**<br>E2E p95 %s<br>TTFT p95 %s", verdict, fp(cell.GenerationRate, func(x float64) string { return f2(x) + " tok/s" }),
						fp(cell.E2EMsP95, func(x float64) string { return f1(x) + " ms" }), fp(cell.TTFTMsP95, func(x float64) string { return f1(x) + " ms" }))
				}
			}
			row = append(row, txt)
		}
		rows = append(rows, row)
	}
	w.table(header, align, rows)
	sel := c.Selected
	if sel == nil {
		w.line("**Envelope result:** no point selected: %s.", inline(c.SelectionNote))
		w.blank()
	} else {
		how := ""
		if sel.DecidedBy != capacity.DecidedByRate && len(sel.WithinTolerance) > 1 {
			how = fmt.Sprintf(" %s cells were within the objective tolerance; %s decided (%s).", fmt.Sprint(len(sel.WithinTolerance)), code(sel.DecidedBy), pointsText(sel.WithinTolerance))
		}
		w.line("**Envelope result:** %s is the best observed passing point under the fixed objective.%s", point(sel.Slots, sel.Clients), how)
		w.blank()
		for _, cell := range c.Cells {
			if cell.Slots == sel.Slots && cell.Clients == sel.Clients {
				gateTable(w, p, cell)
			}
		}
	}
	var rej [][]string
	for _, cell := range c.Cells {
		if cell.Passed {
			continue
		}
		codes := append([]string(nil), cell.Failures...)
		// The summary code first, as the seed receipt lists it; then the rest in gate order.
		sort.SliceStable(codes, func(i, j int) bool {
			return codes[i] == capacity.CodePassesFailedLoadSLO && codes[j] != capacity.CodePassesFailedLoadSLO
		})
		var lines []string
		for _, cd := range codes {
			lines = append(lines, failureWords(cd)+" ("+code(cd)+")")
		}
		rej = append(rej, []string{point(cell.Slots, cell.Clients), strings.Join(lines, "<br>")})
	}
	w.heading(3, "Rejected points")
	if len(rej) == 0 {
		w.line("None: every cell passes every gate.")
		w.blank()
	} else {
		w.table([]string{"Point", "Exact gate failures"}, "ll", rej)
	}
}

func pointsText(ps []capacity.PointRef) string {
	var out []string
	for _, p := range ps {
		out = append(out, point(p.Slots, p.Clients))
	}
	return strings.Join(out, ", ")
}

func gateTable(w *mdWriter, p *capacity.Plan, cell capacity.CellResult) {
	check := map[string]capacity.GateCheck{}
	for _, g := range cell.Checks {
		check[g.Gate] = g
	}
	res := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	yes := func(ok bool) string {
		if ok {
			return "Yes"
		}
		return "No"
	}
	var rows [][]string
	if g, ok := check["load_slo_every_pass"]; ok {
		name := "Every pass meets the load SLO"
		switch len(p.Passes) {
		case 1:
			name = "The pass meets the load SLO"
		case 2:
			name = "Both counterbalanced passes meet load SLO"
		}
		rows = append(rows, []string{name, yes(g.Passed), res(g.Passed)})
	}
	for _, ps := range p.Passes {
		title := strings.ToUpper(ps[:1]) + ps[1:] + " pass"
		for _, gd := range []struct{ gate, what string }{{":ttft_ms_p95", "observed-p95 TTFT"}, {":e2e_latency_ms_p95", "observed-p95 E2E"}} {
			if g, ok := check[ps+gd.gate]; ok {
				rows = append(rows, []string{title + ": " + gd.what, fp(g.Observed, func(x float64) string { return f1(x) + " ms" }) + " / " + fp(g.Limit, func(x float64) string { return f1(x) + " ms" }), res(g.Passed)})
			}
		}
	}
	if g, ok := check["quality"]; ok {
		rows = append(rows, []string{"Quality floor and retention", yes(g.Passed), res(g.Passed)})
	}
	if g, ok := check["peak_rss_mib"]; ok {
		rows = append(rows, []string{"Peak server RSS", fp(g.Observed, func(x float64) string { return f1(x) + " MiB" }) + " / " + fp(g.Limit, func(x float64) string { return f1(x) + " MiB" }), res(g.Passed)})
	}
	rows = append(rows, []string{"Completion rate, worst pass", pct(cell.CompletionRateWorst) + " / " + pct(p.Limits.CompletionRateMin), res(cell.CompletionRateWorst >= p.Limits.CompletionRateMin)})
	if g, ok := check["generation_rate_spread"]; ok {
		rows = append(rows, []string{"Generation-rate spread", fp(g.Observed, pct) + " / " + fp(g.Limit, pct), res(g.Passed)})
	}
	if g, ok := check["e2e_p95_spread"]; ok {
		rows = append(rows, []string{"Observed-p95 E2E spread", fp(g.Observed, pct) + " / " + fp(g.Limit, pct), res(g.Passed)})
	}
	if g, ok := check["backend_markers_required"]; ok {
		rows = append(rows, []string{"Required backend markers present", yes(g.Passed), res(g.Passed)})
	}
	if g, ok := check["backend_markers_forbidden"]; ok {
		rows = append(rows, []string{"Forbidden backend markers absent", yes(g.Passed), res(g.Passed)})
	}
	w.table([]string{"Gate", "Observed", "Result"}, "lrl", rows)
}

func machineRow(m *runManifest) []string {
	if m == nil || m.Machine == nil {
		return []string{"Machine fingerprint", "not recorded in the run manifest"}
	}
	mc := m.Machine
	return []string{"Machine fingerprint", code(mc.String()) + " · " + code(mc.OS+"/"+mc.Arch)} // no host name: receipts are shared
}
