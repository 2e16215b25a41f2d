package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote"
)

// host add / list / remove / import-file on a temporary notebook: each change is recorded, the
// list reads the notebook when no hosts file is named, and --hosts and $SPARKBENCH_HOSTS keep
// their priority over it.
func TestHostNotebookRoundTrip(t *testing.T) {
	tmp := t.TempDir()
	nb := filepath.Join(tmp, "notebook.db")
	t.Setenv(envHosts, "")
	t.Setenv("SPARKBENCH_NOTEBOOK", nb)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))

	code, out, errOut := runCLI("host", "add", "spark", "--ssh", "lab@spark", "--llama-dir", "~/llama.cpp/build/bin",
		"--model-dir", "/models", "--model-dir", "~/more", "--label", "gpu=gb10", "--rpc-address", "10.0.0.7", "--notebook", nb)
	if code != 0 || !strings.Contains(out, "host spark added") {
		t.Fatalf("host add: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ = runCLI("host", "add", "spark", "--ssh", "lab@spark", "--llama-dir", "~/llama.cpp/build/bin",
		"--model-dir", "/models", "--model-dir", "~/more", "--label", "gpu=gb10", "--rpc-address", "10.0.0.7"); code != 0 || !strings.Contains(out, "unchanged") {
		t.Fatalf("the same host again: exit %d %q", code, out)
	}
	code, out, errOut = runCLI("host", "list", "--json")
	var got struct {
		From  string        `json:"from"`
		Path  string        `json:"path"`
		Hosts []remote.Host `json:"hosts"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.From != "notebook" || got.Path != nb || len(got.Hosts) != 1 ||
		got.Hosts[0].SSH != "lab@spark" || len(got.Hosts[0].ModelDirs) != 2 || got.Hosts[0].Labels["gpu"] != "gb10" || got.Hosts[0].RPCAddress != "10.0.0.7" {
		t.Fatalf("host list --json: exit %d %+v\n%s%s", code, got, out, errOut)
	}

	file := filepath.Join(llamatest.RepoRoot(), "docs", "examples", "hosts.json")
	if code, out, errOut = runCLI("host", "import-file", file); code != 0 || !strings.Contains(out, "host host-a added") || !strings.Contains(out, "host host-b added") {
		t.Fatalf("import-file: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, _ = runCLI("host", "import-file", file); code != 0 || !strings.Contains(out, "host host-a unchanged") {
		t.Fatalf("import-file again: exit %d %q", code, out)
	}
	if code, _, _ = runCLI("host", "add", "host-a", "--ssh", "elsewhere", "--llama-dir", "/opt/llama"); code != 0 {
		t.Fatal("changing host-a")
	}
	code, _, errOut = runCLI("host", "import-file", file)
	if code != 2 || !strings.Contains(errOut, "already has host-a with other fields; nothing imported: pass --replace") {
		t.Fatalf("import-file over a changed host: exit %d %q", code, errOut)
	}
	if code, out, _ = runCLI("host", "import-file", "--replace", file); code != 0 || !strings.Contains(out, "host host-a changed") {
		t.Fatalf("import-file --replace: exit %d %q", code, out)
	}

	if code, out, _ = runCLI("host", "remove", "host-b"); code != 0 || !strings.Contains(out, "host host-b removed") {
		t.Fatalf("remove: exit %d %q", code, out)
	}
	code, out, _ = runCLI("host", "list")
	if code != 0 || !strings.Contains(out, "host-a") || strings.Contains(out, "host-b") || !strings.Contains(out, "spark ") {
		t.Fatalf("list after remove: exit %d\n%s", code, out)
	}

	// a hosts file named by $SPARKBENCH_HOSTS or --hosts comes before the notebook
	own := filepath.Join(tmp, "own.json")
	if err := os.WriteFile(own, []byte(`{"schema":"sparkbench.hosts/v1","hosts":[{"name":"filebox","ssh":"f","llama_dir":"/l"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ = runCLI("host", "list", "--hosts", own); code != 0 || !strings.HasPrefix(out, "filebox") || strings.Contains(out, "spark") {
		t.Fatalf("--hosts: %d %q", code, out)
	}
	t.Setenv(envHosts, own)
	if code, out, _ = runCLI("host", "list", "--json"); code != 0 || !strings.Contains(out, `"from": "$SPARKBENCH_HOSTS"`) || strings.Contains(out, "spark") {
		t.Fatalf("$SPARKBENCH_HOSTS: %d %q", code, out)
	}
}

// Bad input to the notebook verbs exits 2 and says what is wrong and what to do.
func TestHostNotebookBadInput(t *testing.T) {
	nb := filepath.Join(t.TempDir(), "notebook.db")
	t.Setenv(envHosts, "")
	if code, _, _ := runCLI("host", "add", "box", "--ssh", "box", "--llama-dir", "/opt/llama", "--notebook", nb); code != 0 {
		t.Fatal("host add box")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"host", "add", "Bad_Name", "--ssh", "x", "--llama-dir", "/l"}, `host "Bad_Name": name must match`},
		{[]string{"host", "add", "local", "--ssh", "x", "--llama-dir", "/l"}, "the name is reserved for this machine; choose another"},
		{[]string{"host", "add", "box2", "--ssh", "x", "--llama-dir", "llama/bin"}, `host box2: llama_dir: "llama/bin": give an absolute path or ~/… on the host`},
		{[]string{"host", "add", "box2", "--llama-dir", "/l"}, "host box2: ssh: empty; give the destination as you would type it after ssh"},
		{[]string{"host", "add", "box2", "--ssh", "x", "--llama-dir", "/l", "--label", "gpu"}, `--label "gpu": write it as key=value`},
		{[]string{"host", "add", "--ssh", "x", "--llama-dir", "/l"}, "give one host name"},
		{[]string{"host", "remove", "nobox"}, `unknown host "nobox": the notebook's hosts list has box`},
		{[]string{"host", "import-file", filepath.Join(t.TempDir(), "none.json")}, "no such file"},
		{[]string{"host", "check", "nobox"}, `unknown host "nobox": the hosts list has box`},
		{[]string{"host", "frobnicate"}, "want list, check, add, remove, import-file or copy-model"},
	} {
		args := append(c.args, "--notebook", nb)
		code, _, errOut := runCLI(args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	if code, out, _ := runCLI("host", "list", "--notebook", nb); code != 0 || strings.Count(out, "\n") != 1 {
		t.Errorf("refused input was recorded: %q", out)
	}
}

// doctor --host reads the hosts of the notebook --notebook names: a host recorded only there
// is found (and its refused loopback connection reported), while the default notebook,
// which lacks it, says the host is unknown.
func TestDoctorHostReadsTheNamedNotebook(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv(envHosts, "")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))
	def, other := filepath.Join(tmp, "default.db"), filepath.Join(tmp, "other.db")
	t.Setenv("SPARKBENCH_NOTEBOOK", def)
	if code, out, errOut := runCLI("host", "add", "here", "--ssh", "nobody@127.0.0.1", "--llama-dir", "/opt/llama", "--notebook", def); code != 0 {
		t.Fatalf("host add (default notebook): exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runCLI("host", "add", "near", "--ssh", "nobody@127.0.0.1", "--llama-dir", "/opt/llama", "--notebook", other); code != 0 {
		t.Fatalf("host add: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut := runCLI("doctor", "--host", "near")
	if code != 2 || !strings.Contains(errOut, `unknown host "near"`) {
		t.Fatalf("doctor --host near on the default notebook: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI("doctor", "--host", "near", "--notebook", other)
	if code == 0 || strings.Contains(errOut, "unknown host") || !strings.Contains(errOut, "near") {
		t.Fatalf("doctor --host near --notebook other: exit %d, %q", code, errOut)
	}
	t.Logf("doctor --host near --notebook other: exit %d, %s", code, errOut)
}
