package app

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sparkbench/runner/llamatest"
)

func TestFyneAppTomlMatches(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(llamatest.RepoRoot(), "FyneApp.toml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for key, want := range map[string]string{"Version": Version, "ID": AppID, "Name": "sparkbench", "Icon": "assets/icon.png"} {
		m := regexp.MustCompile(`(?m)^\s*` + key + `\s*=\s*"([^"]*)"`).FindStringSubmatch(s)
		if m == nil || m[1] != want {
			t.Errorf("FyneApp.toml %s = %v, want %q", key, m, want)
		}
	}
	if !regexp.MustCompile(`(?m)^\[Migrations\]\s*\n\s*fyneDo\s*=\s*true`).MatchString(s) {
		t.Error("FyneApp.toml lacks [Migrations] fyneDo = true")
	}
	if _, err := os.Stat(filepath.Join(llamatest.RepoRoot(), "assets", "icon.png")); err != nil {
		t.Error(err)
	}
	if v := VersionString(); !strings.HasPrefix(v, "sparkbench "+Version) {
		t.Errorf("VersionString() = %q", v)
	}
}
