package loadgen

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// tricky events: each must give the same result on scanEvent's fast path as by encoding/json,
// and fast says whether it must take the fast path (the common shapes, so that the speed does
// not silently go).
var trickyEvents = []struct {
	name, data string
	fast       bool
}{
	{"token", `{"index":0,"content":"g","tokens":[106],"stop":false,"id_slot":-1,"tokens_predicted":1,"tokens_evaluated":9}`, true},
	{"escaped quotes", `{"index":0,"content":"\"stop\":true, \"error\":1","tokens":[1],"stop":false,"tokens_predicted":12}`, true},
	{"escapes", `{"content":"\\\/\b\f\n\r\t","tokens":[1],"stop":false,"tokens_predicted":2}`, true},
	{"unicode escape", `{"content":"\u00e9\u0000","tokens":[233],"stop":false,"tokens_predicted":3}`, true},
	{"surrogate pair", `{"content":"\ud83d\ude00","tokens":[1],"stop":false,"tokens_predicted":3}`, true},
	{"lone surrogate", `{"content":"\ud800","tokens":[],"stop":false,"tokens_predicted":3}`, true},
	{"empty content, tokens", `{"index":0,"content":"","tokens":[7],"stop":false,"tokens_predicted":3}`, true},
	{"empty content, no tokens", `{"index":0,"content":"","tokens":[],"stop":false,"tokens_predicted":3}`, true},
	{"no tokens field", `{"content":"","stop":false,"tokens_predicted":4}`, true},
	{"invalid UTF-8 content", "{\"content\":\"\xf7\xff\",\"tokens\":[158],\"stop\":false,\"tokens_predicted\":2}", true},
	{"raw UTF-8 content", `{"content":"¤ é 😀","tokens":[167],"stop":false,"tokens_predicted":13}`, true},
	{"spaces and newlines", "{ \"content\" : \"a\" ,\n\"tokens\" : [ 1 , 2 ] ,\r\n\t\"stop\" : true , \"tokens_predicted\" : 2 }", true},
	{"nested stop and content", `{"content":"","x":{"stop":true,"content":"z","tokens":[1]},"y":[{"error":1}],"stop":false,"tokens_predicted":1}`, true},
	{"negative and zero", `{"content":"","tokens":[-1,0,-0],"stop":false,"tokens_predicted":-0}`, true},
	{"18 digits", `{"content":"a","stop":false,"tokens_predicted":123456789012345678}`, true},
	{"empty object", `{}`, true},
	{"final, fake", `{"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,"model":"fake","tokens_predicted":64,"tokens_evaluated":9,"stop_type":"limit","timings":{"cache_n":0,"prompt_n":9,"prompt_ms":20.000,"predicted_n":64,"predicted_ms":630.000,"predicted_per_second":101.587}}`, true},
	{"final, empty timings", `{"content":"","stop":true,"tokens_predicted":1,"stop_type":"eos","timings":{}}`, true},
	{"final, odd stop type", `{"content":"","stop":true,"tokens_predicted":1,"stop_type":"something new"}`, true},
	{"final, float forms", `{"stop":true,"timings":{"prompt_ms":1e3,"predicted_ms":-0.5E-2,"predicted_per_second":0,"x":[1.5e300,true,null,"\u1234"]}}`, true},
	{"stop with spaces", `{"content":"","tokens":[],"stop" : true,"tokens_predicted":16}`, true},
	{"raw UTF-8 stop type", `{"stop":true,"stop_type":"é"}`, true},

	// Left to encoding/json.
	{"error event", `{"error":{"code":500,"message":"[json.exception.type_error.316] invalid UTF-8 byte at index 10: 0xF7","type":"server_error"}}`, false},
	{"null error", `{"content":"a","error":null,"tokens_predicted":1}`, false},
	{"case-folded key", `{"content":"","Stop":true,"tokens_predicted":3}`, false},
	{"case-folded content", `{"CONTENT":"x","tokens_predicted":3}`, false},
	{"unicode-folded key", `{"content":"","ſtop":true,"tokens_predicted":3}`, false},
	{"kelvin-folded key", `{"content":"","to` + "\u212a" + `ens":[1],"tokens_predicted":3}`, false},
	{"escaped key", `{"cont\u0065nt":"x","tokens_predicted":3}`, false},
	{"duplicate key", `{"content":"a","tokens_predicted":1,"tokens_predicted":2}`, false},
	{"duplicate content", `{"content":"a","content":"","tokens_predicted":2}`, false},
	{"duplicate timings", `{"stop":true,"timings":{"prompt_n":1},"timings":{"predicted_n":2}}`, false},
	{"case-folded timing", `{"stop":true,"timings":{"Prompt_N":4}}`, false},
	{"duplicate timing", `{"stop":true,"timings":{"prompt_n":4,"prompt_n":5}}`, false},
	{"null content", `{"content":null,"tokens":[1],"tokens_predicted":1}`, false},
	{"null tokens", `{"content":"a","tokens":null,"tokens_predicted":1}`, false},
	{"null token", `{"content":"a","tokens":[null],"tokens_predicted":1}`, false},
	{"null stop", `{"content":"a","stop":null,"tokens_predicted":1}`, false},
	{"null timings", `{"stop":true,"timings":null}`, false},
	{"escaped stop type", `{"stop":true,"stop_type":"li\u006dit"}`, false},
	{"invalid UTF-8 stop type", "{\"stop\":true,\"stop_type\":\"\xf0\"}", false},
	{"null document", `null`, false},
	{"deep nesting", `{"content":"a","x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, false},

	// Errors (encoding/json's message is the record's).
	{"fraction", `{"content":"a","tokens_predicted":1.0}`, false},
	{"exponent", `{"content":"a","tokens_predicted":1e2}`, false},
	{"overflow", `{"content":"a","tokens_predicted":99999999999999999999}`, false},
	{"string number", `{"content":"a","tokens_predicted":"3"}`, false},
	{"float token", `{"content":"a","tokens":[1.5],"tokens_predicted":1}`, false},
	{"number content", `{"content":5,"tokens_predicted":1}`, false},
	{"string stop", `{"content":"","stop":"true","tokens_predicted":1}`, false},
	{"float out of range", `{"stop":true,"timings":{"prompt_ms":1e400}}`, false},
	{"int timing with fraction", `{"stop":true,"timings":{"prompt_n":9.5}}`, false},
	{"truncated", `{"index":0,"content":"a","tokens":[1],"stop":false,"tokens_predicted":3`, false},
	{"trailing garbage", `{"content":"a","tokens_predicted":3} x`, false},
	{"two objects", `{"content":"a"}{"content":"b"}`, false},
	{"control character", "{\"content\":\"a\tb\",\"tokens_predicted\":3}", false},
	{"bad escape", `{"content":"\x41","tokens_predicted":3}`, false},
	{"short unicode escape", `{"content":"\u12","tokens_predicted":3}`, false},
	{"leading zero", `{"content":"a","tokens_predicted":01}`, false},
	{"trailing comma", `{"content":"a","tokens_predicted":1,}`, false},
	{"trailing comma in array", `{"content":"a","tokens":[1,],"tokens_predicted":1}`, false},
	{"bad literal", `{"content":"a","stop":tru,"tokens_predicted":1}`, false},
	{"bad nested literal", `{"content":"a","x":[nul],"tokens_predicted":1}`, false},
	{"invalid UTF-8 key", "{\"content\":\"a\",\"\xff\":1,\"tokens_predicted\":1}", false},
	{"OpenAI terminator", `[DONE]`, false},
	{"array", `[{"content":"a"}]`, false},
	{"empty", ``, false},
}

// checkScan compares scanEvent with encoding/json on data: when the fast path answers, the
// reference must decode without error to the same event.
func checkScan(t *testing.T, name string, data []byte) (fast bool) {
	t.Helper()
	got, ok := scanEvent(data)
	ref, err := decodeEvent(data)
	if ok {
		if err != nil {
			t.Errorf("%s: scanEvent accepted %q; encoding/json: %v", name, data, err)
			return ok
		}
		if want := ref.event(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: scanEvent(%q)\n = %+v (timings %+v)\nencoding/json %+v (timings %+v)", name, data, got, got.timings, want, want.timings)
		}
	}
	// parseEvent is the reference whichever path it takes.
	pe, perr := parseEvent(data)
	if (perr == nil) != (err == nil) || (perr != nil && perr.Error() != err.Error()) {
		t.Errorf("%s: parseEvent error %v, encoding/json %v", name, perr, err)
	} else if err == nil && !reflect.DeepEqual(pe, ref.event()) {
		t.Errorf("%s: parseEvent %+v, encoding/json %+v", name, pe, ref.event())
	}
	return ok
}

func TestScanEventMatchesJSON(t *testing.T) {
	for _, tc := range trickyEvents {
		if fast := checkScan(t, tc.name, []byte(tc.data)); fast != tc.fast {
			t.Errorf("%s: fast path %v, want %v (%s)", tc.name, fast, tc.fast, tc.data)
		}
	}
	// Every prefix of the common events is a broken event: never accepted by the fast path.
	for _, tc := range trickyEvents[:21] {
		for n := range len(tc.data) - 1 {
			checkScan(t, tc.name+" prefix", []byte(tc.data[:n]))
		}
	}
}

func TestScanEventFields(t *testing.T) {
	ev, ok := scanEvent([]byte(trickyEvents[16].data))
	want := event{stop: true, predicted: 64, stopType: "limit",
		timings: &ServerTimings{PromptN: 9, PromptMs: 20, PredictedN: 64, PredictedMs: 630, PredictedPerSecond: 101.587}}
	if !ok || !reflect.DeepEqual(ev, want) {
		t.Fatalf("final event: %+v %+v %v", ev, ev.timings, ok)
	}
	ev, ok = scanEvent([]byte(trickyEvents[0].data))
	if !ok || ev != (event{content: true, predicted: 1}) {
		t.Fatalf("token event: %+v %v", ev, ok)
	}
	// The final event of the fake server, as it writes it.
	data := appendFinalEvent(nil, 64, FakeConfig{TTFT: 20 * time.Millisecond, ITL: 10 * time.Millisecond})
	data = bytes.TrimSuffix(bytes.TrimPrefix(data, []byte("data: ")), []byte("\n\n"))
	if !checkScan(t, "fake final", data) {
		t.Errorf("the fake's final event %s is not on the fast path", data)
	}
}

// The captured llama-server streams, event by event: the same on both paths, and every event
// but the error event on the fast path (the invalid-UTF-8 stream's content is raw bytes).
func TestScanEventCapturedStreams(t *testing.T) {
	for name, events := range map[string]int{"server-completion-stream.sse.http": 17, "allbytes-model.server-completion-stream-invalid-utf8.sse.http": 6} {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
		sr := newSSEReader(bytes.NewReader(body), 64)
		n := 0
		for {
			data, err := sr.next()
			if err != nil {
				break
			}
			n++
			isErr := bytes.HasPrefix(data, []byte(`{"error"`))
			if fast := checkScan(t, name, data); fast == isErr {
				t.Errorf("%s event %d: fast path %v: %s", name, n, fast, data)
			}
		}
		if n != events {
			t.Fatalf("%s: %d events, want %d", name, n, events)
		}
	}
}

func FuzzScanEvent(f *testing.F) {
	for _, tc := range trickyEvents {
		f.Add([]byte(tc.data))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkScan(t, "fuzz", b)
	})
}

// The hot path allocates nothing for a token event.
func TestScanEventAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are counted differently under the race detector")
	}
	data := []byte(trickyEvents[0].data)
	if n := testing.AllocsPerRun(100, func() { _, _ = parseEvent(data) }); n != 0 {
		t.Errorf("%v allocations per token event", n)
	}
}

func BenchmarkParseEvent(b *testing.B) {
	for _, tc := range []struct{ name, data string }{{"token", trickyEvents[0].data}, {"final", trickyEvents[16].data}} {
		data := []byte(tc.data)
		b.Run("scan/"+tc.name, func(b *testing.B) {
			for b.Loop() {
				_, _ = parseEvent(data)
			}
		})
		b.Run("json/"+tc.name, func(b *testing.B) {
			for b.Loop() {
				_, _ = decodeEvent(data)
			}
		})
	}
}
