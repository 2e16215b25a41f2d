package store

import (
	"context"
	"encoding/json"
	"strings"

	"sparkbench/app/study"
)

// BenchHistory is what the notebook measured before on the model file with this SHA-256: the
// result rows and wall times of its last maxLegs finished, ok bench legs (any study).
func (n *Notebook) BenchHistory(ctx context.Context, modelSHA string, maxLegs int) (study.BenchHistory, error) {
	var h study.BenchHistory
	rows, err := n.rdb.QueryContext(ctx, `SELECT l.id, l.started_at, l.ended_at FROM legs l JOIN artefacts a ON a.id = l.artefact_id
		WHERE a.sha256 = ? AND l.kind = 'bench' AND l.state = 'finished' AND l.class = 'ok' AND l.ended_at IS NOT NULL
		ORDER BY l.id DESC LIMIT ?`, modelSHA, maxLegs)
	if err != nil {
		return h, err
	}
	var ids []any
	for rows.Next() {
		var id int64
		var start, end string
		if err := rows.Scan(&id, &start, &end); err != nil {
			rows.Close()
			return h, err
		}
		h.Legs = append(h.Legs, study.HistoryLeg{ID: id, Wall: mustParseTime(end).Sub(mustParseTime(start))})
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return h, err
	}
	q := `SELECT leg_id, config_id, COALESCE(n_prompt, 0), COALESCE(n_gen, 0), COALESCE(n_depth, 0), COALESCE(avg_ns, 0), COALESCE(samples_ns, '[]')
		FROM bench_samples WHERE leg_id IN (?` + strings.Repeat(",?", len(ids)-1) + `) ORDER BY leg_id, seq`
	rows, err = n.rdb.QueryContext(ctx, q, ids...)
	if err != nil {
		return h, err
	}
	defer rows.Close()
	for rows.Next() {
		var t study.HistoryTest
		var samples string
		if err := rows.Scan(&t.LegID, &t.Config, &t.NPrompt, &t.NGen, &t.Depth, &t.AvgNs, &samples); err != nil {
			return h, err
		}
		var ns []json.Number
		if json.Unmarshal([]byte(samples), &ns) == nil {
			t.Reps = len(ns)
			for _, x := range ns {
				f, _ := x.Float64()
				t.SamplesNs = append(t.SamplesNs, f)
			}
		}
		h.Tests = append(h.Tests, t)
	}
	return h, rows.Err()
}
