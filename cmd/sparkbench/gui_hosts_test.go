package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner/remote"
	"sparkbench/store"
	"sparkbench/ui"
)

// The window's hosts service validates with the hosts file's rules, records in the notebook,
// and checks a notebook host with `host check`'s words (loopback sshd hosts).
func TestGUIHostsServiceRecordsAndChecks(t *testing.T) {
	nb, err := store.Open(filepath.Join(t.TempDir(), "notebook.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	ctx := context.Background()
	svc := hostsService{nb: nb}
	if _, err := svc.PutHost(ctx, ui.HostEntry{Name: "box", SSH: "box", LlamaDir: "rel/dir"}); err == nil ||
		!strings.Contains(err.Error(), `host box: llama_dir: "rel/dir": give an absolute path or ~/… on the host`) {
		t.Fatalf("a relative llama dir: %v", err)
	}
	if _, err := svc.CheckHost(ctx, "box"); err == nil || !strings.Contains(err.Error(), `unknown host "box"`) {
		t.Fatalf("check of an unknown host: %v", err)
	}

	lab := exampleLab(t)
	hf, err := remote.LoadHosts(lab.HostsFile)
	if err != nil {
		t.Fatal(err)
	}
	a, err := hf.Find("host-a")
	if err != nil {
		t.Fatal(err)
	}
	if action, err := svc.PutHost(ctx, toEntry(a)); err != nil || action != store.HostAdded {
		t.Fatalf("put: %s %v", action, err)
	}
	if hs, err := svc.Hosts(ctx); err != nil || len(hs) != 1 || hs[0].SSH != a.SSH || hs[0].Labels["box"] != "tower" {
		t.Fatalf("hosts: %+v %v", hs, err)
	}
	// the lab's hosts are reached through its ssh_config; the notebook keeps the user's own
	svc.connect = func(ctx context.Context, h remote.Host) (*remote.Session, error) {
		return remote.Connect(ctx, h, remote.Options{Config: hf.SSHConfig, ConnectTimeout: remote.DefaultConnectTimeout})
	}
	text, err := svc.CheckHost(ctx, "host-a")
	if err != nil || !strings.HasPrefix(text, "host host-a (ssh lab-a)") || !strings.Contains(text, "llama-bench:") {
		t.Fatalf("check: %v\n%s", err, text)
	}
}
