package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/hashing"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote"
)

// TestHostCopyModel copies the medium Q4_0 model to a loopback host with `host copy-model`:
// refused without permission (nothing sent), refused when --expect differs, resumed from a
// partial copy whose bytes are the file's start (only the rest is sent), started over from one
// that is not, checked by SHA-256 on the host and renamed into place; a second copy sends
// nothing; a different file already at the destination is never overwritten.
func TestHostCopyModel(t *testing.T) {
	lab := exampleLab(t)
	src := llamatest.Model(t, "medium-llama-q4_0.gguf")
	sum, err := hashing.File(t.Context(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := lab.ModelDirs["host-a"]
	dest := filepath.Join(dir, filepath.Base(src))
	partial := dest + remote.PartialSuffix
	copyModel := func(extra ...string) (int, string, string) {
		return runCLI(append([]string{"host", "copy-model", "host-a", src, "--hosts", lab.HostsFile}, extra...)...)
	}
	if code, _, errOut := copyModel(); code != 2 || !strings.Contains(errOut, "needs your permission: answer y on a terminal, or rerun with --yes") {
		t.Errorf("without --yes: %d %q", code, errOut)
	}
	if code, _, errOut := copyModel("--yes", "--expect", strings.Repeat("0", 64)); code != 2 || !strings.Contains(errOut, "not the expected "+strings.Repeat("0", 64)+": nothing was sent") {
		t.Errorf("--expect differs: %d %q", code, errOut)
	}
	if _, err := os.Stat(dest); err == nil {
		t.Fatalf("a refused copy left %s", dest)
	}
	// An earlier copy stopped after 5,000,000 bytes: only the rest is sent.
	if err := os.WriteFile(partial, full[:5_000_000], 0o644); err != nil {
		t.Fatal(err)
	}
	res := copyJSON(t, copyModel)
	if res.Resumed != 5_000_000 || res.Sent != int64(len(full))-5_000_000 || res.SHA256 != sum || res.Dest != dest || res.AlreadyThere {
		t.Errorf("resumed copy: %+v; want 5000000 resumed, %d sent, sha256 %s", res, len(full)-5_000_000, sum)
	}
	checkCopied(t, dest, partial, full)
	if res := copyJSON(t, copyModel); !res.AlreadyThere || res.Sent != 0 {
		t.Errorf("second copy: %+v; want already there, nothing sent", res)
	}
	// A partial copy that is not this file's start: started over.
	if err := os.Remove(dest); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(partial, []byte("not the model"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = copyJSON(t, copyModel)
	if res.Resumed != 0 || res.Sent != int64(len(full)) || !strings.Contains(res.Restarted, "is not the start of this file") {
		t.Errorf("foreign partial: %+v; want started over", res)
	}
	checkCopied(t, dest, partial, full)
	// Another file under the same name: refused, untouched.
	if err := os.Remove(dest); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dest, []byte("another model"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := copyModel("--yes"); code != 1 || !strings.Contains(errOut, "refused (never overwritten)") {
		t.Errorf("another file at the destination: %d %q", code, errOut)
	}
	if b, _ := os.ReadFile(dest); string(b) != "another model" {
		t.Errorf("the file at the destination was changed")
	}
	if code, _, errOut := runCLI("host", "copy-model", "host-z", src, "--hosts", lab.HostsFile, "--yes"); code != 2 || !strings.Contains(errOut, `unknown host "host-z"`) {
		t.Errorf("unknown host: %d %q", code, errOut)
	}
}

// TestHostCopyModelResumesAfterTheConnectionDies cuts the host's connections while the
// medium F16 model is being sent: the copy fails saying how far it got and how to resume, and
// the next copy (a new connection) sends only what the host does not have yet.
func TestHostCopyModelResumesAfterTheConnectionDies(t *testing.T) {
	lab := exampleLab(t)
	src := llamatest.Model(t, "medium-llama-f16.gguf")
	sum, err := hashing.File(t.Context(), src, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := remote.LoadHosts(lab.HostsFile)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := f.Find("host-a")
	session := func() *remote.Session {
		c, err := remote.Open(t.Context(), h, remote.Options{Config: f.SSHConfig})
		if err != nil {
			t.Fatal(err)
		}
		s := &remote.Session{Conn: c, Models: map[string]string{}}
		t.Cleanup(s.Close)
		return s
	}
	dir := lab.ModelDirs["host-a"]
	cut := false
	_, err = session().CopyModel(t.Context(), src, sum, dir, remote.CopyOptions{Progress: func(done, total int64) {
		switch {
		case cut:
		case done < 4<<20: // slowly (the callback runs inside the reads), so the cut lands mid-file
			time.Sleep(20 * time.Millisecond)
		default:
			cut = true
			time.Sleep(300 * time.Millisecond) // let the host write what it has received
			lab.Servers["host-a"].KillSessions()
		}
	}})
	if err == nil || !cut || !strings.Contains(err.Error(), "run the same copy again to resume from") {
		t.Fatalf("cut copy: %v (cut %v); want an error saying how to resume", err, cut)
	}
	partial := filepath.Join(dir, filepath.Base(src)) + remote.PartialSuffix
	st, err := os.Stat(partial)
	if err != nil {
		t.Fatalf("no partial copy after the cut: %v", err)
	}
	full, _ := os.ReadFile(src)
	if st.Size() >= int64(len(full)) {
		t.Fatalf("the partial copy is %d bytes of %d: the cut came too late", st.Size(), len(full))
	}
	res, err := session().CopyModel(t.Context(), src, sum, dir, remote.CopyOptions{})
	if err != nil || res.Resumed != st.Size() || res.Sent != int64(len(full))-st.Size() || res.SHA256 != sum {
		t.Fatalf("resumed copy: %+v, %v; want %d resumed", res, err, st.Size())
	}
	checkCopied(t, filepath.Join(dir, filepath.Base(src)), partial, full)
	t.Logf("cut after %d of %d bytes; the resumed copy sent %d", st.Size(), len(full), res.Sent)
}

func copyJSON(t *testing.T, copyModel func(...string) (int, string, string)) remote.CopyResult {
	t.Helper()
	code, out, errOut := copyModel("--yes", "--json")
	var res remote.CopyResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("copy-model: %d\n%s\n%s", code, out, errOut)
	}
	return res
}

func checkCopied(t *testing.T, dest, partial string, want []byte) {
	t.Helper()
	b, err := os.ReadFile(dest)
	if err != nil || string(b) != string(want) {
		t.Errorf("%s on the host: %d bytes (%v), want the model's %d bytes", dest, len(b), err, len(want))
	}
	if _, err := os.Stat(partial); err == nil {
		t.Errorf("the partial copy %s is still there", partial)
	}
}
