package capacity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A lifetime's folder is run.json's when it lists one, else its first attempt's; a folder
// outside the run folder is refused.
func TestLifetimeDirs(t *testing.T) {
	k := LifetimeKey{Pass: "forward", Candidate: "dense", Slots: 2}
	if got := LifetimeDir(k); got != "runs/forward/dense/p2" {
		t.Errorf("LifetimeDir %q", got)
	}
	dir := t.TempDir()
	d, err := RunFolderDirs(dir) // no run.json: every lifetime in its first attempt's folder
	if err != nil || d.Of(k) != LifetimeDir(k) {
		t.Errorf("no run.json: %v %v", d, err)
	}
	var none LifetimeDirs
	if none.Of(k) != LifetimeDir(k) {
		t.Error("a nil LifetimeDirs")
	}
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, RunManifestFile), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"lifetimes":[{"key":"forward/dense/p2","dir":"runs/forward/dense/p2.2"},{"key":"forward/dense/p1","dir":""}]}`)
	d, err = RunFolderDirs(dir)
	if err != nil || d.Of(k) != "runs/forward/dense/p2.2" || d.Of(LifetimeKey{Pass: "forward", Candidate: "dense", Slots: 1}) != "runs/forward/dense/p1" {
		t.Errorf("run.json's folders: %v %v", d, err)
	}
	rep := &RunReport{Lifetimes: []RunLifetime{{Key: k.String(), Dir: filepath.Join("runs", "forward", "dense", "p2.3")}}}
	if got := rep.LifetimeDirs().Of(k); got != "runs/forward/dense/p2.3" {
		t.Errorf("RunReport.LifetimeDirs: %q", got)
	}
	for _, bad := range []string{"../x", "/abs", "runs/./p2", "runs//p2", `{"lifetimes":3}`} {
		s := `{"lifetimes":[{"key":"forward/dense/p2","dir":"` + bad + `"}]}`
		if strings.HasPrefix(bad, "{") {
			s = bad
		}
		write(s)
		if _, err := RunFolderDirs(dir); err == nil || !strings.Contains(err.Error(), RunManifestFile) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
