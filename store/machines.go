package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The notebook's machines, builds, artefacts.

// Machine is a bench machine as the app measured it.
type Machine struct {
	ID              int64
	Fingerprint     string // empty: SHA-256 of the canonical fields below
	Hostname        string
	CPUModel        string
	Cores           int
	RAMBytes        int64
	OS              string
	Kernel          string
	GPU             string
	Driver          string
	MemBandwidthGBs float64 // 0: not measured
	Info            json.RawMessage
	CreatedAt       time.Time
}

// UpsertMachine stores a machine (once per fingerprint) and returns its id.
func (n *Notebook) UpsertMachine(ctx context.Context, m Machine) (int64, error) {
	info := jsonOr(m.Info, "{}")
	if len(m.Info) == 0 {
		info = "{}"
	}
	if m.Fingerprint == "" {
		b, err := CanonicalJSON(map[string]any{"hostname": m.Hostname, "cpu": m.CPUModel, "cores": m.Cores, "ram": m.RAMBytes,
			"os": m.OS, "kernel": m.Kernel, "gpu": m.GPU, "driver": m.Driver, "bandwidth": m.MemBandwidthGBs, "info": json.RawMessage(info)})
		if err != nil {
			return 0, err
		}
		m.Fingerprint = SHA256Hex(b)
	}
	var bw any
	if m.MemBandwidthGBs > 0 {
		bw = m.MemBandwidthGBs
	}
	var id int64
	err := n.write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRow("SELECT id FROM machines WHERE fingerprint = ?", m.Fingerprint).Scan(&id); err == nil {
			return nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		res, err := tx.Exec(`INSERT INTO machines (fingerprint, hostname, cpu_model, cores, ram_bytes, os, kernel, gpu, driver,
			mem_bandwidth_gbs, info_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			m.Fingerprint, m.Hostname, m.CPUModel, m.Cores, m.RAMBytes, m.OS, m.Kernel, m.GPU, m.Driver, bw, info, n.nowText())
		if err != nil {
			return fmt.Errorf("store machine: %w", err)
		}
		id, err = res.LastInsertId()
		return err
	})
	return id, err
}

// Machine reads one machine record.
func (n *Notebook) Machine(ctx context.Context, id int64) (Machine, error) {
	var m Machine
	var cores, ram sql.NullInt64
	var bw sql.NullFloat64
	var info, created string
	err := n.rdb.QueryRowContext(ctx, `SELECT id, fingerprint, hostname, cpu_model, cores, ram_bytes, os, kernel, gpu, driver,
		mem_bandwidth_gbs, info_json, created_at FROM machines WHERE id = ?`, id).
		Scan(&m.ID, &m.Fingerprint, &m.Hostname, &m.CPUModel, &cores, &ram, &m.OS, &m.Kernel, &m.GPU, &m.Driver, &bw, &info, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return m, fmt.Errorf("machine %d does not exist", id)
	}
	if err != nil {
		return m, err
	}
	m.Cores, m.RAMBytes, m.MemBandwidthGBs = int(cores.Int64), ram.Int64, bw.Float64
	m.Info = json.RawMessage(info)
	m.CreatedAt = mustParseTime(created)
	return m, nil
}

// Build reads one build record.
func (n *Notebook) Build(ctx context.Context, id int64) (Build, error) {
	var b Build
	var number sql.NullInt64
	var bins, created string
	err := n.rdb.QueryRowContext(ctx, `SELECT id, fingerprint, dir, version_line, build_number, commit_id, backends, binaries_json,
		created_at FROM builds WHERE id = ?`, id).
		Scan(&b.ID, &b.Fingerprint, &b.Dir, &b.VersionLine, &number, &b.Commit, &b.Backends, &bins, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return b, fmt.Errorf("build %d does not exist", id)
	}
	if err != nil {
		return b, err
	}
	b.BuildNumber = number.Int64
	b.Binaries = map[string]string{}
	if err := json.Unmarshal([]byte(bins), &b.Binaries); err != nil {
		return b, fmt.Errorf("build %d: binaries: %w", id, err)
	}
	b.CreatedAt = mustParseTime(created)
	return b, nil
}

// Build is a folder of llama.cpp binaries.
type Build struct {
	ID          int64
	Fingerprint string // empty: SHA-256 of version, commit, number, backends and binary hashes
	Dir         string
	VersionLine string
	BuildNumber int64
	Commit      string
	Backends    string
	Binaries    map[string]string // binary name -> SHA-256
	CreatedAt   time.Time
}

// UpsertBuild stores a build (once per fingerprint) and returns its id.
func (n *Notebook) UpsertBuild(ctx context.Context, b Build) (int64, error) {
	if b.Binaries == nil {
		b.Binaries = map[string]string{}
	}
	if b.Fingerprint == "" {
		c, err := CanonicalJSON(map[string]any{"version": b.VersionLine, "number": b.BuildNumber, "commit": b.Commit, "backends": b.Backends, "binaries": b.Binaries})
		if err != nil {
			return 0, err
		}
		b.Fingerprint = SHA256Hex(c)
	}
	var id int64
	err := n.write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRow("SELECT id FROM builds WHERE fingerprint = ?", b.Fingerprint).Scan(&id); err == nil {
			return nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		res, err := tx.Exec(`INSERT INTO builds (fingerprint, dir, version_line, build_number, commit_id, backends, binaries_json, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, b.Fingerprint, b.Dir, b.VersionLine, b.BuildNumber, b.Commit, b.Backends, jsonOr(b.Binaries, "{}"), n.nowText())
		if err != nil {
			return fmt.Errorf("store build: %w", err)
		}
		id, err = res.LastInsertId()
		return err
	})
	return id, err
}

// Artefact statuses (computed by SQLite from the two hashes).
const (
	ArtefactPending  = "PENDING"
	ArtefactVerified = "VERIFIED"
	ArtefactMismatch = "MISMATCH"
)

// Artefact is a GGUF model file. Status is PENDING until the computed SHA-256 equals the
// expected one (VERIFIED); a difference is MISMATCH.
type Artefact struct {
	ID             int64
	Path           string
	Size           int64
	MTime          time.Time
	Dev, Inode     uint64 // with path, size, mtime and ctime: the hash cache key
	CTime          time.Time
	SHA256         string // computed; "" until hashed
	ExpectedSHA256 string // entered by the user
	Status         string
	Name           string
	Architecture   string
	Quant          string
	NParams        int64
	Metadata       json.RawMessage // GGUF metadata
	Source         string
	Revision       string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// UpsertArtefact stores a model file under its hash cache key (path, size, mtime; the newest
// row of that key). A row's SHA-256, once computed, never changes: the legs that name the row
// had leg.started entries record it, and their receipts show it. So a file whose content
// changed under the same path, size and mtime (written in place, its mtime restored; or
// replaced by another of the same size) gets a new row with its new hash, keeping the expected
// hash entered for the path; the old row stays, naming what the earlier legs ran. An existing
// row of the same content keeps its hashes and gets the other fields the caller gives (and
// the file's device, inode and ctime) updated; a field left empty keeps the row's. Returns the
// stored row.
func (n *Notebook) UpsertArtefact(ctx context.Context, a Artefact) (Artefact, error) {
	meta := "{}"
	if len(a.Metadata) > 0 {
		meta = jsonOr(a.Metadata, "{}")
	}
	var np any
	if a.NParams > 0 {
		np = a.NParams
	}
	sum, expected := strings.ToLower(a.SHA256), strings.ToLower(a.ExpectedSHA256)
	var id int64
	err := n.write(ctx, func(tx *sql.Tx) error {
		now := n.nowText()
		var dev, inode, ctime int64
		var had, hadExpected sql.NullString
		err := tx.QueryRow("SELECT id, dev, inode, ctime_ns, sha256, expected_sha256 FROM artefacts WHERE path = ? AND size_bytes = ? AND mtime_ns = ? ORDER BY id DESC LIMIT 1",
			a.Path, a.Size, a.MTime.UnixNano()).Scan(&id, &dev, &inode, &ctime, &had, &hadExpected)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		sameFile := err == nil && dev == int64(a.Dev) && inode == int64(a.Inode) && ctime == ctimeNS(a.CTime)
		// Another content: a hash that differs from the row's, or no hash for a file that is
		// not the one the row's hash was computed from.
		otherContent := err == nil && had.Valid && (sum != "" && sum != had.String || sum == "" && !sameFile)
		if errors.Is(err, sql.ErrNoRows) || otherContent {
			if expected == "" && hadExpected.Valid {
				expected = hadExpected.String
			}
			res, err := tx.Exec(`INSERT INTO artefacts (path, size_bytes, mtime_ns, dev, inode, ctime_ns, sha256, expected_sha256, name, architecture, quant,
				n_params, metadata_json, source, revision, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				a.Path, a.Size, a.MTime.UnixNano(), int64(a.Dev), int64(a.Inode), ctimeNS(a.CTime), nullStr(sum), nullStr(expected),
				a.Name, a.Architecture, a.Quant, np, meta, a.Source, a.Revision, now, now)
			if err != nil {
				return fmt.Errorf("store artefact: %w", err)
			}
			if id, err = res.LastInsertId(); err != nil {
				return err
			}
			return n.journalArtefactTx(tx, id, nil)
		}
		before, err := artefactRecordTx(tx, id)
		if err != nil {
			return err
		}
		// Fields the caller does not give (the hash cache records a fresh hash of the same file
		// with no header fields) keep what the row holds.
		_, err = tx.Exec(`UPDATE artefacts SET name = CASE WHEN ? = '' THEN name ELSE ? END,
			architecture = CASE WHEN ? = '' THEN architecture ELSE ? END, quant = CASE WHEN ? = '' THEN quant ELSE ? END,
			n_params = COALESCE(?, n_params), metadata_json = CASE WHEN ? = '{}' THEN metadata_json ELSE ? END,
			source = CASE WHEN ? = '' THEN source ELSE ? END, revision = CASE WHEN ? = '' THEN revision ELSE ? END,
			sha256 = COALESCE(sha256, ?), expected_sha256 = COALESCE(?, expected_sha256), dev = ?, inode = ?, ctime_ns = ?, updated_at = ? WHERE id = ?`,
			a.Name, a.Name, a.Architecture, a.Architecture, a.Quant, a.Quant, np, meta, meta, a.Source, a.Source, a.Revision, a.Revision,
			nullStr(sum), nullStr(expected), int64(a.Dev), int64(a.Inode), ctimeNS(a.CTime), now, id)
		if err != nil {
			return err
		}
		return n.journalArtefactTx(tx, id, before)
	})
	if err != nil {
		return Artefact{}, err
	}
	return n.Artefact(ctx, id)
}

// SetArtefactHash records the computed SHA-256 and returns the resulting status.
func (n *Notebook) SetArtefactHash(ctx context.Context, id int64, sha256 string) (string, error) {
	return n.setArtefactField(ctx, id, "sha256", sha256)
}

// SetArtefactExpected records the SHA-256 the source publishes and returns the status.
func (n *Notebook) SetArtefactExpected(ctx context.Context, id int64, sha256 string) (string, error) {
	return n.setArtefactField(ctx, id, "expected_sha256", sha256)
}

func (n *Notebook) setArtefactField(ctx context.Context, id int64, col, v string) (string, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if len(v) != 64 || strings.Trim(v, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not a SHA-256 (64 hex digits)", v)
	}
	var status string
	err := n.write(ctx, func(tx *sql.Tx) error {
		before, err := artefactRecordTx(tx, id)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		res, err := tx.Exec("UPDATE artefacts SET "+col+" = ?, updated_at = ? WHERE id = ?", v, n.nowText(), id)
		if err != nil {
			return err
		}
		if k, _ := res.RowsAffected(); k == 0 {
			return fmt.Errorf("artefact %d does not exist", id)
		}
		if err := n.journalArtefactTx(tx, id, before); err != nil {
			return err
		}
		return tx.QueryRow("SELECT status FROM artefacts WHERE id = ?", id).Scan(&status)
	})
	return status, err
}

const artefactCols = `id, path, size_bytes, mtime_ns, dev, inode, ctime_ns, COALESCE(sha256, ''), COALESCE(expected_sha256, ''), status, name, architecture,
	quant, COALESCE(n_params, 0), metadata_json, source, revision, created_at, updated_at`

func scanArtefact(sc interface{ Scan(...any) error }) (Artefact, error) {
	var a Artefact
	var mtime, dev, inode, ctime int64
	var meta, created, updated string
	err := sc.Scan(&a.ID, &a.Path, &a.Size, &mtime, &dev, &inode, &ctime, &a.SHA256, &a.ExpectedSHA256, &a.Status, &a.Name, &a.Architecture,
		&a.Quant, &a.NParams, &meta, &a.Source, &a.Revision, &created, &updated)
	a.MTime = time.Unix(0, mtime)
	a.Dev, a.Inode = uint64(dev), uint64(inode)
	if ctime != 0 {
		a.CTime = time.Unix(0, ctime).UTC()
	}
	a.Metadata = json.RawMessage(meta)
	a.CreatedAt, a.UpdatedAt = mustParseTime(created), mustParseTime(updated)
	return a, err
}

// Artefact reads one artefact.
func (n *Notebook) Artefact(ctx context.Context, id int64) (Artefact, error) {
	a, err := scanArtefact(n.rdb.QueryRowContext(ctx, "SELECT "+artefactCols+" FROM artefacts WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("artefact %d does not exist", id)
	}
	return a, err
}

// CachedArtefact finds a stored artefact by the hash cache key (path, size, mtime); ok is
// false when the file changed or was never seen.
func (n *Notebook) CachedArtefact(ctx context.Context, path string, size int64, mtime time.Time) (Artefact, bool, error) {
	a, err := scanArtefact(n.rdb.QueryRowContext(ctx, "SELECT "+artefactCols+" FROM artefacts WHERE path = ? AND size_bytes = ? AND mtime_ns = ? ORDER BY id DESC LIMIT 1", path, size, mtime.UnixNano()))
	if errors.Is(err, sql.ErrNoRows) {
		return Artefact{}, false, nil
	}
	return a, err == nil, err
}

// CachedArtefactFile is CachedArtefact with the file's device, inode and change time also
// matching: the key the model hash cache uses (a file replaced in place gets a new inode; one
// written in place with its mtime restored, a new ctime).
func (n *Notebook) CachedArtefactFile(ctx context.Context, path string, size int64, mtime, ctime time.Time, dev, inode uint64) (Artefact, bool, error) {
	a, err := scanArtefact(n.rdb.QueryRowContext(ctx, "SELECT "+artefactCols+" FROM artefacts WHERE path = ? AND size_bytes = ? AND mtime_ns = ? AND dev = ? AND inode = ? AND ctime_ns = ? ORDER BY id DESC LIMIT 1",
		path, size, mtime.UnixNano(), int64(dev), int64(inode), ctimeNS(ctime)))
	if errors.Is(err, sql.ErrNoRows) {
		return Artefact{}, false, nil
	}
	return a, err == nil, err
}

// Artefacts lists every stored artefact, newest first.
func (n *Notebook) Artefacts(ctx context.Context) ([]Artefact, error) {
	rows, err := n.rdb.QueryContext(ctx, "SELECT "+artefactCols+" FROM artefacts ORDER BY updated_at DESC, id DESC")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Artefact
	for rows.Next() {
		a, err := scanArtefact(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// ctimeNS is a change time as stored: nanoseconds, 0 for none.
func ctimeNS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
