package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/signal"
	"strconv"

	"sparkbench/app"
	"sparkbench/runner/llamacpp"
	"sparkbench/store"
)

func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("doctor", stderr)
	llamaDir := fs.String("llama-dir", "", "folder holding llama-bench and llama-server (default: $"+llamacpp.EnvDir+", the installed prefix, then PATH)")
	notebook := fs.String("notebook", "", "notebook file (default: $SPARKBENCH_NOTEBOOK, then the user's data folder)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	withTelemetry := fs.Bool("telemetry", false, "also try every telemetry sampler (NVML, nvidia-smi, amd-smi, rocm-smi, amdgpu, RAPL, hwmon, cpufreq, host) and say why each is not available")
	host := fs.String("host", "", "fingerprint this bench host over ssh instead (docs/fleet.md; --hosts FILE)")
	hosts := fs.String("hosts", "", "hosts file for --host ("+hostsFlagHelp[len("hosts file ("):])
	var models multiFlag
	fs.Var(&models, "models", "folder to scan for .gguf files (repeatable; default: testdata/models, $"+app.EnvModelDirs+", ~/models)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageError(err)
	}
	if len(pos) > 0 {
		fprintf(stderr, "sparkbench doctor: unexpected argument %q; doctor takes only flags (see sparkbench doctor -h)\n", pos[0])
		return 2
	}
	if *host != "" {
		return hostCheck("doctor --host", []string{"--hosts=" + *hosts, "--notebook=" + *notebook, "--json=" + strconv.FormatBool(*asJSON), *host}, stdout, stderr)
	}
	// A folder the user named must be usable: a typo is bad input, not a report.
	if *llamaDir != "" {
		if _, err := llamacpp.Check(*llamaDir, llamacpp.SourceFlag); err != nil {
			fprintf(stderr, "sparkbench doctor: %v\n", err)
			return 2
		}
	}
	for _, d := range models {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			fprintf(stderr, "sparkbench doctor: --models %s: not an existing folder; pass a folder holding .gguf files\n", d)
			return 2
		}
	}
	opts := app.DoctorOptions{LlamaDir: *llamaDir, ModelDirs: models, Telemetry: *withTelemetry}
	opts.NotebookPath, opts.NotebookErr = notebookPath(*notebook)

	ctx, stop := signal.NotifyContext(context.Background(), stopSignals...)
	defer stop()
	rep := app.Doctor(ctx, opts)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fprintf(stderr, "sparkbench doctor: %v\n", err)
			return 1
		}
	} else if err := rep.WriteText(stdout); err != nil {
		fprintf(stderr, "sparkbench doctor: %v\n", err)
		return 1
	}
	if rep.Llama == nil {
		return 1
	}
	return 0
}

// notebookPath resolves --notebook, else the store's default.
func notebookPath(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	return store.DefaultPath()
}
