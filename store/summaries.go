package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Study summaries (schema 10): derived blobs a reader computes from a study's rows and keeps
// so it need not decode every row again (the overview's series: docs/overview.md). They are
// not the record: nothing journals, hashes, exports or imports them, and a reader uses one only
// when its version is the study's current state.

// Summary is one stored summary of a study.
type Summary struct {
	Version string
	Payload []byte
}

// PutStudySummary keeps payload as the summary of kind of studyID at version (the study's
// state it was computed from). Insert-only: a summary already kept for that study, kind and
// version stays as it is. A read-only notebook refuses it (ErrReadOnly).
func (n *Notebook) PutStudySummary(ctx context.Context, studyID int64, kind, version string, payload []byte) error {
	if kind == "" || version == "" {
		return fmt.Errorf("study %d summary: empty kind or version", studyID)
	}
	if payload == nil {
		payload = []byte{}
	}
	return n.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO study_summaries (study_id, kind, version, payload, created_at) VALUES (?, ?, ?, ?, ?)",
			studyID, kind, version, payload, n.nowText())
		if err != nil {
			return fmt.Errorf("study %d summary %s: %w", studyID, kind, err)
		}
		return nil
	})
}

// StudySummaries reads every summary of kind in one query: by study, the newest first (a study
// that changed has one per version it was summarised at). A notebook of an older schema (read
// only) has none.
func (n *Notebook) StudySummaries(ctx context.Context, kind string) (map[int64][]Summary, error) {
	out := map[int64][]Summary{}
	if ok, err := hasTable(ctx, n.rdb, "study_summaries"); err != nil || !ok {
		return out, err
	}
	rows, err := n.rdb.QueryContext(ctx, "SELECT study_id, version, payload FROM study_summaries WHERE kind = ? ORDER BY study_id, created_at DESC, version", kind)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var s Summary
		if err := rows.Scan(&id, &s.Version, &s.Payload); err != nil {
			return nil, err
		}
		out[id] = append(out[id], s)
	}
	return out, rows.Err()
}
