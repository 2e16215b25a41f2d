package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sparkbench/app/charts"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/llamatest"
)

// Device studies on a real non-CPU backend: Mesa's software Vulkan device (llvmpipe), which
// the default prefix's libggml-vulkan.so uses once GGML_VK_VISIBLE_DEVICES names it (ggml skips
// Vulkan devices of CPU type by default). It is slow (the medium model's tg runs at about 5 t/s
// there), so the plans keep their tests short.

const vkEnv = "GGML_VK_VISIBLE_DEVICES=0"

// vulkanDevice returns the Vulkan device's name, failing under make test (the set-up installs
// libvulkan1 and mesa-vulkan-drivers, and the installer puts the Vulkan backend in the prefix)
// and skipping in a bare go test when there is none.
func vulkanDevice(t *testing.T) (bench string, device string) {
	t.Helper()
	loc := llamatest.Binaries(t)
	dl, err := llamacpp.ListDevices(context.Background(), loc.Bench, []string{vkEnv}, nil)
	if err == nil {
		for _, d := range dl.Devices {
			if strings.HasPrefix(d.Name, "Vulkan") {
				return loc.Bench, d.Name
			}
		}
	}
	msg := fmt.Sprintf("no Vulkan device with %s (err %v): run make setup (libvulkan1, mesa-vulkan-drivers, the full llama.cpp prefix)", vkEnv, err)
	if os.Getenv("SPARKBENCH_REQUIRE_LLAMA") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return "", ""
}

func sha256Of(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(llamatest.ModelsDir(), "QUANTIZED.json"))
	if err != nil {
		t.Fatal(err)
	}
	if name == "medium-llama-f16.gguf" {
		m := regexp.MustCompile(`"file": "medium-llama-f16.gguf",\s*"sha256": "([0-9a-f]{64})"`).FindSubmatch(data)
		if m == nil {
			t.Fatalf("QUANTIZED.json names no source sha256")
		}
		return string(m[1])
	}
	m := regexp.MustCompile(`"file": "` + regexp.QuoteMeta(name) + `",\s*"sha256": "([0-9a-f]{64})"`).FindSubmatch(data)
	if m == nil {
		t.Fatalf("QUANTIZED.json does not list %s", name)
	}
	return string(m[1])
}

// TestDeviceStudyCPUAndVulkan runs one throughput study of the medium model on the CPU
// (-dev none) and on the Vulkan device over the same depths, plus an ngl sweep on Vulkan, through
// the CLI on the real llama-bench: each Vulkan row must show it ran there (the device gate),
// show gives one cell per device, the depth chart one series per backend, and the receipt
// names the device and the backend libraries' hashes and verifies byte for byte.
func TestDeviceStudyCPUAndVulkan(t *testing.T) {
	_, dev := vulkanDevice(t)
	medium := llamatest.Model(t, "medium-llama-f16.gguf")
	dir := t.TempDir()
	nb := filepath.Join(dir, "notebook.db")
	plan := fmt.Sprintf(`{
  "schema": "sparkbench.throughput/v1", "name": "cpu vs vulkan",
  "build": {"env": {"GGML_VK_VISIBLE_DEVICES": "0"}},
  "models": [{"id": "medium", "path": %q, "sha256": %q}],
  "axes": {"depths": [0, 32], "n_prompt": [16], "n_gen": [4], "reps": 2, "threads": [1], "ngl": [99],
           "devices": ["none", %q]},
  "split": "combined",
  "gates": {"cv_tg": 1, "cv_pp_depth": 1, "cv_pp_d0": 1}
}`, medium, sha256Of(t, "medium-llama-f16.gguf"), dev)
	file := filepath.Join(dir, "devices.json")
	os.WriteFile(file, []byte(plan), 0o644)

	code, out, errOut := runCLI("study", "validate", file)
	if code != 0 || !strings.Contains(out, "medium/dev-none") || !strings.Contains(out, "medium/dev-"+dev) ||
		!strings.Contains(out, "-dev "+dev) {
		t.Fatalf("validate: %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI("study", "register", file, "--notebook", nb)
	if code != 0 {
		t.Fatalf("register: %d\n%s\n%s", code, out, errOut)
	}
	id := registeredID(t, out)
	code, out, errOut = runCLI("study", "run", id, "--notebook", nb)
	if code != 0 {
		t.Fatalf("run: %d\n%s\n%s", code, out, errOut)
	}
	rep := showJSON(t, id, nb)
	cells := map[string]float64{}
	for _, c := range rep.Results {
		cells[fmt.Sprintf("%s d%d %s", c.Test, c.Depth, c.Config)] = c.Mean
	}
	for _, test := range []string{"pp16", "tg4"} {
		for _, d := range []int{0, 32} {
			cpu := fmt.Sprintf("%s d%d ub512 b2048 fa-auto kv-f16/f16 t1 ngl99 dev-none", test, d)
			vk := fmt.Sprintf("%s d%d ub512 b2048 fa-auto kv-f16/f16 t1 ngl99 dev-%s on-Vulkan", test, d, dev)
			if cells[cpu] <= 0 || cells[vk] <= 0 {
				t.Errorf("missing cells %q or %q in %v", cpu, vk, cells)
			}
		}
	}

	// the per-backend chart: the depth chart has one series per device
	ch, err := charts.Depth(rep, "tg", 0)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range ch.Series {
		labels = append(labels, s.Label)
		if len(s.Points) != 2 {
			t.Errorf("series %q has %d depths, want 2", s.Label, len(s.Points))
		}
	}
	if len(labels) != 2 || !strings.Contains(labels[0]+labels[1], "dev-none") || !strings.Contains(labels[0]+labels[1], "on-Vulkan") {
		t.Errorf("depth chart series %q: want one CPU (dev-none) and one Vulkan series", labels)
	}
	png := filepath.Join(dir, "depth.png")
	if code, out, errOut := runCLI("plot", id, "--kind", "depth", "--metric", "tg", "--out", png, "--notebook", nb); code != 0 {
		t.Errorf("plot: %d\n%s\n%s", code, out, errOut)
	}

	bundle := filepath.Join(dir, "bundle")
	if code, out, errOut := runCLI("receipt", id, "--out", bundle, "--notebook", nb); code != 0 {
		t.Fatalf("receipt: %d\n%s\n%s", code, out, errOut)
	}
	md, err := os.ReadFile(filepath.Join(bundle, "receipt.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{dev + " (", "libggml-vulkan.so", "dev-" + dev + " on-Vulkan", "dev-none"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("receipt.md lacks %q", want)
		}
	}
	if !regexp.MustCompile("`libggml-vulkan.so` SHA-256 `[0-9a-f]{64}`").Match(md) {
		t.Errorf("receipt.md does not hash libggml-vulkan.so")
	}
	if code, out, errOut := runCLI("verify", bundle); code != 0 {
		t.Fatalf("verify: %d\n%s\n%s", code, out, errOut)
	}
}
