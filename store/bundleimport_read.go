package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"sparkbench/runner/telemetry"
)

// Reading imported studies back: where one came from, its kept journal excerpt, and the
// excerpt's chain walked again.

const importedCols = `id, study_id, bundle_sha256, kind, source, sparkbench, origin_study_id, origin_name, origin_status,
	origin_head_seq, origin_head_hash, excerpt_first_seq, excerpt_last_seq, excerpt_prev_hash, excerpt_last_hash,
	machines_json, imported_at, journal_seq`

func scanOrigin(sc interface{ Scan(...any) error }) (ImportedOrigin, error) {
	var o ImportedOrigin
	var machines string
	err := sc.Scan(&o.ImportID, &o.StudyID, &o.BundleSHA256, &o.Kind, &o.Source, &o.Sparkbench, &o.OriginStudyID, &o.OriginName,
		&o.OriginStatus, &o.OriginHeadSeq, &o.OriginHeadHash, &o.FirstSeq, &o.LastSeq, &o.FirstPrevHash, &o.LastHash,
		&machines, &o.ImportedAt, &o.JournalSeq)
	o.Machines = json.RawMessage(machines)
	return o, err
}

func importedWhere(ctx context.Context, q querier, where string, arg any) (ImportedOrigin, bool, error) {
	if ok, err := hasTable(ctx, q, "imported_bundles"); err != nil || !ok {
		return ImportedOrigin{}, false, err
	}
	o, err := scanOrigin(q.QueryRowContext(ctx, "SELECT "+importedCols+" FROM imported_bundles WHERE "+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return ImportedOrigin{}, false, nil
	}
	return o, err == nil, err
}

// ImportedOriginOf says where a study was imported from (found false: not imported from a bundle).
func (n *Notebook) ImportedOriginOf(ctx context.Context, studyID int64) (ImportedOrigin, bool, error) {
	return importedWhere(ctx, n.rdb, "study_id = ?", studyID)
}

// ImportedBundleBySHA finds the study a bundle (the SHA-256 of its SHA256SUMS) was imported as.
func (n *Notebook) ImportedBundleBySHA(ctx context.Context, sha string) (ImportedOrigin, bool, error) {
	return importedWhere(ctx, n.rdb, "bundle_sha256 = ?", sha)
}

// ImportedJournal is an imported study's journal excerpt, entry by entry as its bundle held it.
func (n *Notebook) ImportedJournal(ctx context.Context, importID int64) ([]BundleEntry, error) {
	rows, err := n.rdb.QueryContext(ctx, "SELECT seq, kind, COALESCE(study_id, 0), at, payload, prev_hash, hash FROM imported_journal WHERE import_id = ? ORDER BY seq", importID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BundleEntry
	for rows.Next() {
		var e BundleEntry
		var payload string
		if err := rows.Scan(&e.Seq, &e.Kind, &e.StudyID, &e.At, &payload, &e.PrevHash, &e.Hash); err != nil {
			return nil, err
		}
		e.Payload = json.RawMessage(payload)
		out = append(out, e)
	}
	return out, rows.Err()
}

// CheckImportedChain re-walks an imported study's kept journal excerpt: each entry's hash from
// its content and the previous hash, from the recorded first prev_hash to the recorded last
// hash. It names the first entry that does not hold.
func (n *Notebook) CheckImportedChain(ctx context.Context, o ImportedOrigin) error {
	entries, err := n.ImportedJournal(ctx, o.ImportID)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return fmt.Errorf("imported study %d: its journal excerpt is missing", o.StudyID)
	}
	prev := o.FirstPrevHash
	for i, e := range entries {
		if want := o.FirstSeq + int64(i); e.Seq != want {
			return fmt.Errorf("imported study %d: excerpt entry %d where %d was expected (entries missing)", o.StudyID, e.Seq, want)
		}
		if e.PrevHash != prev {
			return fmt.Errorf("imported study %d: excerpt entry %d: prev_hash %s is not the previous entry's hash %s", o.StudyID, e.Seq, e.PrevHash, prev)
		}
		h, err := ChainHash(prev, EntryBytes(e.Seq, e.Kind, e.StudyID, e.At, e.Payload))
		if err != nil {
			return err
		}
		if h != e.Hash {
			return fmt.Errorf("imported study %d: excerpt entry %d (%s) hashes to %s, recorded %s", o.StudyID, e.Seq, e.Kind, h, e.Hash)
		}
		prev = h
	}
	if prev != o.LastHash || entries[len(entries)-1].Seq != o.LastSeq {
		return fmt.Errorf("imported study %d: the excerpt ends at hash %s, the import recorded %s", o.StudyID, prev, o.LastHash)
	}
	return nil
}

// insertTelemetryTx adds a leg's telemetry samples, numbered from first, inside the caller's
// transaction: AddTelemetry's after the samples the leg has, an imported leg's (from its
// telemetry.jsonl) from 0.
func insertTelemetryTx(ctx context.Context, tx *sql.Tx, legID, studyID, first int64, samples []telemetry.Sample) error {
	if len(samples) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, "INSERT INTO telemetry_samples (leg_id, seq, study_id, source, t_ns, points_json, error) VALUES (?, ?, ?, ?, ?, ?, ?)")
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i, s := range samples {
		pts := s.Points
		if pts == nil {
			pts = []telemetry.Point{}
		}
		b, err := json.Marshal(pts)
		if err != nil {
			return err
		}
		if _, err := stmt.ExecContext(ctx, legID, first+int64(i), studyID, s.Source, int64(s.T), string(b), s.Err); err != nil {
			return fmt.Errorf("telemetry sample %d: %w", i, err)
		}
	}
	return nil
}

// ErrImportedStudy: a study imported from a receipt bundle is the bundle's record: it is not
// run here (its status never changes).
var ErrImportedStudy = errors.New("imported from a receipt bundle")

// refuseImported refuses a change of status (a run) of a study imported from a bundle.
func refuseImported(ctx context.Context, q querier, studyID int64) error {
	o, found, err := importedWhere(ctx, q, "study_id = ?", studyID)
	if err != nil || !found {
		return err
	}
	return fmt.Errorf("study %d is %w (%s, origin study %d %q): it is not run here; register its plan as a new study to run it on this machine",
		studyID, ErrImportedStudy, o.Source, o.OriginStudyID, o.OriginName)
}
