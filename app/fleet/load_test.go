package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/remote"
)

func exampleHosts(t testing.TB) *remote.HostsFile {
	t.Helper()
	hf, err := remote.LoadHosts(filepath.Join("..", "..", "docs", "examples", "hosts.json"))
	if err != nil {
		t.Fatal(err)
	}
	return hf
}

// The shipped example loads; a fleet file that is a FIFO is refused at once; every refusal of
// its JSON says file:line:col.
func TestLoadRefusesPrecisely(t *testing.T) {
	hf := exampleHosts(t)
	ex := filepath.Join("..", "..", "docs", "examples", "fleet-tiny.json")
	if f, err := Load(ex, hf); err != nil || f.Name != "tiny fleet" || len(f.Hosts) != 3 {
		t.Fatalf("the example: %+v %v", f, err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fleet.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(fifo, hf); done <- err }()
	select {
	case err := <-done:
		if err == nil || err.Error() != fifo+" is a named pipe (FIFO), not a regular file; give the path of a file" {
			t.Fatalf("a FIFO: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("a FIFO: no answer after a second (blocked reading it?)")
	}
	good := "{\n  \"schema\": \"sparkbench.fleet/v1\",\n  \"name\": \"f\",\n  \"plan\": \"p.json\",\n  \"hosts\": [\"local\"]\n}"
	for _, c := range []struct{ name, in, want string }{
		{"junk after the JSON", good + "\nhosts: [\"host-a\"]\n", ":7:1: trailing data after the JSON object; a fleet file holds exactly one JSON object"},
		{"unknown field", strings.Replace(good, `"hosts"`, `"hostz"`, 1), `:5:3: unknown field "hostz"; check its spelling against docs/fleet.md`},
		{"cut short", good[:40], ":3:4: the JSON ends before the object is closed"},
		{"duplicate key", strings.Replace(good, `"plan": "p.json"`, `"name": "g"`, 1), `:4:3: key "name" given twice in one object (first at line 3, column 3); give it once`},
		{"not UTF-8", strings.Replace(good, `"f"`, "\"f\xff\"", 1), ":3:13: byte 0xff is not UTF-8"},
		{"wrong type", strings.Replace(good, `["local"]`, `"local"`, 1), ":5:19: hosts: want []string, got JSON string"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
		if err := os.WriteFile(p, []byte(c.in), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p, hf); err == nil || !strings.HasPrefix(err.Error(), p+c.want) {
			t.Errorf("%s: %v\nwant %s%s", c.name, err, p, c.want)
		}
	}
}

// FuzzParse: the fleet decoder never panics, and what it accepts is a fleet it can check.
func FuzzParse(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "fleet-tiny.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"schema": "sparkbench.fleet/v1", "name": "f", "plan": "p.json", "hosts": ["local"]} x`))
	f.Add([]byte(`{"schema": "sparkbench.fleet/v1", "name": "f", "name": "g", "hostz": []}`))
	f.Add([]byte("{\"name\": \"\xff\"}"))
	hf := exampleHosts(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse("fleet.json", data, hf)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fleet.json") {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		if fl.Schema != Schema || fl.Name == "" || len(fl.Hosts) == 0 || fl.Plan == "" {
			t.Fatalf("accepted an incomplete fleet: %+v", fl)
		}
	})
}
