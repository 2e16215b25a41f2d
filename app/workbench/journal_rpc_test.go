package workbench

func init() {
	journalCases = append(journalCases,
		struct{ kind, payload, want string }{"study.rpc_server", `{"event":"started","host":"host-a","endpoint":"127.0.0.1:50061","pid":4242}`,
			"ggml-rpc-server on host host-a (127.0.0.1:50061) started over ssh, PID 4242 on the host"},
		struct{ kind, payload, want string }{"study.rpc_server", `{"event":"stopped","host":"host-a","endpoint":"127.0.0.1:50061","pid":4242,"signal":"SIGTERM"}`,
			"ggml-rpc-server on host host-a (127.0.0.1:50061) stopped with SIGTERM: none left on the host"},
		struct{ kind, payload, want string }{"study.rpc_server", `{"event":"refused","host":"host-b","endpoint":"127.0.0.1:50062","error":"port 50062 is already taken"}`,
			"ggml-rpc-server on host host-b (127.0.0.1:50062) refused: port 50062 is already taken"},
		struct{ kind, payload, want string }{"study.rpc_split", `{"leg":2,"label":"m/dev-RPC0+RPC1","devices":[{"device":"RPC0","host":"host-a","layers":2},{"device":"RPC1","host":"host-b","layers":1}],"local_layers":0}`,
			"leg m/dev-RPC0+RPC1 layers: RPC0 on host-a 2, RPC1 on host-b 1, local 0"},
		// A capacity run's servers and splits (capacity.RunEvent's RPC and RPCSplit).
		struct{ kind, payload, want string }{"capacity.rpc_server", `{"event":"stopped","host":"host-b","endpoint":"127.0.0.1:50062","pid":77,"signal":"SIGKILL","left":["77 ggml-rpc-server"]}`,
			"ggml-rpc-server on host host-b (127.0.0.1:50062) stopped with SIGKILL: 1 process(es) left on the host"},
		struct{ kind, payload, want string }{"capacity.rpc_split", `{"lifetime":"forward/rpc/p1","devices":[{"device":"RPC0","endpoint":"127.0.0.1:50061","host":"host-a","layers":3,"model_mib":120.5,"kv_mib":8,"compute_mib":2.25}],"local_layers":2,"layers_logged":true}`,
			"server lifetime forward/rpc/p1 layers: RPC0 on host-a 3, local 2"},
		struct{ kind, payload, want string }{"capacity.rpc_split", `{"lifetime":"forward/rpc/p2","devices":[{"device":"RPC0","endpoint":"127.0.0.1:50061","host":"host-a","layers":0,"model_mib":120.5,"kv_mib":8,"compute_mib":2.25},{"device":"RPC1","host":"host-b","model_mib":60,"kv_mib":4,"compute_mib":1}],"local_layers":0,"layers_logged":false}`,
			"server lifetime forward/rpc/p2 buffers (layers not logged): RPC0 on host-a model 120.5 MiB, KV 8 MiB, compute 2.25 MiB, RPC1 on host-b model 60 MiB, KV 4 MiB, compute 1 MiB"},
	)
}
