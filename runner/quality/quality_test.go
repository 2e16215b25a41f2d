package quality

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
	"sparkbench/runner/loadgen"
	"sparkbench/runner/server"
)

func TestDecode(t *testing.T) {
	good := `{"schema":"sparkbench.quality-cases/v1","cases":[
	 {"id":"a","prompt":"2+2=","matcher":"numeric_within","expect":"4","tolerance":0.5},
	 {"id":"b","prompt":"x","matcher":"regex","expect":"^\\d+$","n_predict":4}]}`
	c, err := Decode("q.json", []byte(good))
	if err != nil || len(c.Cases) != 2 {
		t.Fatal(c, err)
	}
	for _, bad := range []string{
		`{"schema":"x","cases":[{"id":"a","prompt":"p","matcher":"exact","expect":"e"}]}`,
		`{"schema":"sparkbench.quality-cases/v1","cases":[]}`,
		`{"schema":"sparkbench.quality-cases/v1","cases":[{"id":"a","prompt":"p","matcher":"fuzzy","expect":"e"}]}`,
		`{"schema":"sparkbench.quality-cases/v1","cases":[{"id":"a","prompt":"p","matcher":"regex","expect":"("}]}`,
		`{"schema":"sparkbench.quality-cases/v1","cases":[{"id":"a","prompt":"p","matcher":"numeric_within","expect":"four"}]}`,
		`{"schema":"sparkbench.quality-cases/v1","cases":[{"id":"a","prompt":"p","matcher":"exact","expect":"e"},{"id":"a","prompt":"q","matcher":"exact","expect":"e"}]}`,
		`{"schema":"sparkbench.quality-cases/v1","cases":[{"id":"a","prompt":"p","matcher":"exact","expect":"e","typo":1}]}`,
	} {
		if _, err := Decode("q.json", []byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		k      Case
		answer string
		pass   bool
	}{
		{Case{Matcher: MatchExact, Expect: "4"}, " 4\n", true},
		{Case{Matcher: MatchExact, Expect: "4"}, "4.0", false},
		{Case{Matcher: MatchContain, Expect: "Paris"}, "It is Paris.", true},
		{Case{Matcher: MatchRegex, Expect: `^\s*\d+\b`}, " 42 apples", true},
		{Case{Matcher: MatchNumeric, Expect: "3.14", Tolerance: 0.01}, "about 3.141 or so", true},
		{Case{Matcher: MatchNumeric, Expect: "3.14", Tolerance: 0.01}, "about 3.2", false},
		{Case{Matcher: MatchNumeric, Expect: "-2"}, "x = -2", true},
		{Case{Matcher: MatchNumeric, Expect: "1"}, "none", false},
	} {
		if got, why := tc.k.Judge(tc.answer); got != tc.pass {
			t.Errorf("%+v on %q = %v (%s)", tc.k, tc.answer, got, why)
		}
	}
}

// The fake streams letters determined by the prompt's length: prompt "ab" with 3 tokens
// answers "cde".
func TestRunAgainstFake(t *testing.T) {
	f, err := loadgen.StartFake(loadgen.FakeConfig{TTFT: time.Millisecond, ITL: 100 * time.Microsecond, Fault: func(n int) loadgen.Fault {
		if n == 3 {
			return loadgen.Fault{Status: 500, Body: `{"error":{"code":500,"message":"boom","type":"server_error"}}`}
		}
		return loadgen.Fault{}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases := &Cases{Schema: SchemaCases, Cases: []Case{
		{ID: "exact", Prompt: "ab", NPredict: 3, Matcher: MatchExact, Expect: "cde"},
		{ID: "contains", Prompt: "ab", NPredict: 3, Matcher: MatchContain, Expect: "zz"},
		{ID: "regex", Prompt: "abc", NPredict: 2, Matcher: MatchRegex, Expect: `^de$`},
		{ID: "error", Prompt: "x", NPredict: 2, Matcher: MatchContain, Expect: ""},
	}}
	ev, err := Run(context.Background(), Config{URL: f.URL, Candidate: "c", Slots: 2, Seed: 1}, cases)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, c := range ev.Cases {
		got += c.ID + "=" + c.Outcome + " "
	}
	if got != "exact=pass contains=fail regex=pass error=fail " || ev.Score() != 2 {
		t.Fatalf("%s %+v", got, ev)
	}
	if !strings.Contains(ev.Cases[3].Detail, "HTTP 500: boom") || !strings.Contains(ev.Cases[0].Detail, `answer "cde"`) {
		t.Errorf("details %+v", ev.Cases)
	}
}

// On the real server the same cases give the same answers at one and at two slots (greedy,
// seeded): the guard's stability check depends on it.
func TestRealServerStable(t *testing.T) {
	loc := llamatest.Binaries(t)
	model := llamatest.Model(t, "tiny-llama-f32.gguf")
	cases := &Cases{Schema: SchemaCases, Cases: []Case{
		{ID: "any", Prompt: "Question 1. What is two plus two?", NPredict: 8, Matcher: MatchRegex, Expect: `(?s).+`},
		{ID: "never", Prompt: "Question 2. Name a colour.", NPredict: 8, Matcher: MatchExact, Expect: "a colour nobody says"},
	}}
	tag := fmt.Sprintf("SPARKBENCH_TEST_TAG=quality-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		time.Sleep(50 * time.Millisecond)
		if left := server.ProcessesWithEnv(tag); len(left) > 0 {
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("servers survived: %v", left)
		}
	})
	var answers []string
	for _, p := range []int{1, 2} {
		srv, err := server.Start(context.Background(), server.Spec{Binary: loc.Server, StartTimeout: time.Minute, Env: []string{tag},
			Args: []string{"-m", model, "--parallel", fmt.Sprint(p), "--ctx-size", fmt.Sprint(256 * p), "-t", llamatest.Threads}})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := Run(context.Background(), Config{URL: srv.URL(), Candidate: "dense", Slots: p, Seed: 42}, cases)
		srv.Stop(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ev.Cases[0].Outcome != "pass" || ev.Cases[1].Outcome != "fail" {
			t.Fatalf("P%d: %+v", p, ev)
		}
		answers = append(answers, ev.Cases[0].Detail+" | "+ev.Cases[1].Detail)
	}
	if answers[0] != answers[1] {
		t.Errorf("answers differ between P1 and P2:\n%s\n%s", answers[0], answers[1])
	}
}

// A written n_predict is kept: 0 is refused with the range (it used to become 32 silently);
// leaving it out still means the default.
func TestFaultsQualityExplicitNPredictZero(t *testing.T) {
	_, err := Decode("q.json", []byte(`{"schema":"sparkbench.quality-cases/v1","cases":[{"id":"a","prompt":"p","matcher":"exact","expect":"e"},{"id":"b","prompt":"p","matcher":"exact","expect":"e","n_predict":0}]}`))
	if err == nil || err.Error() != "q.json: cases[1] (b): n_predict 0: want 1 or more tokens, or leave it out for the default 32" {
		t.Fatalf("got %v", err)
	}
	c, err := Decode("q.json", []byte(`{"schema":"sparkbench.quality-cases/v1","cases":[{"id":"a","prompt":"p","matcher":"exact","expect":"e"}]}`))
	if err != nil || c.Cases[0].NPredict != 0 {
		t.Fatalf("absent n_predict: %+v %v", c, err)
	}
}
