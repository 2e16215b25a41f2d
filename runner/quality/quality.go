// Package quality is the capacity study's quality guard: a fixed list of cases (a prompt and
// a matcher: exact, contains, regex, numeric_within) sent one at a time, greedy and seeded, to
// a fresh llama-server of one (candidate, slots P), each answer judged pass or fail. The
// outcome is written as quality evidence (sparkbench.quality/v1, docs/capacity.md), which the
// assembly scores: k/N, retention against a reference candidate, stability across P.
package quality

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"sparkbench/runner/fsread"
	"sparkbench/runner/jsonlex"
	"sparkbench/runner/loadgen"
	"sparkbench/runner/vocab"
)

// Schemas.
const (
	SchemaCases    = "sparkbench.quality-cases/v1" // the case list
	SchemaEvidence = vocab.SchemaQualityEvidence   // one guard run's outcome
)

// Matchers.
const (
	MatchExact   = "exact"          // the answer, trimmed, equals expect
	MatchContain = "contains"       // the answer contains expect
	MatchRegex   = "regex"          // the answer matches the RE2 expression expect
	MatchNumeric = "numeric_within" // the first number of the answer is within tolerance of expect
)

// DefaultNPredict is a case's answer length when it names none.
const DefaultNPredict = 32

// Cases is the fixed case list, one file:
//
//	{"schema": "sparkbench.quality-cases/v1", "cases": [
//	  {"id": "sum", "prompt": "2+2=", "n_predict": 4, "matcher": "numeric_within", "expect": "4", "tolerance": 0},
//	  {"id": "capital", "prompt": "The capital of France is", "matcher": "contains", "expect": "Paris"}]}
type Cases struct {
	Schema string `json:"schema"`
	Note   string `json:"note,omitempty"`
	Cases  []Case `json:"cases"`
}

// Case is one prompt and how its answer is judged.
type Case struct {
	ID        string  `json:"id"`
	Prompt    string  `json:"prompt"`
	NPredict  int     `json:"n_predict,omitempty"` // default 32
	Matcher   string  `json:"matcher"`
	Expect    string  `json:"expect"`
	Tolerance float64 `json:"tolerance,omitempty"` // numeric_within: absolute
}

// Decode reads a case list strictly and checks every case.
func Decode(name string, data []byte) (*Cases, error) {
	var c Cases
	switch e := jsonlex.DecodeStrict(data, &c); {
	case e == nil:
	case e.Kind == jsonlex.StrictEmpty:
		return nil, fmt.Errorf("%s: empty file; want {\"schema\":%q,\"cases\":[…]}", name, SchemaCases)
	case e.Kind == jsonlex.StrictTrailing:
		return nil, fmt.Errorf("%s: trailing data after the JSON object", name)
	default:
		return nil, fmt.Errorf("%s: %w", name, e.Err)
	}
	if c.Schema != SchemaCases {
		return nil, fmt.Errorf("%s: schema %q: want %q", name, c.Schema, SchemaCases)
	}
	if len(c.Cases) == 0 {
		return nil, fmt.Errorf("%s: no cases", name)
	}
	// A written n_predict is never replaced by the default: 0 is refused, not read as 32.
	var written struct {
		Cases []map[string]json.RawMessage `json:"cases"`
	}
	_ = json.Unmarshal(data, &written)
	seen := map[string]bool{}
	for i, k := range c.Cases {
		nGiven := false
		if i < len(written.Cases) {
			_, nGiven = written.Cases[i]["n_predict"]
		}
		at := fmt.Sprintf("%s: cases[%d]", name, i)
		switch {
		case strings.TrimSpace(k.ID) == "":
			return nil, fmt.Errorf("%s: empty id", at)
		case seen[k.ID]:
			return nil, fmt.Errorf("%s: id %q repeats", at, k.ID)
		case k.Prompt == "":
			return nil, fmt.Errorf("%s (%s): empty prompt", at, k.ID)
		case k.NPredict < 0 || k.NPredict == 0 && nGiven:
			return nil, fmt.Errorf("%s (%s): n_predict %d: want 1 or more tokens, or leave it out for the default %d", at, k.ID, k.NPredict, DefaultNPredict)
		case k.Tolerance < 0:
			return nil, fmt.Errorf("%s (%s): negative tolerance", at, k.ID)
		}
		seen[k.ID] = true
		switch k.Matcher {
		case MatchExact, MatchContain:
		case MatchRegex:
			if _, err := regexp.Compile(k.Expect); err != nil {
				return nil, fmt.Errorf("%s (%s): expect: %v", at, k.ID, err)
			}
		case MatchNumeric:
			if _, err := strconv.ParseFloat(strings.TrimSpace(k.Expect), 64); err != nil {
				return nil, fmt.Errorf("%s (%s): expect %q is not a number", at, k.ID, k.Expect)
			}
		default:
			return nil, fmt.Errorf("%s (%s): matcher %q: want exact, contains, regex or numeric_within", at, k.ID, k.Matcher)
		}
	}
	return &c, nil
}

// Load reads a case list file; it returns the list and the file's SHA-256.
func Load(path string) (*Cases, string, error) {
	data, err := fsread.ReadFile(path, 64<<20, "a quality case list")
	if err != nil {
		return nil, "", fmt.Errorf("read quality cases: %w", err)
	}
	sum := sha256.Sum256(data)
	c, err := Decode(path, data)
	return c, hex.EncodeToString(sum[:]), err
}

var numberRE = regexp.MustCompile(`[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?`)

// Judge says whether an answer passes a case, with a short reason.
func (k Case) Judge(answer string) (bool, string) {
	switch k.Matcher {
	case MatchExact:
		return strings.TrimSpace(answer) == k.Expect, "exact " + strconv.Quote(k.Expect)
	case MatchContain:
		return strings.Contains(answer, k.Expect), "contains " + strconv.Quote(k.Expect)
	case MatchRegex:
		re, err := regexp.Compile(k.Expect)
		if err != nil {
			return false, err.Error()
		}
		return re.MatchString(answer), "regex " + k.Expect
	case MatchNumeric:
		want, _ := strconv.ParseFloat(strings.TrimSpace(k.Expect), 64)
		m := numberRE.FindString(answer)
		if m == "" {
			return false, "no number in the answer"
		}
		got, err := strconv.ParseFloat(m, 64)
		if err != nil {
			return false, "no number in the answer"
		}
		return math.Abs(got-want) <= k.Tolerance, fmt.Sprintf("%s within %g of %s", m, k.Tolerance, k.Expect)
	}
	return false, "unknown matcher " + k.Matcher
}

// Evidence is one guard run's outcome (the shape app/capacity reads).
type Evidence struct {
	Schema    string        `json:"schema"`
	Candidate string        `json:"candidate"`
	Slots     int           `json:"slots"`
	Cases     []CaseOutcome `json:"cases"`
}

// CaseOutcome is one case's verdict; Detail quotes the answer.
type CaseOutcome struct {
	ID      string `json:"id"`
	Outcome string `json:"outcome"` // "pass" or "fail"
	Matcher string `json:"matcher,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// Score counts the passed cases.
func (e Evidence) Score() int {
	n := 0
	for _, c := range e.Cases {
		if c.Outcome == "pass" {
			n++
		}
	}
	return n
}

// Config is one guard run.
type Config struct {
	URL       string // the fresh server's base URL
	Candidate string
	Slots     int
	Seed      int64
	Timeout   time.Duration // per case; default 2 min
}

// Run sends the cases one at a time and judges each answer. A request that fails is a failed
// case (its detail says why); only a cancelled ctx ends the run early, with ctx's error.
func Run(ctx context.Context, cfg Config, cases *Cases) (Evidence, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	tr := loadgen.NewTransport(1)
	// One connection per case: llama-server may close a kept-alive connection after a stream,
	// and a POST sent on it then fails with EOF (Go does not resend a POST), which would read
	// as a failed case. The cases are few and sequential, so a new connection each costs nothing.
	tr.DisableKeepAlives = true
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	ev := Evidence{Schema: SchemaEvidence, Candidate: cfg.Candidate, Slots: cfg.Slots, Cases: []CaseOutcome{}}
	for _, k := range cases.Cases {
		if err := ctx.Err(); err != nil {
			return ev, err
		}
		n := k.NPredict
		if n == 0 {
			n = DefaultNPredict
		}
		cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		c, err := loadgen.Complete(cctx, client, cfg.URL, k.Prompt, n, cfg.Seed)
		cancel()
		out := CaseOutcome{ID: k.ID, Outcome: "fail", Matcher: k.Matcher}
		if err != nil {
			out.Detail = clip("request failed: " + err.Error())
		} else {
			pass, why := k.Judge(c.Text)
			if pass {
				out.Outcome = "pass"
			}
			out.Detail = clip(fmt.Sprintf("answer %q (%s)", c.Text, why))
		}
		ev.Cases = append(ev.Cases, out)
	}
	return ev, nil
}

func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > 300 {
		cut := 300
		for cut > 0 && (s[cut]&0xC0) == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
