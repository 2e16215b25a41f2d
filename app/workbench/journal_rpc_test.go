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
	)
}
