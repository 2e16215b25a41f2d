package workbench

import (
	"fmt"
	"strings"

	"sparkbench/app/capacity"
)

// servingValidity reads a capacity.validity entry: what the per-sample validity checks of a
// serving plan's probes caught, naming only the checks that fired (docs/serving.md).
func servingValidity(m jmap) string {
	var requests, contaminated, mismatch, compared, flagged, behind, bound, unsustained int64
	var timed []string
	probes := m.list("probes")
	for _, it := range probes {
		o, ok := it.(map[string]any)
		if !ok {
			continue
		}
		p := jmap(o)
		requests += p.int("requests")
		contaminated += p.int("contaminated")
		mismatch += p.int("token_mismatch")
		if t := p.obj("timing"); t != nil {
			compared += t.int("compared")
			if f := t.int("flagged"); f > 0 {
				flagged += f
				rate, _ := p.num("offered_rate")
				timed = append(timed, fmt.Sprintf("probe %d at %s req/s: %d", p.int("probe"), figure(rate), f))
			}
		}
		if b, _ := p["behind_schedule"].(bool); b {
			behind++
		}
		if b, _ := p["client_bound"].(bool); b {
			bound++
		}
		for _, f := range p.list("failures") {
			if f == capacity.CodeNotSustained {
				unsustained++
			}
		}
	}
	head := fmt.Sprintf("serving validity over %d probe(s), %d requests: ", len(probes), requests)
	var fired []string
	if contaminated > 0 {
		fired = append(fired, fmt.Sprintf("%d prompt-cache contaminated (excluded)", contaminated))
	}
	if mismatch > 0 {
		fired = append(fired, fmt.Sprintf("%d token-count mismatch(es)", mismatch))
	}
	if flagged > 0 {
		fired = append(fired, fmt.Sprintf("client/server timing disagreement in %d of %d compared (%s)", flagged, compared, strings.Join(timed, "; ")))
	}
	if behind > 0 {
		fired = append(fired, fmt.Sprintf("%d probe(s) behind schedule", behind))
	}
	if bound > 0 {
		fired = append(fired, fmt.Sprintf("%d probe(s) client-bound", bound))
	}
	if unsustained > 0 {
		fired = append(fired, fmt.Sprintf("%d probe(s) not sustained (completions fell behind arrivals)", unsustained))
	}
	if len(fired) == 0 {
		return head + "every check passed"
	}
	return head + strings.Join(fired, ", ")
}

// networkPath is a capacity.network entry: a server lifetime on a bench host, the path its
// clients took and the round-trip floor measured over it.
func networkPath(m jmap) string {
	n := m.obj("network")
	s := fmt.Sprintf("server lifetime %s on host %s: %s", m.str("lifetime"), n.str("host"), n.str("path"))
	if e := n.str("rtt_error"); e != "" {
		s += "; round-trip floor not measured: " + clip(e, 120)
	} else {
		s += fmt.Sprintf("; round-trip floor %s ms (median %s ms, %d GET /health)", figure(numOr(n, "rtt_min_ms")), figure(numOr(n, "rtt_median_ms")), n.int("rtt_probes"))
	}
	if e := n.str("stop_error"); e != "" {
		s += "; " + clip(e, 160)
	}
	return s
}
