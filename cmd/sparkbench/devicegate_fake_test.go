package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner"
	"sparkbench/runner/llamatest"
)

// The device gate end to end through the CLI, on the fake llama-bench (it lists a Vulkan0
// device and prints rows that say where they ran): a study that asks for Vulkan0 and gets
// rows from the CPU, or from another backend, has its leg flagged with the gate's code at the
// first row, in the run's output, in show --json and in the receipt's study.json; the same study whose rows ran on
// Vulkan0 is not flagged. A gate that always passes fails this test.
func TestDeviceGateThroughTheCLI(t *testing.T) {
	fake := fakeLlamaDir(t)
	tiny := llamatest.Model(t, "tiny-llama-f32.gguf")
	t.Setenv("SPARKBENCH_LLAMA_DIR", fake) // register lists the build's devices too
	t.Setenv("FAKELLAMA_MODE", "")
	t.Setenv("FAKELLAMA_DEVICE_LIST", "  Vulkan0: Fake GPU (24576 MiB, 23000 MiB free)")
	vulkan := map[string]string{"FAKELLAMA_GPU_INFO": "Fake GPU", "FAKELLAMA_BACKENDS": "Vulkan", "FAKELLAMA_NGL": "99", "FAKELLAMA_DEVICES": "Vulkan0"}
	cases := []struct {
		name string
		env  map[string]string
		code string // "" for a leg the gate passes
	}{
		{"cpu", map[string]string{}, runner.CodeDeviceNotUsed},
		{"other-backend", map[string]string{"FAKELLAMA_GPU_INFO": "NVIDIA GB10", "FAKELLAMA_BACKENDS": "CUDA", "FAKELLAMA_NGL": "99"}, runner.CodeDeviceOtherBackend},
		{"vulkan", vulkan, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"FAKELLAMA_GPU_INFO", "FAKELLAMA_BACKENDS", "FAKELLAMA_NGL", "FAKELLAMA_DEVICES"} {
				if v, ok := c.env[k]; ok {
					t.Setenv(k, v)
				} else {
					t.Setenv(k, "")
					os.Unsetenv(k)
				}
			}
			dir := t.TempDir()
			nb := filepath.Join(dir, "notebook.db")
			plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": "device gate %s",
  "models": [{"id": "tiny", "path": %q, "sha256": %q}],
  "axes": {"depths": [0], "n_prompt": [16], "n_gen": [8], "reps": 2, "threads": [1], "ngl": [99], "devices": ["Vulkan0"]},
  "split": "combined",
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}
}`, c.name, tiny, tinySHA)
			file := filepath.Join(dir, "plan.json")
			if err := os.WriteFile(file, []byte(plan), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI("study", "register", file, "--notebook", nb)
			if code != 0 {
				t.Fatalf("register: %d\n%s\n%s", code, out, errOut)
			}
			id := registeredID(t, out)
			code, out, errOut = runCLI("study", "run", id, "--notebook", nb, "--llama-dir", fake)
			rep := showJSON(t, id, nb)
			var legs []string
			for _, l := range rep.Legs {
				legs = append(legs, fmt.Sprintf("%s %s %q", l.Label, l.Class, l.Reason))
			}
			if len(rep.Legs) != 1 {
				t.Fatalf("legs %q\nrun: %d\n%s\n%s", legs, code, out, errOut)
			}
			l := rep.Legs[0]
			if c.code == "" {
				if code != 0 || l.Class != string(runner.ClassOK) || len(rep.Results) != 2 {
					t.Fatalf("on the device: exit %d, legs %q, %d results\n%s\n%s", code, legs, len(rep.Results), out, errOut)
				}
				return
			}
			if l.Class != string(runner.ClassFlagged) || !strings.Contains(l.Reason, "pp16: "+c.code) {
				t.Fatalf("legs %q, want flagged with %s at pp16\nrun: %d\n%s\n%s", legs, c.code, code, out, errOut)
			}
			if !strings.Contains(out+errOut, c.code) {
				t.Errorf("the run's output does not name %s:\n%s\n%s", c.code, out, errOut)
			}
			if len(rep.Results) != 0 {
				t.Errorf("results from a leg flagged at its first row: %+v", rep.Results)
			}
			// the receipt carries the leg's reason (study.json) and verifies
			bundle := filepath.Join(dir, "receipt")
			if code, o, e := runCLI("receipt", id, "--out", bundle, "--notebook", nb); code != 0 {
				t.Fatalf("receipt: %d %s %s", code, o, e)
			}
			if code, o, e := runCLI("verify", bundle); code != 0 {
				t.Fatalf("verify: %d %s %s", code, o, e)
			}
			js, err := os.ReadFile(filepath.Join(bundle, "study.json"))
			if err != nil || !strings.Contains(string(js), "pp16: "+c.code) {
				t.Errorf("the receipt's study.json does not carry pp16: %s (%v)", c.code, err)
			}
		})
	}
}
