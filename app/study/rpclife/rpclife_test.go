package rpclife

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sparkbench/app/study"
	"sparkbench/runner/remote"
)

// TestStartWithoutServers: no servers start nothing and read no hosts file; a hosts file that
// cannot be read refuses the run with nothing started and nothing noted; Stop is safe on both
// (and on nil).
func TestStartWithoutServers(t *testing.T) {
	notes := 0
	note := func(study.RPCServerNote) { notes++ }
	load := func() (*remote.HostsFile, error) { t.Fatal("the hosts file was read"); return nil, nil }
	top, err := Start(context.Background(), load, nil, nil, note)
	if err != nil || top == nil || len(top.Servers) != 0 {
		t.Fatalf("no servers: %+v %v", top, err)
	}
	if err := top.Stop(context.Background(), note); err != nil {
		t.Fatal(err)
	}
	bad := errors.New("no hosts file here")
	servers := []study.RPCServer{{Host: "host-a", Endpoint: "127.0.0.1:50061", Threads: 1, Device: "Vulkan0,Vulkan1"}}
	top, err = Start(context.Background(), func() (*remote.HostsFile, error) { return nil, bad }, servers, []string{"K=V"}, note)
	if !errors.Is(err, bad) || top == nil || len(top.Servers) != 0 {
		t.Fatalf("unreadable hosts file: %+v %v", top, err)
	}
	if err := top.Stop(context.Background(), note); err != nil || notes != 0 {
		t.Fatalf("stop: %v, %d notes", err, notes)
	}
	if err := (*Topology)(nil).Stop(context.Background(), note); err != nil {
		t.Fatal(err)
	}
	sp := Specs(servers, []string{"K=V"})
	if a := strings.Join(sp[0].Argv("ggml-rpc-server"), " "); a != "ggml-rpc-server -H 127.0.0.1 -p 50061 -t 1 -d Vulkan0,Vulkan1" || sp[0].Env[0] != "K=V" {
		t.Errorf("spec: %s %v", a, sp[0].Env)
	}
}
