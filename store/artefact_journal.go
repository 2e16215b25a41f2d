package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
)

// A model record (an artefacts row: the hash cache's key, the computed and expected SHA-256,
// and the header fields a receipt shows) is journaled as it stands after every write that
// changes it (KindArtefactRecorded, filed under no study), so verify holds every column to the
// last entry that names the row. Every value is kept as text: a nanosecond time, a device or
// an inode does not fit a JSON number read as a float.

// artefactRecord is an artefacts row as its entry holds it.
type artefactRecord map[string]string

// artefactRecordCols are the columns an entry holds, in the order artefactRecordTx reads them.
var artefactRecordCols = []string{"path", "size_bytes", "mtime_ns", "dev", "inode", "ctime_ns", "sha256", "expected_sha256",
	"name", "architecture", "quant", "n_params", "metadata_json", "source", "revision"}

const artefactRecordList = `CAST(path AS TEXT), CAST(size_bytes AS TEXT), CAST(mtime_ns AS TEXT), CAST(dev AS TEXT),
	CAST(inode AS TEXT), CAST(ctime_ns AS TEXT), COALESCE(CAST(sha256 AS TEXT), ''), COALESCE(CAST(expected_sha256 AS TEXT), ''),
	CAST(name AS TEXT), CAST(architecture AS TEXT), CAST(quant AS TEXT), COALESCE(CAST(n_params AS TEXT), ''),
	CAST(metadata_json AS TEXT), CAST(source AS TEXT), CAST(revision AS TEXT)`

const artefactRecordSelect = "SELECT " + artefactRecordList + " FROM artefacts"

func scanArtefactRecord(sc interface{ Scan(...any) error }, extra ...any) (artefactRecord, error) {
	vals := make([]sql.NullString, len(artefactRecordCols))
	ptrs := make([]any, 0, len(vals)+len(extra))
	for i := range vals {
		ptrs = append(ptrs, &vals[i])
	}
	if err := sc.Scan(append(ptrs, extra...)...); err != nil {
		return nil, err
	}
	r := artefactRecord{}
	for i, c := range artefactRecordCols {
		r[c] = vals[i].String
	}
	return r, nil
}

// artefactRecordTx reads row id as an entry holds it (sql.ErrNoRows: no such row).
func artefactRecordTx(tx *sql.Tx, id int64) (artefactRecord, error) {
	return scanArtefactRecord(tx.QueryRow(artefactRecordSelect+" WHERE id = ?", id))
}

// journalArtefactTx journals row id as it now stands, unless it equals before (a write that
// changed nothing but the bookkeeping time: a cache hit recorded again). before nil: the row
// is new ("created": true).
func (n *Notebook) journalArtefactTx(tx *sql.Tx, id int64, before artefactRecord) error {
	now, err := artefactRecordTx(tx, id)
	if err != nil {
		return err
	}
	if before != nil && maps.Equal(before, now) {
		return nil
	}
	p := map[string]any{"artefact": id}
	for k, v := range now {
		p[k] = v
	}
	if before == nil {
		p["created"] = true
	}
	_, err = n.appendJournalTx(tx, KindArtefactRecorded, 0, p)
	return err
}

// artefactEntryRecord reads an entry's payload back into a record and the row id it names.
func artefactEntryRecord(payload string) (int64, artefactRecord, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		return 0, nil, err
	}
	var id int64
	if err := json.Unmarshal(p["artefact"], &id); err != nil {
		return 0, nil, err
	}
	r := artefactRecord{}
	for _, c := range artefactRecordCols {
		var v string
		raw, ok := p[c]
		if !ok {
			return id, nil, &json.UnsupportedValueError{Str: "no " + c}
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return id, nil, err
		}
		r[c] = v
	}
	return id, r, nil
}

// checkArtefacts holds every model record to the last artefact.recorded entry that names it.
// A record with none was written before records were journaled (ids below the first one an
// entry created): the older rule, counted; one above it has no business being without one. An
// entry whose record is gone is damage too (records are never deleted). A record journaled
// after the chain was walked is not judged.
func (n *Notebook) checkArtefacts(ctx context.Context, rep *VerifyReport) (*BrokenEntry, error) {
	var firstCreated sql.NullInt64
	if err := n.rdb.QueryRowContext(ctx, `SELECT MIN(json_extract(payload, '$.artefact')) FROM journal WHERE kind = ? AND seq <= ?
		AND json_extract(payload, '$.created') = 1`, KindArtefactRecorded, rep.HeadSeq).Scan(&firstCreated); err != nil {
		return nil, err
	}
	var any int
	if err := n.rdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM journal WHERE kind = ? AND seq <= ? LIMIT 1)", KindArtefactRecorded, rep.HeadSeq).Scan(&any); err != nil {
		return nil, err
	}
	if any == 0 { // no record journaled yet (a notebook of an older version, maybe of an older schema)
		var older int64
		if err := n.rdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM artefacts").Scan(&older); err != nil {
			return nil, err
		}
		if older > 0 {
			rep.OlderRule = append(rep.OlderRule, OlderRuleCount{artefactOlderColumns, older, "model record"})
		}
		return nil, nil
	}
	var gone sql.NullInt64
	var goneSeq int64
	err := n.rdb.QueryRowContext(ctx, `SELECT json_extract(payload, '$.artefact'), seq FROM journal j WHERE kind = ? AND seq <= ?
		AND NOT EXISTS (SELECT 1 FROM artefacts a WHERE a.id = json_extract(j.payload, '$.artefact')) ORDER BY seq LIMIT 1`,
		KindArtefactRecorded, rep.HeadSeq).Scan(&gone, &goneSeq)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	if err == nil {
		return rowDamage(goneSeq, KindArtefactRecorded, "artefacts", gone.Int64, "id", "the journal recorded this model record, and the notebook no longer holds it (its row was deleted, or its id changed)"), nil
	}
	rows, err := n.rdb.QueryContext(ctx, "SELECT "+artefactRecordList+`, a.id, COALESCE(j.seq, 0), COALESCE(j.payload, '') FROM artefacts a
		LEFT JOIN journal j ON j.seq = (SELECT MAX(seq) FROM journal WHERE kind = ? AND json_extract(payload, '$.artefact') = a.id) ORDER BY a.id`,
		KindArtefactRecorded)
	if err != nil {
		return nil, err
	}
	type held struct {
		id, seq int64
		payload string
		rec     artefactRecord
	}
	var all []held
	for rows.Next() {
		var h held
		rec, err := scanArtefactRecord(rows, &h.id, &h.seq, &h.payload)
		if err != nil {
			rows.Close()
			return nil, err
		}
		h.rec = rec
		all = append(all, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var older int64
	for _, h := range all {
		switch {
		case h.seq > rep.HeadSeq:
			continue // recorded again after the chain was walked
		case h.seq == 0 && (!firstCreated.Valid || h.id < firstCreated.Int64):
			older++
			continue
		case h.seq == 0:
			return rowDamage(0, KindArtefactRecorded, "artefacts", h.id, "id", "no artefact.recorded entry records this model record (the row was written outside the store, or its id changed)"), nil
		}
		id, rec, err := artefactEntryRecord(h.payload)
		if err != nil || id != h.id {
			return rowDamage(h.seq, KindArtefactRecorded, "artefacts", h.id, "id", fmt.Sprintf("its entry's payload does not read (%v)", err)), nil
		}
		for _, c := range artefactRecordCols {
			if h.rec[c] != rec[c] {
				return rowDamage(h.seq, KindArtefactRecorded, "artefacts", h.id, c, fmt.Sprintf("%q, the journal recorded %q", h.rec[c], rec[c])), nil
			}
		}
		rep.RecordsChecked++
	}
	if older > 0 {
		rep.OlderRule = append(rep.OlderRule, OlderRuleCount{artefactOlderColumns, older, "model record"})
	}
	return nil, nil
}

const artefactOlderColumns = "artefacts' columns (the model's path, size, times, hashes, header and source)"
