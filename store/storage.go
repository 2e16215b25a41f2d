package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Storage failures named in words (docs/notebook.md "Opening, versions, refusals"): a notebook
// this user cannot write, an empty file, a full disk. Each error says which file, what it is
// and what to do; errors.Is finds the sentinel.
var (
	ErrNotWritable = errors.New("notebook is read-only for this user")
	ErrEmpty       = errors.New("notebook file is empty")
	ErrDiskFull    = errors.New("the notebook's disk is full")
)

// readersStillWork is what a read-only notebook still answers.
const readersStillWork = "commands that only read it still work (study show, study list, study compare, notebook verify, export)"

// NotWritableError is a notebook (or the folder SQLite writes its -wal and -shm files in) this
// process may not write.
type NotWritableError struct {
	Path, What string // What: "the file", "its folder DIR", with the reason
}

func (e *NotWritableError) Error() string {
	return fmt.Sprintf("notebook %s is read-only for this user (%s); %s; to record in it, make it and its folder writable, "+
		"or copy it (with its -wal file, if any) to a writable folder and pass --notebook", e.Path, e.What, readersStillWork)
}

func (e *NotWritableError) Unwrap() error { return ErrNotWritable }

// notWritable says why path (an existing notebook when exists) cannot be written, nil when
// it can: the file itself, and its folder (SQLite creates the -wal and -shm files there).
func notWritable(path string, exists bool) error {
	dir := filepath.Dir(path)
	if exists {
		if err := syscall.Access(path, 2 /* W_OK */); err != nil {
			return &NotWritableError{Path: path, What: "the file: " + accessWords(err)}
		}
	}
	if err := syscall.Access(dir, 2); err != nil {
		if !exists {
			return fmt.Errorf("%w: cannot create notebook %s: its folder %s is not writable (%s); pass --notebook with a path in a folder you can write",
				ErrNotWritable, path, dir, accessWords(err))
		}
		return &NotWritableError{Path: path, What: "its folder " + dir + ", where SQLite writes the notebook's -wal and -shm files: " + accessWords(err)}
	}
	return nil
}

func accessWords(err error) string {
	switch {
	case errors.Is(err, syscall.EROFS):
		return "on a read-only file system"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "permission denied"
	}
	return err.Error()
}

// readOnlyParams are the DSN parameters a read-only notebook needs in a folder this process
// cannot write: mode=ro, and, with no -shm file there, immutable=1 (SQLite could not create
// the shared-memory file a WAL notebook is read through); a -wal file with content that could
// not be read that way is refused rather than ignored. In a writable folder none: the
// connection reads as before (query_only), and PRAGMA integrity_check, which skips CHECK
// constraints on a mode=ro connection, checks them.
func readOnlyParams(path string) ([]string, error) {
	if syscall.Access(filepath.Dir(path), 2) == nil {
		return nil, nil
	}
	params := []string{"mode=ro"}
	if _, err := os.Stat(path + "-shm"); err == nil {
		return params, nil
	}
	if st, err := os.Stat(path + "-wal"); err == nil && st.Size() > 0 {
		return nil, fmt.Errorf("%w: notebook %s has a write-ahead log (%s-wal, %d bytes) that SQLite cannot read in a folder this user cannot write; "+
			"make the folder writable once, or copy the notebook with its -wal file to a writable folder and pass --notebook", ErrNotWritable, path, path, st.Size())
	}
	return append(params, "immutable=1"), nil
}

// emptyNotebook is the refusal of a read-only open of a zero-byte file.
func emptyNotebook(path string) error {
	return fmt.Errorf("%w: %s is 0 bytes, so nothing was ever recorded in it; a command that records (study register, import) makes it a notebook, or pass --notebook with the notebook file", ErrEmpty, path)
}

// DiskFullError is a write the notebook's disk had no room for.
type DiskFullError struct {
	Path string
	Err  error
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("notebook %s: the disk is full (SQLite: %v); this write was rolled back, and everything committed before it is kept "+
		"(`sparkbench notebook verify` checks it); free space on that disk, then run the command again (`sparkbench study run ID` resumes a study at its first unfinished leg)",
		e.Path, e.Err)
}

func (e *DiskFullError) Unwrap() []error { return []error{ErrDiskFull, e.Err} }

// diskFull wraps err as a DiskFullError when SQLite says the disk is full (SQLITE_FULL, or a
// write that failed with ENOSPC); other errors pass.
func diskFull(path string, err error) error {
	var se sqlite3.Error
	if err == nil || errors.As(err, new(*DiskFullError)) {
		return err
	}
	if errors.As(err, &se) && (se.Code == sqlite3.ErrFull || errors.Is(se.SystemErrno, syscall.ENOSPC)) || errors.Is(err, syscall.ENOSPC) {
		return &DiskFullError{Path: path, Err: err}
	}
	return err
}
