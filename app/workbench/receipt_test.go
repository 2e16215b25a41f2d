package workbench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReceiptRequestCheck: each request that cannot be exported as given is refused with a
// RequestError that says what to give, before anything is read or written.
func TestReceiptRequestCheck(t *testing.T) {
	dir := t.TempDir()
	taken := filepath.Join(dir, "taken.tar.gz")
	if err := os.WriteFile(taken, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		req  ReceiptRequest
		want string
	}{
		{ReceiptRequest{Study: "1"}, "--out is required"},
		{ReceiptRequest{Out: filepath.Join(dir, "r")}, "want one study id or name"},
		{ReceiptRequest{Study: "1", CapacityRun: dir, Out: filepath.Join(dir, "r")}, "not both"},
		{ReceiptRequest{Study: "1", Out: filepath.Join(dir, "r"), PromptPlan: "p.json"}, "apply to --capacity-run only"},
		{ReceiptRequest{Study: "1", Out: filepath.Join(dir, "r"), BenchTG: map[string]float64{"a": 1}}, "apply to --capacity-run only"},
		{ReceiptRequest{Study: "1", Out: taken}, "exists; choose a new file name"},
	}
	for _, c := range cases {
		err := c.req.Check()
		var re *RequestError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want a RequestError saying %q", c.req, err, c.want)
		}
		if _, xerr := ExportReceipt(context.Background(), nil, c.req); xerr == nil || xerr.Error() != err.Error() {
			t.Errorf("ExportReceipt(%+v) = %v; want the same refusal %v", c.req, xerr, err)
		}
	}
	if err := (ReceiptRequest{Study: "1", Out: filepath.Join(dir, "new")}).Check(); err != nil {
		t.Errorf("a good request refused: %v", err)
	}
}

// TestExportReceiptCancelledWritesNothing: a cancelled export says so and leaves no file.
func TestExportReceiptCancelledWritesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(t.TempDir(), "r.tar.gz")
	if _, err := ExportReceipt(ctx, nil, ReceiptRequest{CapacityRun: t.TempDir(), Out: out}); !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancelled export: %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a cancelled export wrote %s (%v)", out, err)
	}
}
