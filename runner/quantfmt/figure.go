package quantfmt

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Figure is one number a tool printed: its value, its ± uncertainty when the tool printed
// one, and the 1-based output line it was read from. Values keep the tool's unit (a
// percentage stays 81.548, not 0.81548). NaN and ±Inf are kept as the tool printed them
// ("nan", "-nan", "inf"); in JSON they are the strings "NaN", "+Inf" and "-Inf".
type Figure struct {
	Value float64
	PM    float64 // the ± figure; meaningful only when HasPM
	HasPM bool
	Line  int
}

type figureJSON struct {
	Value json.RawMessage `json:"value"`
	PM    json.RawMessage `json:"pm,omitempty"`
	Line  int             `json:"line"`
}

func floatJSON(v float64) json.RawMessage {
	switch {
	case math.IsNaN(v):
		return json.RawMessage(`"NaN"`)
	case math.IsInf(v, 1):
		return json.RawMessage(`"+Inf"`)
	case math.IsInf(v, -1):
		return json.RawMessage(`"-Inf"`)
	}
	return json.RawMessage(strconv.FormatFloat(v, 'g', -1, 64))
}

func floatFromJSON(b json.RawMessage) (float64, error) {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		switch s {
		case "NaN":
			return math.NaN(), nil
		case "+Inf":
			return math.Inf(1), nil
		case "-Inf":
			return math.Inf(-1), nil
		}
		return 0, fmt.Errorf("figure value %q: want a number, \"NaN\", \"+Inf\" or \"-Inf\"", s)
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, fmt.Errorf("figure value %s: %w", b, err)
	}
	return v, nil
}

// MarshalJSON writes {"value": …, "pm": …, "line": N}; pm only when the tool printed one.
func (f Figure) MarshalJSON() ([]byte, error) {
	j := figureJSON{Value: floatJSON(f.Value), Line: f.Line}
	if f.HasPM {
		j.PM = floatJSON(f.PM)
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *Figure) UnmarshalJSON(b []byte) error {
	var j figureJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	v, err := floatFromJSON(j.Value)
	if err != nil {
		return err
	}
	*f = Figure{Value: v, Line: j.Line}
	if len(j.PM) > 0 {
		if f.PM, err = floatFromJSON(j.PM); err != nil {
			return err
		}
		f.HasPM = true
	}
	return nil
}

func (f Figure) String() string {
	if f.HasPM {
		return fmt.Sprintf("%g ± %g (line %d)", f.Value, f.PM, f.Line)
	}
	return fmt.Sprintf("%g (line %d)", f.Value, f.Line)
}

// numPat matches a number as llama.cpp's printf prints it, nan and inf included.
const numPat = `[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf|NaN|Inf|NAN|INF)`

// parseNum reads one number printed by printf: digits, or nan/-nan/inf/-inf in any case.
func parseNum(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	switch strings.TrimLeft(strings.ToLower(s), "+-") {
	case "nan":
		return math.NaN(), true
	case "inf", "infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

func atoi(s string) int {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < 0 {
		return -1
	}
	return v
}

// logPrefixRE is the prefix of llama.cpp's common log (the tools built on common/: perplexity,
// imatrix …): elapsed minutes.seconds.milliseconds.microseconds and a level letter, e.g.
// "0.00.304.467 E perplexity: …". Tools that log through llama_log (llama-quantize) print none.
var logPrefixRE = regexp.MustCompile(`^\d+\.\d{2}\.\d{3}\.\d{3} ([A-Z])(?: |$)`)

// splitLogPrefix returns the level letter (0 when the line has no prefix) and the text after it.
func splitLogPrefix(line string) (byte, string) {
	if m := logPrefixRE.FindStringSubmatchIndex(line); m != nil {
		return line[m[2]], line[m[1]:]
	}
	return 0, line
}

// maxText bounds the text of a line kept in a result (a failure's words).
const maxText = 400

func clipText(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxText {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	cut := maxText
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "\uFFFD") + "…"
}

// ToolLine is a line the tool printed that a reader needs in words: an error, a warning, a
// failure. Line is its 1-based output line; Text is clipped to 400 bytes.
type ToolLine struct {
	Line int    `json:"line"`
	Text string `json:"text"`
}

// maxLines bounds how many lines of one kind a parser keeps.
const maxLines = 64

func appendLine(dst []ToolLine, n int, text string) []ToolLine {
	if len(dst) >= maxLines {
		return dst
	}
	return append(dst, ToolLine{Line: n, Text: clipText(text)})
}
