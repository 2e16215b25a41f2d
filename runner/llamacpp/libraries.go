package llamacpp

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The libraries that hold llama.cpp's code: a tool executable is a few KiB that calls into them,
// so its own hash does not identify a build.
var codeLibRE = regexp.MustCompile(`^lib(llama|ggml|mtmd)[-.]`)

// Libraries lists and hashes the llama.cpp libraries a tool runs with: the libllama, libggml*
// and libmtmd shared libraries its ELF file needs (transitively), resolved as the dynamic
// loader would (the file's RUNPATH or RPATH with $ORIGIN expanded, then LD_LIBRARY_PATH, then
// the tool's own folder), and the backend libraries it reported loading (backends as
// ParseBackends gives them, e.g. "CPU (libggml-cpu-zen4.so)"), found next to the tool or beside
// libggml. The list is sorted by name. A library that cannot be found is named in missing
// rather than failing the whole list; a file that is not ELF (a script wrapping a build) has
// no libraries of its own.
func Libraries(bin string, backends []string) (libs []Binary, missing []string, err error) {
	seen := map[string]bool{}
	var dirs []string // folders where code libraries were found: backends live beside them
	addDir := func(d string) {
		for _, x := range dirs {
			if x == d {
				return
			}
		}
		dirs = append(dirs, d)
	}
	var walk func(file string) error
	walk = func(file string) error {
		f, err := elf.Open(file)
		if err != nil {
			if file == bin {
				return nil // not an ELF executable (e.g. a wrapper script): nothing to resolve
			}
			return fmt.Errorf("read %s: %w", file, err)
		}
		needed, _ := f.DynString(elf.DT_NEEDED)
		search := runpath(f, filepath.Dir(file))
		f.Close()
		for _, name := range needed {
			if !codeLibRE.MatchString(name) || seen[name] {
				continue
			}
			seen[name] = true
			path := findLib(name, search, filepath.Dir(bin))
			if path == "" {
				missing = append(missing, name)
				continue
			}
			b, err := HashBinary(path)
			if err != nil {
				return err
			}
			libs = append(libs, b)
			addDir(filepath.Dir(path))
			if err := walk(path); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(bin); err != nil {
		return nil, nil, err
	}
	addDir(filepath.Dir(bin))
	for _, be := range backends {
		name := backendFile(be)
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		path := findLib(name, dirs, "")
		if path == "" {
			missing = append(missing, name)
			continue
		}
		b, err := HashBinary(path)
		if err != nil {
			return nil, nil, err
		}
		libs = append(libs, b)
	}
	sort.Slice(libs, func(i, j int) bool { return libs[i].Name < libs[j].Name })
	return libs, missing, nil
}

// runpath is the folders an ELF file's DT_RUNPATH (else DT_RPATH) names, $ORIGIN expanded,
// followed by LD_LIBRARY_PATH's (the loader reads that one before RUNPATH; both are searched).
func runpath(f *elf.File, origin string) []string {
	var out []string
	for _, e := range strings.Split(os.Getenv("LD_LIBRARY_PATH"), ":") {
		if e != "" {
			out = append(out, e)
		}
	}
	rp, _ := f.DynString(elf.DT_RUNPATH)
	if len(rp) == 0 {
		rp, _ = f.DynString(elf.DT_RPATH)
	}
	for _, s := range rp {
		for _, d := range strings.Split(s, ":") {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin)
			if d != "" {
				out = append(out, d)
			}
		}
	}
	return out
}

func findLib(name string, dirs []string, fallback string) string {
	if fallback != "" {
		dirs = append(append([]string(nil), dirs...), fallback)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// backendFile is the library file of a ParseBackends entry: "CPU (libggml-cpu-zen4.so)".
func backendFile(backend string) string {
	i := strings.LastIndexByte(backend, '(')
	if i < 0 || !strings.HasSuffix(backend, ")") {
		return ""
	}
	return filepath.Base(backend[i+1 : len(backend)-1])
}
