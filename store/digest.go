package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Transcript returns a leg's transcript, decompressed.
func (n *Notebook) Transcript(ctx context.Context, legID int64) ([]byte, error) {
	var out bytes.Buffer
	_, err := transcriptDigest(ctx, n.rdb, legID, &out)
	return out.Bytes(), err
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func transcriptDigest(ctx context.Context, q querier, legID int64, w io.Writer) (string, error) {
	rows, err := q.QueryContext(ctx, "SELECT data FROM transcript_chunks WHERE leg_id = ? ORDER BY seq", legID)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	h := sha256.New()
	dst := io.Writer(h)
	if w != nil {
		dst = io.MultiWriter(h, w)
	}
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return "", err
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return "", &transcriptDamage{legID, err}
		}
		if _, err := io.Copy(dst, zr); err != nil {
			return "", &transcriptDamage{legID, err}
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

type digest struct {
	BenchRows, RequestRows int64
	BatchedRows            int64 // llama-batched-bench rows (schema 7)
	TelemetryRows          int64 // telemetry samples (schema 8)
	SamplesSHA256          string
	TranscriptSHA256       string
}

// legDigest hashes a leg's rows: for each row (bench rows by seq, then request rows by seq)
// each column value as type letter + text, 0x1f between values, 0x1e after each row.
func legDigest(ctx context.Context, q querier, legID int64) (digest, error) {
	var d digest
	h := sha256.New()
	for _, t := range []struct {
		sql   string
		count *int64
		tag   string
	}{
		{"SELECT " + benchDigestCols + " FROM bench_rows WHERE leg_id = ? ORDER BY seq", &d.BenchRows, "bench\n"},
		{"SELECT " + requestDigestCols + " FROM request_samples WHERE leg_id = ? ORDER BY seq", &d.RequestRows, "request\n"},
	} {
		h.Write([]byte(t.tag))
		n, err := hashRows(ctx, q, h, t.sql, legID)
		if err != nil {
			return d, err
		}
		*t.count = n
	}
	// llama-batched-bench rows (schema 7), then telemetry samples (schema 8), are hashed after
	// the others, and only when the leg has some, so the digest of every other leg is what it
	// was before they existed.
	for _, t := range []struct {
		table, cols, tag string
		count            *int64
	}{{"batched_samples", batchedDigestCols, "batched\n", &d.BatchedRows}, {"telemetry_samples", telemetryDigestCols, "telemetry\n", &d.TelemetryRows}} {
		if err := hashLaterRows(ctx, q, h, t.table, t.cols, t.tag, legID, t.count); err != nil {
			return d, err
		}
	}
	d.SamplesSHA256 = hex.EncodeToString(h.Sum(nil))
	var err error
	d.TranscriptSHA256, err = transcriptDigest(ctx, q, legID, nil)
	return d, err
}

// hashRows writes each row the query returns into h: every column value as type letter +
// text, 0x1f between values, 0x1e after the row; it returns how many rows there were.
func hashRows(ctx context.Context, q querier, h io.Writer, query string, args ...any) (int64, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var n int64
	var buf []byte
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		buf = buf[:0]
		for i, v := range vals {
			if i > 0 {
				buf = append(buf, 0x1f)
			}
			buf = appendDigestValue(buf, v)
		}
		buf = append(buf, 0x1e)
		h.Write(buf)
		n++
	}
	return n, rows.Err()
}

func appendDigestValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 'n')
	case int64:
		return strconv.AppendInt(append(b, 'i'), x, 10)
	case float64:
		return strconv.AppendFloat(append(b, 'f'), x, 'g', -1, 64)
	case string:
		return append(append(b, 's'), x...)
	case []byte:
		return append(append(b, 's'), x...)
	case bool:
		if x {
			return append(b, 'i', '1')
		}
		return append(b, 'i', '0')
	case time.Time:
		return append(append(b, 's'), FormatTime(x)...)
	}
	return append(append(b, '?'), fmt.Sprint(v)...)
}

// hashLaterRows counts a leg's rows in a table a later schema added (none when the notebook
// predates it) and, when there are some, writes tag and the rows into h.
func hashLaterRows(ctx context.Context, q querier, h io.Writer, table, cols, tag string, legID int64, count *int64) error {
	if ok, err := hasTable(ctx, q, table); err != nil || !ok {
		return err
	}
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM "+table+" WHERE leg_id = ?", legID).Scan(count); err != nil {
		return err
	}
	if *count == 0 {
		return nil
	}
	_, _ = h.Write([]byte(tag))
	_, err := hashRows(ctx, q, h, "SELECT "+cols+" FROM "+table+" WHERE leg_id = ? ORDER BY seq", legID)
	return err
}

// gunzipSize is the size of a gzip chunk's data decompressed.
func gunzipSize(data []byte) (int64, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	return io.Copy(io.Discard, zr)
}

// transcriptDamage is a transcript chunk that does not decompress.
type transcriptDamage struct {
	leg int64
	err error
}

func (e *transcriptDamage) Error() string { return fmt.Sprintf("leg %d transcript: %v", e.leg, e.err) }
func (e *transcriptDamage) Unwrap() error { return e.err }
