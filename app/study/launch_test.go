package study

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLaunchWrapperValidation: every bad wrapper is refused at its JSON path with what to do;
// a known wrapper passes silently, an unknown one that can run passes with a warning.
func TestLaunchWrapperValidation(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	mine := filepath.Join(dir, "mywrap")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\nexec \"$@\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("#!/bin/sh\nexec \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		w          []string
		path, want string
		sev        Severity
	}{
		{[]string{}, "build.launch_wrapper", "an empty list; give the wrapper's program", SevError},
		{[]string{""}, "build.launch_wrapper[0]", "an empty string", SevError},
		{[]string{"taskset", "", "0"}, "build.launch_wrapper[1]", "an empty string", SevError},
		{[]string{"taskset", "-c\n0"}, "build.launch_wrapper[1]", "control character", SevError},
		{[]string{"sparkbench-no-such-wrapper", "-x"}, "build.launch_wrapper[0]", "sparkbench-no-such-wrapper: not found on PATH; install it, or give its absolute path", SevError},
		{[]string{noexec}, "build.launch_wrapper[0]", noexec + ": not executable (mode -rw-r--r--); make it executable (chmod +x)", SevError},
		{[]string{dir}, "build.launch_wrapper[0]", "a folder, not a program", SevError},
		{[]string{"wrappers/pin"}, "build.launch_wrapper[0]", "a relative path; give a bare name found on PATH or an absolute path", SevError},
		{[]string{"sg", "render", "-c"}, "build.launch_wrapper[0]", "sg: refused: sg passes its command to /bin/sh as one string", SevError},
		{[]string{"/bin/bash", "-c"}, "build.launch_wrapper[0]", "refused: a shell", SevError},
		{[]string{"systemd-run", "--user"}, "build.launch_wrapper[0]", "refused without --scope", SevError},
		{[]string{"setsid"}, "build.launch_wrapper[0]", "setsid: refused", SevError},
		{[]string{mine, "-x"}, "build.launch_wrapper[0]", mine + " is not a known launch wrapper (chrt, env, ionice, nice, numactl, prlimit, setpriv, systemd-run, taskset)", SevWarning},
	}
	for _, c := range cases {
		p := loadValid(t)
		p.Build.LaunchWrapper = c.w
		probs, _ := Validate(p, ValidateOptions{PlanDir: "testdata", Hash: sha256File})
		if len(probs) != 1 || probs[0].Path != c.path || probs[0].Severity != c.sev || !strings.Contains(probs[0].Msg, c.want) {
			t.Errorf("%q: %v; want one %s at %s saying %q", c.w, probs, c.sev, c.path, c.want)
		}
	}
	p := loadValid(t)
	p.Build.LaunchWrapper = []string{"taskset", "-c", "0"}
	if probs, _ := Validate(p, ValidateOptions{PlanDir: "testdata", Hash: sha256File}); len(probs) != 0 {
		t.Errorf("taskset -c 0: %v", probs)
	}
}

// TestLaunchWrapperDecodedAndHashed: the field decodes from the plan file (an empty list is
// refused, not dropped); a plan without it keeps its SHA-256 (the receipt fixture's plan,
// registered before the field existed, re-canonicalizes to its own bytes); with it the
// canonical plan names it.
func TestLaunchWrapperDecodedAndHashed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "receipt", "testdata", "throughput", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Decode("plan.json", b)
	if err != nil {
		t.Fatal(err)
	}
	p.Defaults()
	sum := sha256.Sum256(b)
	if got, canon, err := p.SHA256(); err != nil || got != hex.EncodeToString(sum[:]) || strings.Contains(string(canon), "launch_wrapper") {
		t.Fatalf("an existing plan re-hashes to %s (%v); want its registered %x", got, err, sum)
	}
	withField := strings.Replace(string(b), `"build":{}`, `"build":{"launch_wrapper":["taskset","-c","0"]}`, 1)
	q, err := Decode("plan.json", []byte(withField))
	if err != nil {
		t.Fatal(err)
	}
	q.Defaults()
	if got, canon, _ := q.SHA256(); got == hex.EncodeToString(sum[:]) || !strings.Contains(string(canon), `"build":{"launch_wrapper":["taskset","-c","0"]}`) {
		t.Errorf("with a wrapper: %s %s", got, canon)
	}
	empty := strings.Replace(string(b), `"build":{}`, `"build":{"launch_wrapper":[]}`, 1)
	e, err := Decode("plan.json", []byte(empty))
	if err != nil {
		t.Fatal(err)
	}
	e.Defaults()
	if probs, _ := Validate(e, ValidateOptions{PlanDir: "testdata"}); len(Errors(probs)) == 0 || !strings.Contains(Errors(probs)[0].Msg, "an empty list") {
		t.Errorf("launch_wrapper: [] was not refused: %v", probs)
	}
}
