package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"sparkbench/app/canon"
	"sparkbench/runner/atomicfile"
	"sparkbench/runner/fsread"
	"sparkbench/runner/jsonlex"
	"sparkbench/runner/llamacpp"
)

// The quantized variants of the medium model, made with the llama.cpp build's llama-quantize
// (-quantize). QuantManifest records what made them: the source model's SHA-256, the build's
// (llama-quantize and the libraries that hold its code), and each output's SHA-256. The same
// build and source give the same bytes (checked: a difference is an error); another build
// re-hashes them and says so, rewriting the manifest.
var quantTypes = []struct{ Type, File string }{
	{"Q8_0", "medium-llama-q8_0.gguf"},
	{"Q4_0", "medium-llama-q4_0.gguf"},
	{"Q4_K_M", "medium-llama-q4_k_m.gguf"},
}

const (
	quantManifest = "QUANTIZED.json"
	quantSchema   = "sparkbench.quantized-models/v1"
	quantTimeout  = 2 * time.Minute // each llama-quantize run (about a second here)
	quantTool     = "llama-quantize"
)

type quantRecord struct {
	Schema string       `json:"schema"`
	Source quantFile    `json:"source"`
	Build  quantBuild   `json:"build"`
	Models []quantModel `json:"models"`
}

type quantFile struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// quantBuild identifies the quantizer: its version line and one SHA-256 over its binary and
// its libraries (name and SHA-256 of each, sorted), as the build's code is in the libraries.
type quantBuild struct {
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
}

type quantModel struct {
	Type string `json:"type"`
	quantFile
}

// quantize writes the variants next to the medium model in dir and checks them against dir's
// manifest. llamaDir names the build ("" for the usual search).
func quantize(ctx context.Context, dir, llamaDir string, log io.Writer) error {
	loc, err := llamacpp.Locate(llamaDir)
	if err != nil {
		return err
	}
	tool := filepath.Join(loc.Dir, quantTool)
	if st, err := os.Stat(tool); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("%s: no %s in this build (%v); install llama.cpp with `make llama`", loc.Dir, quantTool, err)
	}
	build, err := quantizerBuild(ctx, tool, loc.Bench)
	if err != nil {
		return err
	}
	src := filepath.Join(dir, mediumName())
	srcSHA, srcBytes, err := fileSHA256(src)
	if err != nil {
		return fmt.Errorf("%s: %w (write it first: mkmodel -medium)", src, err)
	}
	rec := quantRecord{Schema: quantSchema, Source: quantFile{File: mediumName(), SHA256: srcSHA, Bytes: srcBytes}, Build: build}
	if upToDate(dir, rec) {
		fmt.Fprintf(log, "%s: the quantized models are those of this build and source (build sha256 %s)\n", filepath.Join(dir, quantManifest), build.SHA256)
		return nil
	}
	for _, q := range quantTypes {
		out := filepath.Join(dir, q.File)
		tmp := out + ".part"
		_ = os.Remove(tmp)
		if _, err := llamacpp.RunMeta(ctx, quantTimeout, tool, src, tmp, q.Type, "1"); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("%s %s: %w", quantTool, q.Type, err)
		}
		if err := os.Rename(tmp, out); err != nil {
			return err
		}
		sum, n, err := fileSHA256(out)
		if err != nil {
			return err
		}
		rec.Models = append(rec.Models, quantModel{Type: q.Type, quantFile: quantFile{File: q.File, SHA256: sum, Bytes: n}})
		fmt.Fprintf(log, "wrote %s: %s of %s, %d bytes, sha256 %s\n", out, q.Type, mediumName(), n, sum)
	}
	return checkManifest(filepath.Join(dir, quantManifest), rec, log)
}

// checkManifest compares what was made with the manifest: the same source and build must give
// the same bytes; another build (or a missing manifest) writes the manifest anew.
func checkManifest(path string, rec quantRecord, log io.Writer) error {
	b, err := os.ReadFile(path)
	var was quantRecord
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(log, "%s: none yet; written\n", path)
		return writeManifest(path, rec)
	case err != nil:
		return err
	}
	if e := jsonlex.DecodeStrict(b, &was); e != nil || was.Schema != quantSchema {
		return fmt.Errorf("%s: not a %s manifest (%v); remove it to write it anew", path, quantSchema, e)
	}
	if was.Source.SHA256 != rec.Source.SHA256 || was.Build.SHA256 != rec.Build.SHA256 {
		fmt.Fprintf(log, "%s: made by another build or from another source (build sha256 %s, was %s; source %s, was %s): the models are re-hashed and the manifest rewritten\n",
			path, rec.Build.SHA256, was.Build.SHA256, rec.Source.SHA256, was.Source.SHA256)
		return writeManifest(path, rec)
	}
	for i, m := range rec.Models {
		if i >= len(was.Models) || was.Models[i] != m {
			return fmt.Errorf("%s: %s was not reproduced: the same build and source gave sha256 %s, the manifest says %+v", path, m.File, m.SHA256, was.Models)
		}
	}
	fmt.Fprintf(log, "%s: every model reproduced byte for byte (build sha256 %s)\n", path, rec.Build.SHA256)
	return nil
}

func writeManifest(path string, rec quantRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}

// upToDate says whether dir's manifest is of this source and build and every model it lists
// is there with its SHA-256 (nothing to make).
func upToDate(dir string, rec quantRecord) bool {
	b, err := os.ReadFile(filepath.Join(dir, quantManifest))
	var was quantRecord
	if err != nil || json.Unmarshal(b, &was) != nil || was.Source != rec.Source || was.Build.SHA256 != rec.Build.SHA256 || len(was.Models) != len(quantTypes) {
		return false
	}
	for _, m := range was.Models {
		if sum, _, err := fileSHA256(filepath.Join(dir, m.File)); err != nil || sum != m.SHA256 {
			return false
		}
	}
	return true
}

// quantizerBuild is the build's version line (its llama-bench's: llama-quantize has no
// --version) and the SHA-256 of llama-quantize's code: the binary and the libraries it loads.
// The installer patches each file with the absolute path of the prefix's versioned folder
// (interpreter and RUNPATH, e.g. ~/.cache/sparkbench/.llama.cpp-20261203T163835Z.pxou), which
// is new on every install: that path is replaced by a fixed token before hashing, so the same
// packages installed again, on this machine or a fresh one, give the same build SHA-256.
func quantizerBuild(ctx context.Context, tool, bench string) (quantBuild, error) {
	libs, _, err := llamacpp.Libraries(tool, nil)
	if err != nil {
		return quantBuild{}, err
	}
	root := ""
	if real, err := filepath.EvalSymlinks(filepath.Dir(filepath.Dir(tool))); err == nil {
		root = real
	}
	parts := []string{}
	for _, p := range append([]string{tool}, libPaths(libs)...) {
		sum, err := codeSHA256(p, root)
		if err != nil {
			return quantBuild{}, err
		}
		parts = append(parts, filepath.Base(p)+" "+sum)
	}
	sort.Strings(parts)
	version := ""
	if out, err := llamacpp.RunMeta(ctx, llamacpp.MetaTimeout, bench, "--version"); err == nil {
		if line, _, _, _, err := llamacpp.ParseVersion(out); err == nil {
			version = line
		}
	}
	return quantBuild{Version: version, SHA256: canon.SHA256Hex([]byte(fmt.Sprint(parts)))}, nil
}

func libPaths(libs []llamacpp.Binary) []string {
	out := make([]string, len(libs))
	for i, l := range libs {
		out[i] = l.Path
	}
	return out
}

// maxCodeFile bounds one code file read for the build hash (libggml-vulkan.so is about 60 MB).
const maxCodeFile = 512 << 20

// codeSHA256 hashes a code file with every occurrence of the prefix folder root (when not
// empty) replaced by a fixed token.
func codeSHA256(path, root string) (string, error) {
	b, err := fsread.ReadFile(path, maxCodeFile, "code file")
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	if root != "" && root != "/" {
		b = bytes.ReplaceAll(b, []byte(root), []byte("<prefix>"))
	}
	return canon.SHA256Hex(b), nil
}

// mediumName is the medium model's file name (specs).
func mediumName() string {
	for _, s := range specs {
		if s.Medium {
			return s.File
		}
	}
	return ""
}
