package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// ErrDamaged marks a notebook file SQLite finds damaged ("database disk image is malformed",
// "malformed database schema …"): its pages no longer read back.
var ErrDamaged = errors.New("notebook file is damaged")

// DamagedError is a damaged notebook: which file, what SQLite said, what its integrity check
// found (when it could run), and what to do.
type DamagedError struct {
	Path      string
	Err       error    // SQLite's error
	Integrity []string // PRAGMA integrity_check's findings (nil: it could not run)
}

func (e *DamagedError) Error() string {
	found := "its integrity check cannot run either"
	if len(e.Integrity) > 0 {
		found = "its integrity check found: " + IntegrityText(e.Integrity)
	}
	return fmt.Sprintf("notebook %s is damaged: SQLite says %q; %s; nothing was written. Keep this file as evidence; "+
		"recover from a copy made by `sparkbench notebook backup`, or import the studies' last receipt bundles "+
		"(`sparkbench import BUNDLE --notebook NEW`) into a new notebook", e.Path, e.Err.Error(), found)
}

func (e *DamagedError) Unwrap() []error { return []error{ErrDamaged, e.Err} }

// isCorrupt reports whether err is SQLite's "the file is damaged" (SQLITE_CORRUPT).
func isCorrupt(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrCorrupt
}

// damaged wraps err as a DamagedError when SQLite says the file is damaged (running the
// integrity check read-only on its own connection, for the words); other errors pass.
func damaged(path string, err error) error {
	if err == nil || !isCorrupt(err) {
		return err
	}
	d := &DamagedError{Path: path, Err: err}
	if db, oerr := sql.Open("sqlite3", dsn(path, "mode=ro", "_busy_timeout=5000")); oerr == nil {
		d.Integrity, _ = integrityCheck(context.Background(), db)
		db.Close()
	}
	return d
}
