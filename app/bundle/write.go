package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"sparkbench/app/receipt"
	"sparkbench/runner/atomicfile"
)

// ArchiveTime is the modification time of every archive entry: a fixed value, so the same
// files give the same .tar.gz bytes.
var ArchiveTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// WriteDir writes files into dir, which must not exist or be an empty folder. Files are
// created exclusively (never overwritten) through an os.Root on dir.
// A folder cannot be renamed over an old one the way atomicfile replaces a file, hence "new or empty".
func WriteDir(dir string, files receipt.Files) error {
	for _, name := range files.Names() {
		if err := receipt.CheckName(name); err != nil {
			return fmt.Errorf("write bundle: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s is not empty (%d entries); write the bundle into a new or empty folder", dir, len(ents))
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, name := range files.Names() {
		if d := path.Dir(name); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("write %s: %w", filepath.Join(dir, d), err)
			}
		}
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
		}
		if _, err := f.Write(files[name]); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
		}
	}
	return nil
}

// TarGz returns files as a deterministic gzip-compressed tar archive: entries in byte order of
// their names, all under the folder top, regular files with mode 0644, owner 0, the fixed
// ArchiveTime; the gzip header carries no name or time.
func TarGz(files receipt.Files, top string) ([]byte, error) {
	if err := receipt.CheckName(top); err != nil || strings.Contains(top, "/") {
		return nil, fmt.Errorf("archive folder %q: want one plain name", top)
	}
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(gz)
	for _, name := range files.Names() {
		if err := receipt.CheckName(name); err != nil {
			return nil, fmt.Errorf("archive: %w", err)
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: top + "/" + name, Mode: 0o644, Size: int64(len(files[name])),
			ModTime: ArchiveTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("archive %s: %w", name, err)
		}
		if _, err := tw.Write(files[name]); err != nil {
			return nil, fmt.Errorf("archive %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TopName is the archive folder for an output file: its base name without .tar.gz / .tgz.
func TopName(out string) string {
	b := filepath.Base(out)
	for _, ext := range []string{".tar.gz", ".tgz"} {
		b = strings.TrimSuffix(b, ext)
	}
	if b == "" || b == "." || b == ".." {
		b = "bundle"
	}
	return b
}

// IsArchiveName says whether an output path asks for an archive (.tar.gz or .tgz).
func IsArchiveName(out string) bool {
	return strings.HasSuffix(out, ".tar.gz") || strings.HasSuffix(out, ".tgz")
}

// Write writes a bundle to out: a .tar.gz (written beside it and renamed into place) when the
// name ends in .tar.gz or .tgz, else a new or empty folder.
func Write(out string, files receipt.Files) error {
	if !IsArchiveName(out) {
		return WriteDir(out, files)
	}
	data, err := TarGz(files, TopName(out))
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(out, data, 0o644)
}
