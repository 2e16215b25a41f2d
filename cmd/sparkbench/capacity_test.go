package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCapacity calls the command directly (the lead wires it into commands()).
func runCapacity(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = cmdCapacity(args, &o, &e)
	return code, o.String(), e.String()
}

var capacitySeed = filepath.Join("..", "..", "app", "capacity", "testdata", "seed")

// capacitySeedArgs mirrors the seed receipt's reproduce command.
func capacitySeedArgs(output string) []string {
	args := []string{"assemble", "--plan", filepath.Join(capacitySeed, "plan.json")}
	for _, pass := range []string{"forward", "reverse"} {
		for _, c := range []string{"q8-generic", "q4-kleidiai-tuned"} {
			for _, p := range []string{"p1", "p2", "p4"} {
				key := pass + "/" + c + "/" + p
				dir := filepath.Join(capacitySeed, "runs", pass, c, p)
				args = append(args,
					"--requests", key+"="+filepath.Join(dir, "requests.jsonl"),
					"--rss", key+"="+filepath.Join(dir, "server-time.txt"),
					"--server-log", key+"="+filepath.Join(dir, "server.stderr.log"))
			}
		}
	}
	for _, c := range []string{"q8-generic", "q4-kleidiai-tuned"} {
		for _, p := range []string{"p1", "p2", "p4"} {
			args = append(args, "--quality", c+"/"+p+"="+filepath.Join(capacitySeed, "quality", c, p, "quality-evidence.json"))
		}
	}
	return append(args, "--bench-tg", "q8-generic=41.2", "--output", output)
}

func TestCapacityAssembleReproducesSeed(t *testing.T) {
	tmp := t.TempDir()
	out1 := filepath.Join(tmp, "study.json")
	code, stdout, stderr := runCapacity(capacitySeedArgs(out1)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"q8-generic               selected P4/C4  84.94 tok/s  +142.0% vs P1/C1  (3 of 9 cells rejected)",
		"q4-kleidiai-tuned        selected P4/C4  90.67 tok/s  +176.3% vs P1/C1", "P2       HIT"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
	got, _ := os.ReadFile(out1)
	golden, err := os.ReadFile(filepath.Join(capacitySeed, "study.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, golden) {
		t.Fatal("study.json differs from app/capacity/testdata/seed/study.golden.json")
	}
	// Shuffled flag pairs (and an absolute plan path) give the same bytes.
	args := capacitySeedArgs(filepath.Join(tmp, "again.json"))[1:]
	var pairs [][2]string
	for i := 0; i < len(args); i += 2 {
		pairs = append(pairs, [2]string{args[i], args[i+1]})
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 3 {
		rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
		shuffled := []string{"assemble"}
		for _, p := range pairs {
			if p[0] == "--plan" {
				abs, _ := filepath.Abs(p[1])
				p[1] = abs
			}
			shuffled = append(shuffled, p[0], p[1])
		}
		if code, _, stderr := runCapacity(shuffled...); code != 0 {
			t.Fatalf("round %d: exit %d: %s", round, code, stderr)
		}
		again, _ := os.ReadFile(filepath.Join(tmp, "again.json"))
		if !bytes.Equal(again, golden) {
			t.Fatalf("round %d: shuffled flags changed study.json", round)
		}
	}
}

func TestCapacityAssembleBadInput(t *testing.T) {
	tmp := t.TempDir()
	out := filepath.Join(tmp, "study.json")
	base := capacitySeedArgs(out)
	replace := func(old, new string) []string {
		a := append([]string(nil), base...)
		for i := range a {
			if strings.HasPrefix(a[i], old) {
				a[i] = new
				return a
			}
		}
		t.Fatalf("no argument %s", old)
		return nil
	}
	drop := func(flag, prefix string) []string {
		var a []string
		for i := 0; i < len(base); i++ {
			if base[i] == flag && i+1 < len(base) && strings.HasPrefix(base[i+1], prefix) {
				i++
				continue
			}
			a = append(a, base[i])
		}
		return a
	}
	notJSON := filepath.Join(tmp, "log.txt")
	os.WriteFile(notJSON, []byte("hello\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"missing lifetime", drop("--requests", "reverse/q8-generic/p4="),
			[]string{"--requests reverse/q8-generic/p4: missing", "add --requests reverse/q8-generic/p4=FILE"}},
		{"absent file", replace("reverse/q8-generic/p4=", "reverse/q8-generic/p4="+filepath.Join(tmp, "absent.jsonl")),
			[]string{"--requests reverse/q8-generic/p4:", "no such file"}},
		{"bad key", replace("forward/q8-generic/p1=", "forward/q8-generic/1="+notJSON), []string{`--requests "forward/q8-generic/1": slots "1": want p followed by the slot count`}},
		{"no file", replace("forward/q8-generic/p1=", "forward/q8-generic/p1"), []string{"want KEY=FILE"}},
		{"duplicate", append(append([]string(nil), base...), "--rss", "forward/q8-generic/p1="+notJSON), []string{"--rss forward/q8-generic/p1 is given twice"}},
		{"not a request file", replace("forward/q8-generic/p1=", "forward/q8-generic/p1="+notJSON),
			[]string{"--requests forward/q8-generic/p1: " + notJSON + ":1:", "invalid JSON"}},
		{"missing quality", drop("--quality", "q4-kleidiai-tuned/p2="), []string{"--quality q4-kleidiai-tuned/p2: missing"}},
		{"bench tg", append(append([]string(nil), base...), "--bench-tg", "q4-kleidiai-tuned=fast"), []string{"--bench-tg \"q4-kleidiai-tuned=fast\": want CANDIDATE=T"}},
		{"no plan", drop("--plan", ""), []string{"--plan is required"}},
		{"no output", drop("--output", ""), []string{"--output is required"}},
		{"plan not found", replace(filepath.Join(capacitySeed, "plan.json"), filepath.Join(tmp, "plan.json")), []string{"--plan: read plan:", "no such file"}},
		{"positional", append(append([]string(nil), base...), "extra"), []string{`unexpected argument "extra"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCapacity(c.args...)
			if code != 2 || stdout != "" {
				t.Fatalf("exit %d, want 2 (stdout %q, stderr %q)", code, stdout, stderr)
			}
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("want one line, got %q", stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("study.json written despite bad input")
			}
		})
	}
	// An output folder that does not exist: the inputs are fine, writing fails: exit 1.
	code, _, stderr := runCapacity(replace(out, filepath.Join(tmp, "no", "such", "dir", "study.json"))...)
	if code != 1 || !strings.Contains(stderr, "check the folder exists") {
		t.Errorf("unwritable output: %d %q", code, stderr)
	}
	if code, _, stderr := runCapacity(); code != 2 || !strings.Contains(stderr, "want a verb") {
		t.Errorf("no verb: %d %q", code, stderr)
	}
	if code, _, stderr := runCapacity("frobnicate"); code != 2 || !strings.Contains(stderr, `unknown verb "frobnicate"`) {
		t.Errorf("unknown verb: %d %q", code, stderr)
	}
}

func TestCapacityValidateCLI(t *testing.T) {
	plan := filepath.Join(capacitySeed, "plan.json")
	code, stdout, stderr := runCapacity("validate", plan)
	if code != 0 || !strings.Contains(stdout, `valid capacity plan "arm64 capacity (seed-shaped fixture)"`) ||
		!strings.Contains(stdout, "2 candidates x 9 cells x 2 passes, 12 server lifetimes") ||
		!strings.Contains(stdout, "reverse/q4-kleidiai-tuned/p4") || !strings.Contains(stdout, "clients 4,2,1") ||
		!strings.Contains(stdout, "--parallel 4 --ctx-size 8192") {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = runCapacity("validate", "--json", plan)
	var rep capacityValidateReport
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || !rep.Valid || len(rep.SHA256) != 64 || len(rep.Lifetimes) != 12 {
		t.Fatalf("json: %d %s", code, stdout)
	}
	// The study.json of the seed names the same plan SHA-256.
	golden, _ := os.ReadFile(filepath.Join(capacitySeed, "study.golden.json"))
	if !bytes.Contains(golden, []byte(fmt.Sprintf(`"plan_sha256":"%s"`, rep.SHA256))) {
		t.Error("validate and assemble disagree on the plan's SHA-256")
	}

	// A refused plan: one line per problem on stderr, exit 2.
	data, _ := os.ReadFile(plan)
	tmp := t.TempDir()
	bad := strings.Replace(string(data), `"-lv", "4"]`, `"-lv", "4", "--parallel", "8"]`, 1)
	bad = strings.Replace(bad, `"slots": [1, 2, 4]`, `"slots": [1, 4, 2]`, 1)
	abs, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "models"))
	bad = strings.ReplaceAll(bad, "../../../../testdata/models", abs)
	os.WriteFile(filepath.Join(tmp, "prompt-plan.json"), mustRead(t, filepath.Join(capacitySeed, "prompt-plan.json")), 0o644)
	badPlan := filepath.Join(tmp, "bad.json")
	os.WriteFile(badPlan, []byte(bad), 0o644)
	code, _, stderr = runCapacity("validate", badPlan)
	if code != 2 || strings.Count(stderr, "\n") != 2 || !strings.Contains(stderr, "candidates[0].server_flags[10]: \"--parallel\" is set by slots") ||
		!strings.Contains(stderr, "slots[2]: 2 after 4") {
		t.Fatalf("refused: %d %q", code, stderr)
	}
	// A model that differs from the registered one: MISMATCH (hashing is on by default).
	mismatch := strings.Replace(string(data), "faa0f1046d1ead481eab9917015e7c91fb7890651e51c0ed9b995ff609131dda", strings.Repeat("0", 64), 1)
	mismatch = strings.ReplaceAll(mismatch, "../../../../testdata/models", abs)
	os.WriteFile(badPlan, []byte(mismatch), 0o644)
	if code, _, stderr = runCapacity("validate", badPlan); code != 2 || !strings.Contains(stderr, "candidates[0].model.sha256: MISMATCH") {
		t.Fatalf("mismatch: %d %q", code, stderr)
	}
	if code, _, _ = runCapacity("validate", "--no-hash", badPlan); code != 0 {
		t.Fatalf("--no-hash: %d", code)
	}
	for _, args := range [][]string{
		{"validate", filepath.Join(tmp, "absent.json")},
		{"validate"},
		{"validate", plan, plan},
	} {
		if code, _, stderr := runCapacity(args...); code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: %d %q", args, code, stderr)
		}
	}
	os.WriteFile(badPlan, []byte(`{"schema": "sparkbench.capacity/v1", "slot": [1]}`), 0o644)
	if code, _, stderr := runCapacity("validate", badPlan); code != 2 || !strings.Contains(stderr, badPlan+":1:38: unknown field \"slot\"") {
		t.Errorf("unknown field: %d %q", code, stderr)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
