// Package bundle writes and reads receipt bundles: a folder or a .tar.gz holding a study's raw
// files, its derived receipt (receipt.md, study.json, plots) and SHA256SUMS (docs/receipts.md).
// Bundles from others are read defensively: absolute paths, "..", symbolic and hard links,
// device files, oversized or too many entries and truncated archives are refused with a
// message saying which entry and why, and extraction writes nothing — not even inside the
// target folder — unless the whole archive was read and accepted.
package bundle

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"sparkbench/app/receipt"
	"sparkbench/runner/fsread"
)

// Limits bound what reading a bundle may take.
type Limits struct {
	MaxEntries    int   // entries of an archive (folders included) or files of a folder
	MaxEntryBytes int64 // one file
	MaxTotalBytes int64 // all files together (they are held in memory)
}

// DefaultLimits fit a real study's bundle with room to spare: transcripts and GGUF headers
// (a 262k-token vocabulary is about 10 MB) are the large files.
var DefaultLimits = Limits{MaxEntries: 20000, MaxEntryBytes: 256 << 20, MaxTotalBytes: 1 << 30}

// RefusedError is a bundle refused for what it holds (as opposed to an I/O error).
type RefusedError struct {
	Bundle string
	Entry  string // the entry at fault, "" for the whole bundle
	Reason string
}

func (e *RefusedError) Error() string {
	if e.Entry == "" {
		return fmt.Sprintf("%s: refused: %s", e.Bundle, e.Reason)
	}
	return fmt.Sprintf("%s: refused: entry %q: %s", e.Bundle, e.Entry, e.Reason)
}

// IsArchive says whether path names a gzip file (by its first bytes) rather than a folder.
// A named pipe, socket or device is refused (reading one could block or never end).
func IsArchive(p string) (bool, error) {
	st, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	if st.IsDir() {
		return false, nil
	}
	f, err := openArchive(p)
	if err != nil {
		return false, err
	}
	f.Close()
	return true, nil
}

// openFile opens p for reading if it is a regular file (or a link to one); a named pipe,
// socket or device is refused without blocking.
func openFile(p string) (*os.File, error) {
	f, _, err := fsread.OpenRegular(p)
	if err != nil {
		var nr *fsread.NotRegularError
		if errors.As(err, &nr) {
			return nil, &RefusedError{Bundle: p, Reason: fsread.Describe(nr.Mode) + ", not a folder or a regular file; give a bundle folder or a .tar.gz"}
		}
		return nil, err
	}
	return f, nil
}

// openArchive opens p (openFile), which must start with a gzip header, positioned at its
// first byte.
func openArchive(p string) (*os.File, error) {
	f, err := openFile(p)
	if err != nil {
		return nil, err
	}
	var magic [2]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		f.Close()
		return nil, &RefusedError{Bundle: p, Reason: "neither a folder nor a .tar.gz (too short)"}
	}
	if magic != [2]byte{0x1f, 0x8b} {
		f.Close()
		return nil, &RefusedError{Bundle: p, Reason: "neither a folder nor a .tar.gz (no gzip header)"}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Read reads a bundle from a folder or a .tar.gz.
func Read(p string, lim Limits) (receipt.Files, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return ReadDir(p, lim)
	}
	f, err := openArchive(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files, err := ReadTarGz(f, lim)
	var re *RefusedError
	if errors.As(err, &re) {
		re.Bundle = p
	}
	return files, err
}

// ReadTarGz reads a gzip-compressed tar archive into memory, refusing anything that is not a
// plain file or folder with a clean relative name, and enforcing the limits before reading
// each entry's content. A single top-level folder holding everything is stripped.
func ReadTarGz(r io.Reader, lim Limits) (receipt.Files, error) {
	refuse := func(entry, format string, a ...any) error {
		return &RefusedError{Bundle: "archive", Entry: entry, Reason: fmt.Sprintf(format, a...)}
	}
	br := bufio.NewReader(r)
	gz, err := gzip.NewReader(br)
	if err != nil {
		return nil, refuse("", "not a gzip stream: %v", err)
	}
	gz.Multistream(false)
	tr := tar.NewReader(gz)
	files := receipt.Files{}
	dirs := map[string]bool{}
	var total int64
	entries := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, refuse("", "truncated or corrupt archive after %d entries: %v", entries, err)
		}
		entries++
		if entries > lim.MaxEntries {
			return nil, refuse("", "more than %d entries; a bundle holds a few hundred files", lim.MaxEntries)
		}
		name := strings.TrimPrefix(h.Name, "./")
		if h.Typeflag == tar.TypeDir {
			name = strings.TrimSuffix(name, "/")
			if name == "" || name == "." {
				continue
			}
		}
		if err := receipt.CheckName(name); err != nil {
			return nil, refuse(h.Name, "%v", err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			dirs[name] = true
			continue
		case tar.TypeReg, tar.TypeRegA:
		case tar.TypeSymlink:
			return nil, refuse(h.Name, "a symbolic link (to %q); bundles hold plain files only", h.Linkname)
		case tar.TypeLink:
			return nil, refuse(h.Name, "a hard link (to %q); bundles hold plain files only", h.Linkname)
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			return nil, refuse(h.Name, "a device or special file; bundles hold plain files only")
		default:
			return nil, refuse(h.Name, "entry type %q is not a plain file or folder", string(h.Typeflag))
		}
		if h.Size < 0 || h.Size > lim.MaxEntryBytes {
			return nil, refuse(h.Name, "declares %d bytes, more than the %d-byte limit for one file", h.Size, lim.MaxEntryBytes)
		}
		if total+h.Size > lim.MaxTotalBytes {
			return nil, refuse(h.Name, "the files would exceed %d bytes in all", lim.MaxTotalBytes)
		}
		if _, dup := files[name]; dup {
			return nil, refuse(h.Name, "appears twice")
		}
		data := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, data); err != nil {
			return nil, refuse(h.Name, "truncated: its %d bytes are not all in the archive (%v)", h.Size, err)
		}
		total += h.Size
		files[name] = data
	}
	// The tar end marker came; the gzip stream must end cleanly too (its checksum is checked
	// at its end), with at most padding after it.
	if n, err := io.Copy(io.Discard, io.LimitReader(gz, 1<<20)); err != nil {
		return nil, refuse("", "truncated or corrupt archive: %v", err)
	} else if n == 1<<20 {
		return nil, refuse("", "more than 1 MiB of data after the archive's end")
	}
	// After the gzip stream only zero padding may follow (as tape-style writers leave it).
	rest, err := io.ReadAll(io.LimitReader(br, 1<<20+1))
	if err != nil {
		return nil, refuse("", "reading past the archive's end: %v", err)
	}
	if len(rest) > 1<<20 || bytes.ContainsFunc(rest, func(r rune) bool { return r != 0 }) {
		return nil, refuse("", "data after the end of the gzip stream (%d bytes or more): not one archive", len(rest))
	}
	if err := checkTree(files, dirs); err != nil {
		return nil, refuse("", "%v", err)
	}
	return stripTop(files), nil
}

// checkTree refuses a path that is both a file and a folder, and names that differ only in
// case (they would overwrite each other on a case-insensitive file system).
func checkTree(files receipt.Files, dirs map[string]bool) error {
	folded := map[string]string{}
	for name := range files {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, ok := files[d]; ok {
				return fmt.Errorf("%q is a file and also the folder of %q", d, name)
			}
		}
		if dirs[name] {
			return fmt.Errorf("%q is a file and also a folder entry", name)
		}
		k := strings.ToLower(name)
		if other, ok := folded[k]; ok {
			return fmt.Errorf("%q and %q differ only in case", other, name)
		}
		folded[k] = name
	}
	return nil
}

// stripTop removes a folder every file lies in (archives made with a top folder, as
// WriteTarGz makes them).
func stripTop(files receipt.Files) receipt.Files {
	top := ""
	for name := range files {
		first, _, ok := strings.Cut(name, "/")
		if !ok || top != "" && first != top {
			return files
		}
		top = first
	}
	if top == "" {
		return files
	}
	out := receipt.Files{}
	for name, b := range files {
		out[strings.TrimPrefix(name, top+"/")] = b
	}
	return out
}

// ReadDir reads a bundle folder: plain files only (a symbolic link, device, socket or pipe
// anywhere in it is refused), within the limits. The folder is opened as an os.Root, so no
// name can resolve outside it.
func ReadDir(dir string, lim Limits) (receipt.Files, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	refuse := func(entry, format string, a ...any) error {
		return &RefusedError{Bundle: dir, Entry: entry, Reason: fmt.Sprintf(format, a...)}
	}
	files := receipt.Files{}
	var total int64
	n := 0
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		n++
		if n > lim.MaxEntries {
			return refuse("", "more than %d entries; a bundle holds a few hundred files", lim.MaxEntries)
		}
		if err := receipt.CheckName(p); err != nil {
			return refuse(p, "%v", err)
		}
		switch t := d.Type(); {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			return refuse(p, "a symbolic link; bundles hold plain files only")
		case !t.IsRegular():
			return refuse(p, "not a plain file (%v)", t)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > lim.MaxEntryBytes {
			return refuse(p, "%d bytes, more than the %d-byte limit for one file", info.Size(), lim.MaxEntryBytes)
		}
		if total+info.Size() > lim.MaxTotalBytes {
			return refuse(p, "the files would exceed %d bytes in all", lim.MaxTotalBytes)
		}
		// The name was a plain file when listed; opened without blocking and checked again,
		// so one swapped for a named pipe since cannot hang the read.
		f, _, err := fsread.OpenRegularIn(root, p)
		if errors.Is(err, fsread.ErrNotRegular) {
			return refuse(p, "changed while being read; not a plain file")
		}
		if err != nil {
			return err
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, lim.MaxEntryBytes+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > lim.MaxEntryBytes {
			return refuse(p, "grew past the %d-byte limit while being read", lim.MaxEntryBytes)
		}
		total += int64(len(data))
		files[p] = data
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := checkTree(files, nil); err != nil {
		return nil, refuse("", "%v", err)
	}
	return files, nil
}

// Extract reads an archive fully (ReadTarGz, with its refusals) and only then writes its
// files into dest, which must be a new or empty folder. Nothing is written outside dest:
// the writes go through an os.Root opened on it, with names already checked.
func Extract(archive, dest string, lim Limits) (receipt.Files, error) {
	f, err := openFile(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	files, err := ReadTarGz(f, lim)
	if err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			re.Bundle = archive
		}
		return nil, err
	}
	if err := WriteDir(dest, files); err != nil {
		return nil, err
	}
	return files, nil
}
