package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"sparkbench/app/canon"
	"sparkbench/runner/telemetry"
)

// telemetryDigestCols are hashed into a leg's samples_sha256 (after its other rows, only
// when it has telemetry).
const telemetryDigestCols = "seq, source, t_ns, points_json, error"

// AddTelemetry appends a running leg's telemetry samples (their T on the leg's clock) in one
// transaction, after the samples it already has.
func (n *Notebook) AddTelemetry(ctx context.Context, legID int64, samples []telemetry.Sample) error {
	if len(samples) == 0 {
		return nil
	}
	return n.write(ctx, func(tx *sql.Tx) error {
		var studyID, next int64
		if err := tx.QueryRowContext(ctx, "SELECT study_id FROM legs WHERE id = ?", legID).Scan(&studyID); err != nil {
			return fmt.Errorf("telemetry for leg %d: %w", legID, err)
		}
		if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(seq) + 1, 0) FROM telemetry_samples WHERE leg_id = ?", legID).Scan(&next); err != nil {
			return err
		}
		if err := insertTelemetryTx(ctx, tx, legID, studyID, next, samples); err != nil {
			return fmt.Errorf("telemetry for leg %d: %w", legID, err)
		}
		return nil
	})
}

// Telemetry reads a leg's telemetry samples back, in the order they were added.
func (n *Notebook) Telemetry(ctx context.Context, legID int64) ([]telemetry.Sample, error) {
	ok, err := hasTable(ctx, n.rdb, "telemetry_samples")
	if err != nil || !ok {
		return nil, err
	}
	rows, err := n.rdb.QueryContext(ctx, "SELECT source, t_ns, points_json, error FROM telemetry_samples WHERE leg_id = ? ORDER BY seq", legID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []telemetry.Sample
	for rows.Next() {
		var s telemetry.Sample
		var t int64
		var pts string
		if err := rows.Scan(&s.Source, &t, &pts, &s.Err); err != nil {
			return nil, err
		}
		s.T = time.Duration(t)
		if err := json.Unmarshal([]byte(pts), &s.Points); err != nil {
			return nil, fmt.Errorf("leg %d telemetry: %w", legID, err)
		}
		if len(s.Points) == 0 {
			s.Points = nil
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Telemetry reads a leg's telemetry samples for study.Show (study.TelemetryReader).
func (r StudyRecorder) Telemetry(ctx context.Context, legID int64) ([]telemetry.Sample, error) {
	return r.N.Telemetry(ctx, legID)
}

// TelemetryJSONL is a leg's telemetry samples in their canonical serialization
// (canon.AppendTelemetryLine, seq order): the bytes of a bundle's telemetry.jsonl, whose
// SHA-256 leg.finished journals as telemetry_sha256. Empty for a leg without samples.
func (n *Notebook) TelemetryJSONL(ctx context.Context, legID int64) ([]byte, error) {
	return telemetryJSONL(ctx, n.rdb, legID)
}

func telemetryJSONL(ctx context.Context, q querier, legID int64) ([]byte, error) {
	ok, err := hasTable(ctx, q, "telemetry_samples")
	if err != nil || !ok {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, "SELECT seq, source, t_ns, points_json, error FROM telemetry_samples WHERE leg_id = ? ORDER BY seq", legID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var b []byte
	for rows.Next() {
		var seq, t int64
		var src, pts, e string
		if err := rows.Scan(&seq, &src, &t, &pts, &e); err != nil {
			return nil, err
		}
		b = canon.AppendTelemetryLine(b, seq, src, t, []byte(pts), e)
	}
	return b, rows.Err()
}
