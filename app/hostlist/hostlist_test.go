package hostlist

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/remote"
	"sparkbench/store"
)

func writeHosts(t *testing.T, dir, name, host string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	b := `{"schema":"sparkbench.hosts/v1","hosts":[{"name":"` + host + `","ssh":"x","llama_dir":"/l"}]}`
	if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// --hosts, then $SPARKBENCH_HOSTS, then the notebook's hosts, then hosts.json in the config
// folder.
func TestResolveOrder(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))
	cfg, err := os.UserConfigDir()
	if err != nil {
		t.Skip("no config folder here:", err)
	}
	writeHosts(t, cfg, filepath.Join("sparkbench", "hosts.json"), "cfgbox")
	flag := writeHosts(t, tmp, "flag.json", "flagbox")
	env := writeHosts(t, tmp, "env.json", "envbox")
	nbHosts := []store.Host{{Name: "nbbox", SSH: "n", LlamaDir: "/l", Labels: map[string]string{"k": "v"}}}
	nb := func() ([]store.Host, error) { return nbHosts, nil }
	none := func() ([]store.Host, error) { return nil, nil }

	check := func(what, flagV string, nbf func() ([]store.Host, error), from, host string) {
		t.Helper()
		f, err := Resolve(flagV, nbf, "nb.db")
		if err != nil || f.From != from || len(f.Hosts.Hosts) != 1 || f.Hosts.Hosts[0].Name != host {
			t.Errorf("%s: %+v %v; want %s from %s", what, f, err, host, from)
		}
	}
	t.Setenv(remote.EnvHosts, env)
	check("--hosts", flag, nb, FromFlag, "flagbox")
	check("$SPARKBENCH_HOSTS", "", nb, FromEnv, "envbox")
	t.Setenv(remote.EnvHosts, "")
	check("the notebook", "", nb, FromNotebook, "nbbox")
	check("an empty notebook", "", none, FromConfig, "cfgbox")
	check("no notebook", "", nil, FromConfig, "cfgbox")

	if _, err := Resolve("", func() ([]store.Host, error) { return nil, errors.New("broken") }, "nb.db"); err == nil || !strings.Contains(err.Error(), "hosts in the notebook nb.db: broken") {
		t.Errorf("a notebook that cannot be read: %v", err)
	}
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "empty"))
	if _, err := Resolve("", none, "nb.db"); err == nil || !strings.Contains(err.Error(), "no hosts file at") || !strings.Contains(err.Error(), "sparkbench host add") {
		t.Errorf("nothing anywhere: %v", err)
	}
	if _, err := Resolve(filepath.Join(tmp, "none.json"), nb, "nb.db"); err == nil || strings.Contains(err.Error(), "host add") {
		t.Errorf("a missing --hosts file: %v", err)
	}
}

func TestConvertAndValidate(t *testing.T) {
	h := remote.Host{Name: "spark", SSH: "lab@spark", LlamaDir: "~/b", ModelDirs: []string{"/m"}, RPCAddress: "10.0.0.7", Labels: map[string]string{"gpu": "gb10"}}
	if back := FromStore(ToStore(h)); !Same(back, h) {
		t.Errorf("round trip: %+v", back)
	}
	if err := Validate(h); err != nil {
		t.Error(err)
	}
	h.Name, h.LlamaDir = "Bad", "rel"
	err := Validate(h)
	if err == nil || !strings.Contains(err.Error(), "name must match") || !strings.Contains(err.Error(), `llama_dir: "rel"`) {
		t.Errorf("every problem: %v", err)
	}
}
