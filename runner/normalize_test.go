package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func splitAll(max int, chunks ...[]byte) (lines []string, cuts []int64) {
	s := newLineSplitter(max)
	emit := func(l []byte, cut int64) {
		lines = append(lines, string(l))
		cuts = append(cuts, cut)
	}
	for _, c := range chunks {
		s.feed(c, emit)
	}
	s.flush(emit)
	return lines, cuts
}

func TestLineSplitter(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"lf", "a\nb\n", []string{"a", "b"}},
		{"no final newline", "a\r\nb", []string{"a", "b"}},
		{"lone cr redraw", "10%\r50%\r100%\r\n", []string{"10%", "50%", "100%"}},
		{"cr run", "a\r\r\nb\r\r\r\n", []string{"a", "b"}},
		{"blank lines kept", "a\r\n\r\nb\r\n", []string{"a", "", "b"}},
		{"sgr colour", "\x1b[1;31mred\x1b[0m text\r\n", []string{"red text"}},
		{"cursor moves", "\x1b[2K\x1b[1Gline\x1b[?25l\r\n", []string{"line"}},
		{"osc title bel", "\x1b]0;title\x07after\n", []string{"after"}},
		{"osc title st", "\x1b]0;title\x1b\\after\n", []string{"after"}},
		{"charset", "\x1b(Bplain\n", []string{"plain"}},
		{"two-byte esc", "\x1b7saved\x1b8\n", []string{"saved"}},
		{"controls dropped, tab kept", "a\x07\x08b\tc\x00\n", []string{"ab\tc"}},
		{"newline ends broken csi", "\x1b[12\nnext\n", []string{"", "next"}},
		{"utf8 kept", "pp512 ± 1.5 — ok\n", []string{"pp512 ± 1.5 — ok"}},
		{"invalid utf8 kept", "a\xffb\n", []string{"a\xffb"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _ := splitAll(0, []byte(c.in))
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			// every two-way split gives the same lines
			for i := 0; i <= len(c.in); i++ {
				g2, _ := splitAll(0, []byte(c.in[:i]), []byte(c.in[i:]))
				if !reflect.DeepEqual(g2, c.want) {
					t.Fatalf("split at %d: got %q", i, g2)
				}
			}
		})
	}
}

func TestLineSplitterCapsLongLines(t *testing.T) {
	long := strings.Repeat("x", 100)
	lines, cuts := splitAll(10, []byte(long[:30]), []byte(long[30:]+"\nshort\n"))
	if len(lines) != 2 || cuts[0] != 90 || !strings.HasPrefix(lines[0], "xxxxxxxxxx …[sparkbench: 90 more bytes") || lines[1] != "short" {
		t.Fatalf("lines %q cuts %v", lines, cuts)
	}
}

// The real pty capture: CRLF, merged streams, UTF-8 "±" in the table.
func TestLineSplitterRealPtyCapture(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "llama", "bench-md-under-pty.raw"))
	if err != nil {
		t.Fatal(err)
	}
	lines, _ := splitAll(0, raw)
	want := strings.Split(strings.TrimSuffix(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n"), "\n")
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("got %d lines, want %d", len(lines), len(want))
	}
	for _, l := range lines {
		if strings.ContainsAny(l, "\r\n") {
			t.Fatalf("line keeps a line end: %q", l)
		}
	}
	if !strings.Contains(strings.Join(lines, "\n"), "| llama ?B (guessed) all F32     |   0.63 MiB |") {
		t.Error("table row missing")
	}
}

func FuzzLineSplitter(f *testing.F) {
	f.Add([]byte("a\r\nb\x1b[31mc\x1b[0m\r\n"), uint16(3))
	f.Add([]byte("\x1b]0;t\x07x\ry\r\r\nz"), uint16(1))
	f.Add([]byte(strings.Repeat("y", 300)+"\n"), uint16(100))
	f.Fuzz(func(t *testing.T, data []byte, at uint16) {
		const max = 64
		whole, wcuts := splitAll(max, data)
		i := int(at) % (len(data) + 1)
		parts, pcuts := splitAll(max, data[:i], data[i:])
		if !reflect.DeepEqual(whole, parts) || !reflect.DeepEqual(wcuts, pcuts) {
			t.Fatalf("split at %d changes the lines:\n%q\n%q", i, whole, parts)
		}
		for k, l := range whole {
			if strings.ContainsAny(l, "\r\n\x1b\x00") {
				t.Fatalf("line %q keeps a control byte", l)
			}
			if wcuts[k] == 0 && len(l) > max {
				t.Fatalf("line of %d bytes over the cap %d without a cut", len(l), max)
			}
		}
	})
}

func TestRecorderCapsHeadAndTail(t *testing.T) {
	r := newRecorder(time.Unix(0, 0), 400) // head 100, tail 300
	var all bytes.Buffer
	for i := 0; i < 50; i++ {
		chunk := []byte(strings.Repeat(string(rune('a'+i%26)), 37))
		all.Write(chunk)
		r.add(time.Duration(i)*time.Millisecond, chunk)
	}
	tr := r.transcript()
	if tr.Total != int64(all.Len()) || tr.Kept() > 400 || tr.Kept()+tr.Omitted() != tr.Total {
		t.Fatalf("total %d kept %d omitted %d", tr.Total, tr.Kept(), tr.Omitted())
	}
	// head is the start of the stream, tail its end
	var head, tail []byte
	seenCut := false
	for _, rec := range tr.Records {
		if rec.Omitted > 0 {
			seenCut = true
			continue
		}
		if seenCut {
			tail = append(tail, rec.Data...)
		} else {
			head = append(head, rec.Data...)
		}
	}
	if !bytes.HasPrefix(all.Bytes(), head) || len(head) != 100 || !bytes.HasSuffix(all.Bytes(), tail) || !seenCut {
		t.Fatalf("head %d bytes tail %d bytes, cut %v", len(head), len(tail), seenCut)
	}
	// timestamps never go backwards
	for i := 1; i < len(tr.Records); i++ {
		if tr.Records[i].T < tr.Records[i-1].T {
			t.Fatalf("record %d goes back in time", i)
		}
	}
	if !bytes.Contains(tr.Bytes(), []byte("bytes of output not kept")) {
		t.Error("no marker")
	}
}

func TestTranscriptBinaryRoundTrip(t *testing.T) {
	r := newRecorder(time.Unix(1700000000, 123), 64)
	for i := 0; i < 20; i++ {
		r.add(time.Duration(i)*1500*time.Microsecond, []byte("chunk \x1b[1m"+strings.Repeat("z", i)+"\r\n"))
	}
	tr := r.transcript()
	b, err := tr.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var back Transcript
	if err := back.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !back.Start.Equal(tr.Start) || back.Total != tr.Total || back.Cap != tr.Cap || !reflect.DeepEqual(back.Records, tr.Records) {
		t.Fatalf("round trip differs:\n%+v\n%+v", back, *tr)
	}
	overhead := len(b) - int(tr.Kept())
	if overhead > 32+len(tr.Records)*8 {
		t.Errorf("encoding overhead %d bytes for %d records", overhead, len(tr.Records))
	}
	for _, bad := range [][]byte{nil, []byte("SBTRANS1"), b[:len(b)-1], append(append([]byte{}, b...), 0)} {
		var x Transcript
		if err := x.UnmarshalBinary(bad); err == nil {
			t.Errorf("accepted %d bad bytes", len(bad))
		}
	}
}
