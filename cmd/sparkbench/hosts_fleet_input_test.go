package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote"
	"sparkbench/store"
)

// Hosts and fleet files through the real verbs: a FIFO given as `host import-file FILE`,
// `fleet run FILE` or `--hosts FILE` is refused within a second, naming it; junk after the JSON,
// an unknown field, a key given twice are refused with file:line:col; nothing is written.
func TestHostsAndFleetFilesRefusedPrecisely(t *testing.T) {
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	t.Setenv(store.EnvNotebook, nb)
	t.Setenv(remote.EnvHosts, "")
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := func(name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hostsEx, err := os.ReadFile(filepath.Join(llamatest.RepoRoot(), "docs", "examples", "hosts.json"))
	if err != nil {
		t.Fatal(err)
	}
	hosts := write("hosts.json", string(hostsEx))
	hostsFIFO, fleetFIFO := fifo("hosts-pipe.json"), fifo("fleet-pipe.json")
	goodFleet := "{\n  \"schema\": \"sparkbench.fleet/v1\",\n  \"name\": \"f\",\n  \"plan\": \"p.json\",\n  \"hosts\": [\"local\"]\n}\n"
	fleetFile := write("fleet.json", goodFleet)
	hostsJunk := write("hosts-junk.json", string(hostsEx)+"junk\n")
	lines := strings.Count(string(hostsEx), "\n")
	hostsUnknown := write("hosts-unknown.json", strings.Replace(string(hostsEx), `"hosts"`, `"hostz"`, 1))
	hostsDup := write("hosts-dup.json", strings.Replace(string(hostsEx), `"ssh": "lab-b"`, `"ssh": "lab-b", "ssh": "lab-c"`, 1))
	fleetJunk := write("fleet-junk.json", goodFleet+"{\"hosts\": [\"host-a\"]}\n")
	fleetUnknown := write("fleet-unknown.json", strings.Replace(goodFleet, `"hosts"`, `"hostz"`, 1))
	const fifoMsg = " is a named pipe (FIFO), not a regular file; give the path of a file\n"
	for _, c := range []struct {
		name string
		args []string
		want string // the whole of stderr
	}{
		{"host import-file a FIFO", []string{"host", "import-file", hostsFIFO}, "sparkbench host import-file: " + hostsFIFO + fifoMsg},
		{"fleet run a FIFO", []string{"fleet", "run", fleetFIFO, "--hosts", hosts}, "sparkbench fleet run: " + fleetFIFO + fifoMsg},
		{"fleet run --hosts a FIFO", []string{"fleet", "run", fleetFile, "--hosts", hostsFIFO}, "sparkbench fleet run: " + hostsFIFO + fifoMsg},
		{"host list --hosts a FIFO", []string{"host", "list", "--hosts", hostsFIFO}, "sparkbench host list: " + hostsFIFO + fifoMsg},
		{"host import-file junk after the JSON", []string{"host", "import-file", hostsJunk},
			"sparkbench host import-file: " + hostsJunk + ":" + strconv.Itoa(lines+1) + ":1: trailing data after the JSON object; a hosts file holds exactly one JSON object\n"},
		{"host import-file an unknown field", []string{"host", "import-file", hostsUnknown},
			"sparkbench host import-file: " + hostsUnknown + `:3:3: unknown field "hostz"; check its spelling against docs/fleet.md` + "\n"},
		{"host import-file a key twice", []string{"host", "import-file", hostsDup},
			"sparkbench host import-file: " + hostsDup + `:13:23: key "ssh" given twice in one object (first at line 13, column 7); give it once` + "\n"},
		{"fleet run junk after the JSON", []string{"fleet", "run", fleetJunk, "--hosts", hosts},
			"sparkbench fleet run: " + fleetJunk + ":7:1: trailing data after the JSON object; a fleet file holds exactly one JSON object\n"},
		{"fleet run an unknown field", []string{"fleet", "run", fleetUnknown, "--hosts", hosts},
			"sparkbench fleet run: " + fleetUnknown + `:5:3: unknown field "hostz"; check its spelling against docs/fleet.md` + "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLIWithin(t, time.Second, c.args...)
			if code != 2 || out != "" || errOut != c.want {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, out, errOut, c.want)
			}
		})
	}
	if _, err := os.Stat(nb); !os.IsNotExist(err) {
		t.Fatalf("a refused file wrote the notebook: %v", err)
	}
}
