// Command mkmodel writes the small GGUF models sparkbench tests with:
// deterministic llama-architecture models with random weights that load
// and run in llama.cpp.
//
//	go run ./cmd/mkmodel -out testdata/models          # the committed tiny models + SHA256SUMS
//	go run ./cmd/mkmodel -out testdata/models -medium  # also medium-llama-f16.gguf (~51 MB, not committed)
//	go run ./cmd/mkmodel -out testdata/models -medium -quantize  # and its Q8_0, Q4_0, Q4_K_M variants
//
// -quantize runs the llama.cpp build's llama-quantize (-llama-dir, else the usual search) and
// checks the variants against testdata/models/QUANTIZED.json (quantize.go).
//
// The same flags always give the same bytes (see testdata/models/README.md).
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"sparkbench/runner/gguf"
)

func main() {
	out := flag.String("out", "testdata/models", "folder to write the models into")
	medium := flag.Bool("medium", false, "also write the medium model (large; not committed)")
	quant := flag.Bool("quantize", false, "also write the medium model's Q8_0, Q4_0 and Q4_K_M variants with the build's llama-quantize (needs -medium)")
	llamaDir := flag.String("llama-dir", "", "the llama.cpp build whose llama-quantize -quantize runs (default: $SPARKBENCH_LLAMA_DIR, the installed prefix, PATH)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "mkmodel: unexpected argument %q\n", flag.Arg(0))
		flag.Usage()
		os.Exit(2)
	}
	if *quant && !*medium {
		fmt.Fprintln(os.Stderr, "mkmodel: -quantize quantizes the medium model: give -medium too")
		os.Exit(2)
	}
	if err := run(*out, *medium, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mkmodel:", err)
		os.Exit(1)
	}
	if *quant {
		if err := quantize(context.Background(), *out, *llamaDir, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "mkmodel:", err)
			os.Exit(1)
		}
	}
}

// run writes the models and SHA256SUMS (tiny models only) into dir.
func run(dir string, medium bool, log io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var sums strings.Builder
	for _, s := range specs {
		if s.Medium && !medium {
			continue
		}
		path := filepath.Join(dir, s.File)
		kvs, ts := build(s)
		if err := gguf.WriteFile(path, kvs, ts); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		sum, size, err := fileSHA256(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(log, "wrote %s: %d bytes, %d tensors, %d kv, sha256 %s\n", path, size, len(ts), len(kvs), sum)
		if !s.Medium {
			fmt.Fprintf(&sums, "%s  %s\n", sum, s.File)
		}
	}
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(sums.String()), 0o644)
}

func fileSHA256(path string) (string, int64, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return "", 0, fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
