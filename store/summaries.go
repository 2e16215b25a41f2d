package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
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
	return n.PutStudySummaries(ctx, kind, map[int64]Summary{studyID: {Version: version, Payload: payload}})
}

// PutStudySummaries is PutStudySummary of several studies in one transaction.
func (n *Notebook) PutStudySummaries(ctx context.Context, kind string, batch map[int64]Summary) error {
	for id, s := range batch {
		if kind == "" || s.Version == "" {
			return fmt.Errorf("study %d summary: empty kind or version", id)
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return n.write(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, "INSERT OR IGNORE INTO study_summaries (study_id, kind, version, payload, created_at) VALUES (?, ?, ?, ?, ?)")
		if err != nil {
			return err
		}
		defer stmt.Close()
		now := n.nowText()
		for id, s := range batch {
			payload := s.Payload
			if payload == nil {
				payload = []byte{}
			}
			if _, err := stmt.ExecContext(ctx, id, kind, s.Version, payload, now); err != nil {
				return fmt.Errorf("study %d summary %s: %w", id, kind, err)
			}
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
	// rowid order is insertion order (no sort of the blobs): each study's list is reversed below
	rows, err := n.rdb.QueryContext(ctx, "SELECT study_id, version, payload FROM study_summaries WHERE kind = ? ORDER BY rowid", kind)
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
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, l := range out {
		slices.Reverse(l)
	}
	return out, nil
}
