// Package store is sparkbench's lab notebook: one SQLite file holding machines, builds,
// artefacts, studies, plans, predictions, legs and their samples, verdicts, findings and
// receipts, with an append-only, hash-chained journal that proves what was recorded when.
//
// It is the only package that imports the SQLite driver. One writer goroutine owns the
// writer connection (samples are batched, at most every 250 ms); reads use a separate pool.
// See docs/notebook.md for the schema, the journal and the import/export formats.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"sparkbench/runner/fsread"
)

// ApplicationID marks a SQLite file as a sparkbench notebook (PRAGMA application_id):
// the bytes "SBNB".
const ApplicationID = 0x53424E42

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

var migrations = func() []migration {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		panic(err)
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic("store: migration file without a number: " + e.Name())
		}
		b, err := migrationFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			panic(fmt.Sprintf("store: migrations must be numbered 1, 2, …; found %s at position %d", m.name, i+1))
		}
	}
	return out
}()

// SchemaVersion is the schema version this build writes (PRAGMA user_version).
var SchemaVersion = len(migrations)

// Errors Open returns (wrapped with the path and what to do).
var (
	ErrNotNotebook = errors.New("not a sparkbench notebook")
	ErrTooNew      = errors.New("notebook written by a newer sparkbench")
	ErrReadOnly    = errors.New("notebook opened read-only")
	ErrClosed      = errors.New("notebook is closed")
)

// Options tune Open. The zero value is what the app uses.
type Options struct {
	// ReadOnly opens without migrating, without recovering interrupted legs and without a
	// writer: for `notebook verify` and inspection of a file another process is using.
	ReadOnly bool
	// FlushInterval is the longest a recorded sample waits before its batch is committed
	// (default 250 ms): an app crash loses at most this much.
	FlushInterval time.Duration
	// MaxBatch commits early when this many rows are pending (default 65536).
	MaxBatch int
	// Now is the clock (default time.Now); tests fix it.
	Now func() time.Time
	// OnCommit, if set, is called by the writer goroutine after each batch of samples is
	// committed. It must not call back into the Notebook's write methods.
	OnCommit func(CommitInfo)
	// migrateTo stops migrations at this version (tests build old notebooks).
	migrateTo int
}

// CommitInfo describes one committed batch.
type CommitInfo struct {
	BenchRows, RequestRows, TranscriptChunks int
	// Legs maps each leg in the batch to its number of committed rows so far (bench +
	// request rows).
	Legs map[int64]int64
	Took time.Duration
}

// Notebook is an open notebook file.
type Notebook struct {
	path     string
	opts     Options
	wdb      *sql.DB // the one writer connection, used only by the writer goroutine
	rdb      *sql.DB // readers
	w        *writer
	now      func() time.Time
	readOnly bool

	closeOnce sync.Once
	closeErr  error

	// Recovered lists legs found running by a dead process when the notebook was opened;
	// each was journaled as interrupted.
	Recovered []int64
	// Halted lists studies whose run ended without recording it (its process is gone), marked
	// halted when the notebook was opened for writing.
	Halted []int64
}

// Open opens (creating and migrating if needed) the notebook at path.
func Open(path string) (*Notebook, error) { return OpenWith(path, Options{}) }

// OpenWith is Open with options.
func OpenWith(path string, o Options) (*Notebook, error) {
	if path == "" {
		return nil, errors.New("open notebook: empty path")
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 250 * time.Millisecond
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 65536
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	target := SchemaVersion
	if o.migrateTo > 0 {
		target = o.migrateTo
	}
	exists, err := probe(path)
	if err != nil {
		return nil, diskFull(path, err)
	}
	if o.ReadOnly && !exists {
		if st, err := os.Stat(path); err == nil && st.Size() == 0 {
			return nil, emptyNotebook(path)
		}
		return nil, fmt.Errorf("open notebook %s: no such file; run a study or `sparkbench import` first, or pass --notebook PATH", path)
	}
	if !exists {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("create notebook folder: %w", err)
		}
	}
	if !o.ReadOnly {
		if err := notWritable(path, exists); err != nil {
			return nil, err
		}
	}
	readParams := []string{"_busy_timeout=5000", "_foreign_keys=1", "_query_only=1"}
	if o.ReadOnly {
		ro, err := readOnlyParams(path)
		if err != nil {
			return nil, err
		}
		readParams = append(readParams, ro...)
	}
	n := &Notebook{path: path, opts: o, now: o.Now, readOnly: o.ReadOnly}
	if !o.ReadOnly {
		n.wdb, err = sql.Open("sqlite3", dsn(path, "_journal_mode=WAL", "_busy_timeout=5000", "_foreign_keys=1", "_txlock=immediate", "_synchronous=FULL", "_cache_size=-65536"))
		if err != nil {
			return nil, fmt.Errorf("open notebook %s: %w", path, err)
		}
		n.wdb.SetMaxOpenConns(1)
		n.wdb.SetMaxIdleConns(1)
		n.wdb.SetConnMaxLifetime(0)
		if err := migrate(context.Background(), n.wdb, path, target); err != nil {
			n.wdb.Close()
			return nil, diskFull(path, damaged(path, err))
		}
		// Checkpoint every 16 MiB of WAL instead of 4 MiB: pages rewritten by consecutive
		// batches (index pages, mostly) are copied to the main file once, not each time.
		if _, err := n.wdb.Exec("PRAGMA wal_autocheckpoint = 4096"); err != nil {
			n.wdb.Close()
			return nil, diskFull(path, fmt.Errorf("open notebook %s: %w", path, err))
		}
	}
	n.rdb, err = sql.Open("sqlite3", dsn(path, readParams...))
	if err != nil {
		n.closeDBs()
		return nil, fmt.Errorf("open notebook %s: %w", path, err)
	}
	n.rdb.SetMaxOpenConns(4)
	n.rdb.SetMaxIdleConns(4)
	if err := n.rdb.Ping(); err != nil {
		n.closeDBs()
		if d := damaged(path, err); d != err {
			return nil, d
		}
		return nil, diskFull(path, fmt.Errorf("open notebook %s: %w", path, err))
	}
	if o.ReadOnly {
		return n, nil
	}
	n.w = newWriter(n)
	go n.w.run()
	if n.Recovered, err = n.recoverInterrupted(context.Background()); err != nil {
		n.Close()
		if d := damaged(path, err); d != err {
			return nil, d
		}
		return nil, diskFull(path, fmt.Errorf("open notebook %s: recover interrupted legs: %w", path, err))
	}
	if n.Halted, err = n.haltUnendedRuns(context.Background()); err != nil {
		n.Close()
		if d := damaged(path, err); d != err {
			return nil, d
		}
		return nil, diskFull(path, fmt.Errorf("open notebook %s: mark unended runs halted: %w", path, err))
	}
	return n, nil
}

func dsn(path string, params ...string) string {
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath()}
	return u.String() + "?" + strings.Join(params, "&")
}

// probe checks an existing file before anything writes to it: a foreign SQLite file, a
// file that is not SQLite at all, or a notebook from a newer sparkbench is refused without
// being touched (not even switched to WAL). exists=false: a new notebook will be created.
func probe(path string) (exists bool, err error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open notebook: %w", err)
	}
	if st.IsDir() {
		return false, fmt.Errorf("open notebook %s: is a folder; pass the notebook file (e.g. %s)", path, filepath.Join(path, "notebook.db"))
	}
	if !st.Mode().IsRegular() {
		return false, fmt.Errorf("open notebook %s: is %s, not a regular file; pass --notebook with a notebook file (or a new file name)", path, fsread.Describe(st.Mode()))
	}
	if st.Size() == 0 {
		return false, nil
	}
	header := make([]byte, 16)
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("open notebook: %w", err)
	}
	_, err = f.ReadAt(header, 0)
	f.Close()
	if err != nil || string(header) != "SQLite format 3\x00" {
		return false, fmt.Errorf("%w: %s is not a SQLite database; pass --notebook with the notebook file, or move this file away", ErrNotNotebook, path)
	}
	ro, err := readOnlyParams(path)
	if err != nil {
		return false, err
	}
	if len(ro) == 0 {
		ro = []string{"mode=ro"}
	}
	db, err := sql.Open("sqlite3", dsn(path, append(ro, "_busy_timeout=5000")...))
	if err != nil {
		return false, fmt.Errorf("open notebook %s: %w", path, err)
	}
	defer db.Close()
	var appID, version, objects int64
	if err := db.QueryRow("PRAGMA application_id").Scan(&appID); err != nil {
		if d := damaged(path, err); d != err {
			return false, d
		}
		return false, fmt.Errorf("open notebook %s: %w", path, err)
	}
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		if d := damaged(path, err); d != err {
			return false, d
		}
		return false, fmt.Errorf("open notebook %s: %w", path, err)
	}
	if err := db.QueryRow("SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil {
		if d := damaged(path, err); d != err {
			return false, d
		}
		return false, fmt.Errorf("open notebook %s: %w", path, err)
	}
	switch {
	case appID == 0 && objects == 0:
		return true, nil // an empty SQLite file: becomes a notebook
	case appID != ApplicationID:
		return false, fmt.Errorf("%w: %s is another application's SQLite file (application_id 0x%08x, %d schema objects); sparkbench will not touch it: pass --notebook with a sparkbench notebook or a new file name",
			ErrNotNotebook, path, uint32(appID), objects)
	case version > int64(SchemaVersion):
		return false, fmt.Errorf("%w: %s has schema version %d, this sparkbench knows up to %d; upgrade sparkbench to open it (nothing was changed)",
			ErrTooNew, path, version, SchemaVersion)
	}
	return true, nil
}

// migrate brings the notebook to version target, one transaction per migration; each sets
// PRAGMA user_version (and the first, PRAGMA application_id) inside its transaction.
func migrate(ctx context.Context, db *sql.DB, path string, target int) error {
	// A notebook already at the target needs no write lock to open: read its version first,
	// so that opening never waits for another process's write (that wait belongs to the
	// verb's own write, which a stop signal ends).
	var current int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return fmt.Errorf("open notebook %s: %w", path, err)
	}
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		if m.version > target {
			break
		}
		if err := applyMigration(ctx, db, m); err != nil {
			return fmt.Errorf("migrate notebook %s to version %d (%s): %w", path, m.version, m.name, err)
		}
	}
	var appID int64
	if err := db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return fmt.Errorf("open notebook %s: %w", path, err)
	}
	if appID != ApplicationID {
		return fmt.Errorf("%w: %s (application_id 0x%08x)", ErrNotNotebook, path, uint32(appID))
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m migration) error {
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock): one migrator at a time
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if version >= m.version {
		return nil // already applied (perhaps by another process just now)
	}
	if version != m.version-1 {
		return fmt.Errorf("notebook is at version %d, cannot apply %d", version, m.version)
	}
	if m.version == 1 {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID)); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if strings.Contains(m.sql, "PRAGMA writable_schema = ON") {
		// The migration rewrote a table's SQL text: bump the schema cookie so that every
		// connection (this one included) parses the schema again.
		var cookie int64
		if err := tx.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&cookie); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA schema_version = %d", cookie+1)); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.version)); err != nil {
		return err
	}
	return tx.Commit()
}

// Path is the notebook's file.
func (n *Notebook) Path() string { return n.path }

// ReadOnly reports whether the notebook was opened read-only.
func (n *Notebook) ReadOnly() bool { return n.readOnly }

// Close flushes pending samples and closes the file; a writable notebook first moves its
// anchor (NOTEBOOK.anchor) to the journal's head when that extends the anchored one. It is
// safe to call more than once.
func (n *Notebook) Close() error {
	n.closeOnce.Do(func() {
		if n.w != nil {
			n.closeErr = n.w.close()
			if n.closeErr == nil {
				_ = n.advanceAnchor(context.Background()) // best effort: see docs/notebook.md
			}
		}
		if err := n.closeDBs(); err != nil && n.closeErr == nil {
			n.closeErr = err
		}
	})
	return n.closeErr
}

func (n *Notebook) closeDBs() error {
	var first error
	if n.rdb != nil {
		if err := n.rdb.Close(); err != nil {
			first = err
		}
	}
	if n.wdb != nil {
		if err := n.wdb.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// write runs fn in one writer transaction, in order with sample batches (pending samples are
// committed first).
func (n *Notebook) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if n.readOnly {
		return ErrReadOnly
	}
	return n.w.do(ctx, fn)
}

func (n *Notebook) nowText() string { return FormatTime(n.now()) }

// isUniqueConstraint reports whether err is a UNIQUE constraint's refusal.
func isUniqueConstraint(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique
}

// SQLiteVersion is the version of the linked SQLite library.
func SQLiteVersion() string {
	v, _, _ := sqlite3.Version()
	return v
}
