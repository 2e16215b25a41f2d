package capout

import (
	"fmt"
	"strings"
	"testing"
)

func TestBufferKeepsEverythingUnderTheCap(t *testing.T) {
	b := New(1000)
	for i := 0; i < 10; i++ {
		fmt.Fprintf(b, "line %d\n", i)
	}
	want := ""
	for i := 0; i < 10; i++ {
		want += fmt.Sprintf("line %d\n", i)
	}
	if b.String() != want || b.Omitted() != 0 || b.Total() != int64(len(want)) || b.Kept() != len(want) {
		t.Fatalf("got %q (omitted %d)", b.String(), b.Omitted())
	}
}

func TestBufferKeepsHeadAndTailOfAFlood(t *testing.T) {
	const capBytes = 64 << 10
	b := New(capBytes)
	const first, last = "version: 0.7.0 (build 11669, commit Debian)\n", "Available devices:\n  Vulkan0: Fake GPU (24576 MiB, 23000 MiB free)\n"
	b.WriteString(first)
	line := strings.Repeat("flood ", 20) + "\n"
	total := int64(len(first))
	for total < 10<<20 {
		b.WriteString(line)
		total += int64(len(line))
	}
	b.Write([]byte(last))
	total += int64(len(last))
	if b.Total() != total || b.Kept() != capBytes || b.Omitted() != total-capBytes {
		t.Fatalf("total %d (want %d) kept %d omitted %d", b.Total(), total, b.Kept(), b.Omitted())
	}
	s := b.String()
	if len(s) > capBytes+100 {
		t.Fatalf("String is %d bytes, cap %d", len(s), capBytes)
	}
	if !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		t.Errorf("head or tail lost: %q … %q", s[:80], s[len(s)-80:])
	}
	if strings.Count(s, "bytes of output not kept (capture cap 65536 bytes)]\n") != 1 {
		t.Error("no marker line")
	}
	// every line but the marker is whole
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if !strings.HasPrefix(l, "[sparkbench:") && l != strings.TrimSuffix(line, "\n") && !strings.HasPrefix(l, "version") &&
			!strings.HasPrefix(l, "Available") && !strings.HasPrefix(l, "  Vulkan0") {
			t.Fatalf("cut line %q", l)
		}
	}
}

func TestBufferOneHugeWrite(t *testing.T) {
	b := New(1024)
	big := []byte(strings.Repeat("x", 1<<20) + "\nlast line\n")
	if n, err := b.Write(big); n != len(big) || err != nil {
		t.Fatalf("write %d %v", n, err)
	}
	s := b.String()
	if b.Kept() != 1024 || !strings.HasSuffix(s, "\nlast line\n") || !strings.Contains(s, "[sparkbench: ") || len(s) > 1024+100 {
		t.Fatalf("kept %d, %q", b.Kept(), s)
	}
}
