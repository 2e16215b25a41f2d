package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// A log that floods layer and buffer lines (200,000 of each) keeps MaxEvidenceEntries of
// each and counts the rest; a real log's evidence has no "omitted" key in its JSON.
func TestFaultsEvidenceOfAFloodingLogIsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("llama_model_loader: loaded meta data with 30 key-value pairs\n")
	for i := 0; i < 200000; i++ {
		b.WriteString("load_tensors: layer   1 assigned to device CPU, is_swa = 0\n")
		b.WriteString("llama_kv_cache:        CPU KV buffer size =    16.00 MiB\n")
	}
	ev, err := ScanEvidence([]byte(b.String()), Markers{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Layers) != MaxEvidenceEntries || len(ev.Buffers) != MaxEvidenceEntries || ev.Omitted != 2*(200000-MaxEvidenceEntries) {
		t.Fatalf("layers %d buffers %d omitted %d", len(ev.Layers), len(ev.Buffers), ev.Omitted)
	}
	real, err := ScanEvidence([]byte("llama_model_loader: loaded meta data with 30 key-value pairs\nload_tensors: layer   0 assigned to device CPU, is_swa = 0\n"), Markers{})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(real)
	if len(real.Layers) != 1 || strings.Contains(string(js), "omitted") {
		t.Errorf("real log: %s", js)
	}
}
