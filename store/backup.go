package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Backup copies the notebook to dest with SQLite's online backup API (a consistent copy of
// every page, even while another process writes: the copy starts again when the source
// changes under it), into a temporary file beside dest that is linked into place only when
// complete, so dest is never half-written and an existing dest is never overwritten (the
// link fails). It returns the size of the copy.
func (n *Notebook) Backup(ctx context.Context, dest string) (int64, error) {
	if _, err := os.Lstat(dest); err == nil {
		return 0, fmt.Errorf("%s exists already: a backup never overwrites a file; give a new file name", dest)
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".partial-*")
	if err != nil {
		return 0, fmt.Errorf("backup to %s: %w", dest, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpPath)
	if err := n.backupTo(ctx, tmpPath); err != nil {
		return 0, fmt.Errorf("backup to %s: %w", dest, err)
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		os.Remove(tmpPath + suffix)
	}
	if err := syncFile(tmpPath); err != nil {
		return 0, fmt.Errorf("backup to %s: %w", dest, err)
	}
	if err := os.Link(tmpPath, dest); err != nil {
		if errors.Is(err, os.ErrExist) {
			return 0, fmt.Errorf("%s exists already (made while the backup ran): a backup never overwrites a file; give a new file name", dest)
		}
		return 0, fmt.Errorf("backup to %s: %w", dest, err)
	}
	if d, err := os.Open(filepath.Dir(dest)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	fi, err := os.Stat(dest)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// backupTo runs the backup from the notebook's reader into the (empty) file at path.
func (n *Notebook) backupTo(ctx context.Context, path string) error {
	dst, err := sql.Open("sqlite3", dsn(path, "_busy_timeout=5000"))
	if err != nil {
		return err
	}
	defer dst.Close()
	dconn, err := dst.Conn(ctx)
	if err != nil {
		return err
	}
	defer dconn.Close()
	sconn, err := n.rdb.Conn(ctx)
	if err != nil {
		return err
	}
	defer sconn.Close()
	return dconn.Raw(func(d any) error {
		dc, ok := d.(*sqlite3.SQLiteConn)
		if !ok {
			return fmt.Errorf("not a SQLite connection: %T", d)
		}
		return sconn.Raw(func(s any) error {
			sc, ok := s.(*sqlite3.SQLiteConn)
			if !ok {
				return fmt.Errorf("not a SQLite connection: %T", s)
			}
			b, err := dc.Backup("main", sc, "main")
			if err != nil {
				return err
			}
			for {
				done, err := b.Step(1024)
				if err != nil {
					b.Finish()
					return err
				}
				if done {
					break
				}
				if err := ctx.Err(); err != nil {
					b.Finish()
					return err
				}
			}
			return b.Finish()
		})
	})
}
