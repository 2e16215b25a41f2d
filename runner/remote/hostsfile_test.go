package remote

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The shipped example loads; a hosts file that is a FIFO is refused at once; junk after the
// JSON, an unknown field, a key given twice and bytes that are not UTF-8 are refused with
// file:line:col.
func TestLoadHostsRefusesPrecisely(t *testing.T) {
	ex := filepath.Join("..", "..", "docs", "examples", "hosts.json")
	if f, err := LoadHosts(ex); err != nil || len(f.Hosts) != 2 {
		t.Fatalf("the example: %+v %v", f, err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "hosts.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := LoadHosts(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || err.Error() != fifo+" is a named pipe (FIFO), not a regular file; give the path of a file" {
			t.Fatalf("a FIFO: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("a FIFO: no answer after a second (blocked reading it?)")
	}
	if _, err := LoadHosts("/dev/zero"); err == nil || !strings.Contains(err.Error(), "is a character device, not a regular file") {
		t.Fatalf("a device: %v", err)
	}
	good := "{\n  \"schema\": \"sparkbench.hosts/v1\",\n  \"hosts\": [\n    {\"name\": \"a\", \"ssh\": \"lab-a\", \"llama_dir\": \"~/llama.cpp/bin\"}\n  ]\n}\n"
	for _, c := range []struct{ name, in, want string }{
		{"junk after the JSON", good + "{\"name\": \"b\"}\n", ":7:1: trailing data after the JSON object; a hosts file holds exactly one JSON object"},
		{"unknown field", strings.Replace(good, `"hosts"`, `"hostz"`, 1), `:3:3: unknown field "hostz"; check its spelling against docs/fleet.md`},
		{"unknown field of a host", strings.Replace(good, `"ssh"`, `"shh"`, 1), `:4:19: unknown field "shh"`},
		{"cut short", good[:60], ":4:11: the JSON ends before the object is closed"},
		{"duplicate key", strings.Replace(good, `"ssh": "lab-a"`, `"name": "b"`, 1), `:4:19: key "name" given twice in one object (first at line 4, column 6); give it once`},
		{"not UTF-8", strings.Replace(good, `"lab-a"`, "\"lab-\xe9\"", 1), ":4:31: byte 0xe9 is not UTF-8"},
		{"empty", "", ":1:1: empty file; a hosts file is a JSON object (see docs/fleet.md)"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
		if err := os.WriteFile(p, []byte(c.in), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadHosts(p); err == nil || !strings.HasPrefix(err.Error(), p+c.want) {
			t.Errorf("%s: %v\nwant %s%s", c.name, err, p, c.want)
		}
	}
	bad := filepath.Join(dir, "bad-name.json")
	if err := os.WriteFile(bad, []byte(strings.Replace(good, `"name": "a"`, `"name": "A"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadHosts(bad); err == nil || !strings.HasPrefix(err.Error(), bad+`: hosts file: host "A": name must match`) {
		t.Fatalf("a bad host name: %v", err)
	}
}

// FuzzParseHosts: the hosts decoder never panics, every refusal names the file, and what it
// accepts is a list of valid hosts.
func FuzzParseHosts(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "hosts.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"schema": "sparkbench.hosts/v1", "hosts": [{"name": "a", "ssh": "a", "llama_dir": "/x"}]} junk`))
	f.Add([]byte(`{"schema": "sparkbench.hosts/v1", "hostz": [], "schema": "x"}`))
	f.Add([]byte("{\"schema\": \"\xff\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		hf, err := ParseHosts("hosts.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "hosts.json") {
				t.Fatalf("an error that does not name the file: %v", err)
			}
			return
		}
		if hf.Schema != HostsSchema || len(hf.Hosts) == 0 {
			t.Fatalf("accepted %+v", hf)
		}
		for _, h := range hf.Hosts {
			if p := h.Validate(); len(p) > 0 {
				t.Fatalf("accepted an invalid host: %v", p)
			}
		}
	})
}
