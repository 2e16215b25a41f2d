// Package atomicfile replaces a file all at once: the new bytes go to a temporary file in the
// target's own folder (a hidden name, ".<base>.tmp-<random>", from os.CreateTemp, so two
// writers never share one), which is given its mode, synced, closed and renamed over the
// target; the folder is then synced. A reader sees the old file or the new one, never half of
// one, and a failed or abandoned write leaves the target as it was and no temporary file.
// It imports only the standard library.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// File is a replacement for a file in progress. Write to it, then Commit to put it in place or
// Abort to drop it. Abort after Commit does nothing, so `defer f.Abort()` is safe.
type File struct {
	f    *os.File
	path string
	perm fs.FileMode
	done bool
}

// Create starts a replacement for path, which will have mode perm exactly (the umask does not
// apply). The folder must exist: when it does not, the error is a *fs.PathError on path that
// matches fs.ErrNotExist.
func Create(path string, perm fs.FileMode) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &fs.PathError{Op: "create", Path: path, Err: err}
	}
	return &File{f: f, path: path, perm: perm}, nil
}

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) {
	if f.done {
		return 0, errDone(f.path)
	}
	return f.f.Write(p)
}

// Commit gives the temporary file its mode, syncs and closes it, renames it over the target
// and syncs the folder (best effort: some file systems refuse to sync a folder). On an error
// the temporary file is removed and the target is as it was.
func (f *File) Commit() error {
	if f.done {
		return errDone(f.path)
	}
	f.done = true
	tmp := f.f.Name()
	err := f.f.Chmod(f.perm)
	if err == nil {
		err = f.f.Sync()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(f.path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Abort closes and removes the temporary file; the target is left as it was.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	os.Remove(f.f.Name())
}

// WriteFile replaces path with data, mode perm, as Create, Write and Commit do.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

func errDone(path string) error {
	return &fs.PathError{Op: "write", Path: path, Err: fs.ErrClosed}
}
