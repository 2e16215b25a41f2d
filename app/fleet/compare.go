package fleet

import (
	"context"
	"fmt"
	"io"
	"sort"

	"sparkbench/app/workbench"
	"sparkbench/store"
)

// Row is one cell (model, test, depth, config) with each host's mean t/s (0: no result).
type Row struct {
	Model, Test, Config string
	Depth               int64
	Mean                map[string]float64
}

// Compare reads each member's results and lines the same cell up across hosts, in the plan's
// cell order.
func Compare(ctx context.Context, nb *store.Notebook, ms []Member) ([]Row, error) {
	idx := map[string]int{}
	var rows []Row
	for _, m := range ms {
		rep, err := workbench.ShowThroughput(ctx, nb, m.StudyID)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Host, err)
		}
		for _, c := range rep.Results {
			k := fmt.Sprintf("%s|%s|%d|%s", c.Model, c.Test, c.Depth, c.Config)
			i, ok := idx[k]
			if !ok {
				i = len(rows)
				idx[k] = i
				rows = append(rows, Row{Model: c.Model, Test: c.Test, Depth: c.Depth, Config: c.Config, Mean: map[string]float64{}})
			}
			rows[i].Mean[m.Host] = c.Mean
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.Test != b.Test {
			return a.Test < b.Test
		}
		return a.Depth < b.Depth
	})
	return rows, nil
}

// WriteTable prints the rows, one column per host in the members' order; a host without the
// cell shows "—".
func WriteTable(w io.Writer, ms []Member, rows []Row) {
	fmt.Fprintf(w, "%-10s %-8s %6s", "model", "test", "depth")
	for _, m := range ms {
		fmt.Fprintf(w, " %14s", m.Host)
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "%-10s %-8s %6d", r.Model, r.Test, r.Depth)
		for _, m := range ms {
			if v, ok := r.Mean[m.Host]; ok {
				fmt.Fprintf(w, " %14.2f", v)
			} else {
				fmt.Fprintf(w, " %14s", "—")
			}
		}
		fmt.Fprintln(w)
	}
}
