package study

import (
	"strings"
	"testing"
)

// rpcLog is llama-bench -v's output on two ggml-rpc-servers (tiny-llama-f32, -dev RPC0/RPC1,
// -ngl 99), as a pty gives it.
const rpcLog = "llama_prepare_model_devices: using device RPC0 (127.0.0.1:50161) (unknown id) - 24105 MiB free\r\n" +
	"llama_prepare_model_devices: using device RPC1 (127.0.0.1:50162) (unknown id) - 24105 MiB free\r\n" +
	"load_tensors: layer   0 assigned to device RPC0, is_swa = 0\r\n" +
	"load_tensors: layer   1 assigned to device RPC0, is_swa = 0\r\n" +
	"load_tensors: layer   2 assigned to device RPC1, is_swa = 0\r\n" +
	"load_tensors:   CPU_Mapped model buffer size =     0.06 MiB\r\n" +
	"load_tensors: RPC0[127.0.0.1:50161] model buffer size =     0.50 MiB\r\n" +
	"load_tensors: RPC0[127.0.0.1:50162] model buffer size =     0.06 MiB\r\n" +
	"llama_kv_cache: RPC0[127.0.0.1:50161] KV buffer size =     0.12 MiB\r\n" +
	"sched_reserve: RPC0[127.0.0.1:50161] compute buffer size =     0.14 MiB\r\n" +
	"sched_reserve: RPC0[127.0.0.1:50162] compute buffer size =     0.04 MiB\r\n" +
	"load_tensors: layer   0 assigned to device RPC0, is_swa = 0\r\n"

func TestParseRPCLog(t *testing.T) {
	uses, local := ParseRPCLog(rpcLog)
	if len(uses) != 2 || local != 0 {
		t.Fatalf("uses %+v, local %d", uses, local)
	}
	a, b := uses[0], uses[1]
	if a.Device != "RPC0" || a.Endpoint != "127.0.0.1:50161" || a.Layers != 2 || a.ModelMiB != 0.5 || a.KVMiB != 0.12 || a.ComputeMiB != 0.14 {
		t.Errorf("RPC0: %+v", a)
	}
	if b.Device != "RPC1" || b.Endpoint != "127.0.0.1:50162" || b.Layers != 1 || b.ModelMiB != 0.06 || b.ComputeMiB != 0.04 {
		t.Errorf("RPC1: %+v", b)
	}
}

func TestRPCServersPlan(t *testing.T) {
	p := &Plan{Axes: Axes{RPC: []string{"10.0.0.5:50052"}}, RPCServers: []RPCServer{
		{Host: "host-a", Endpoint: "127.0.0.1:50061", Threads: 1}, {Host: "host-b", Endpoint: "127.0.0.1:50062"}}}
	if eps := p.RPCEndpoints(); strings.Join(eps, ",") != "10.0.0.5:50052,127.0.0.1:50061,127.0.0.1:50062" {
		t.Fatalf("endpoints %v", eps)
	}
	if ep, s, ok := p.RPCDeviceEndpoint("RPC2"); !ok || ep != "127.0.0.1:50062" || s.Host != "host-b" || s.Bind() != "127.0.0.1" || s.Port() != 50062 {
		t.Fatalf("RPC2: %q %+v %v", ep, s, ok)
	}
	if _, s, ok := p.RPCDeviceEndpoint("RPC0"); !ok || s != nil {
		t.Fatal("RPC0 is axes.rpc's endpoint, not a server's")
	}
	uses, _ := ParseRPCLog(strings.ReplaceAll(strings.ReplaceAll(rpcLog, "50161", "50061"), "50162", "50062"))
	uses[0].Device, uses[1].Device = "RPC1", "RPC2"
	if code, why := RPCEvidence(p, "RPC1/RPC2", []string{"Vulkan,RPC", "RPC"}, uses); code != "" {
		t.Fatalf("evidence: %s %s", code, why)
	}
	if code, _ := RPCEvidence(p, "RPC1/RPC2", []string{"CPU"}, uses); code != CodeRPCNoBackend {
		t.Fatalf("a row without RPC: %q", code)
	}
	if code, _ := RPCEvidence(p, "RPC1/RPC2", []string{"RPC"}, uses[:1]); code != CodeRPCNotInLog {
		t.Fatalf("a device the log does not show: %q", code)
	}
	if code, _ := RPCEvidence(p, "none", []string{"CPU"}, nil); code != "" {
		t.Fatalf("the local arm: %q", code)
	}
	v := &validator{p: &Plan{Axes: Axes{RPC: []string{"127.0.0.1:50061"}}, RPCServers: []RPCServer{
		{Host: "Bad Host", Endpoint: "127.0.0.1:50061", Threads: -1, Device: "a b"}, {Host: "h", Endpoint: "nope"}}}}
	v.checkRPCServers()
	var paths []string
	for _, pr := range v.problems {
		paths = append(paths, pr.Path)
	}
	if strings.Join(paths, " ") != "rpc_servers[0].host rpc_servers[0].endpoint rpc_servers[0].threads rpc_servers[0].device rpc_servers[1].endpoint" {
		t.Fatalf("problems: %v", v.problems)
	}
}
