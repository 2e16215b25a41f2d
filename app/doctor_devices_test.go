package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBuild writes a llama.cpp folder of shell scripts: llama-server answers --version, and
// llama-bench --list-devices prints listing (the backends and devices lines), or vkListing
// instead when GGML_VK_VISIBLE_DEVICES is set (as ggml_vulkan shows a device of CPU type only
// then). libs are empty files written beside the tools (e.g. libggml-vulkan.so).
func fakeBuild(t *testing.T, listing, vkListing string, libs ...string) string {
	t.Helper()
	dir := t.TempDir()
	server := "#!/bin/sh\necho 'version: 1.0 (build 7, commit abc)'\necho 'built with cc for Linux'\n"
	bench := fmt.Sprintf("#!/bin/sh\nif [ -n \"$GGML_VK_VISIBLE_DEVICES\" ]; then\ncat <<'X'\n%s\nX\nelse\ncat <<'X'\n%s\nX\nfi\n", vkListing, listing)
	for name, text := range map[string]string{"llama-server": server, "llama-bench": bench} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range libs {
		if err := os.WriteFile(filepath.Join(dir, l), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// doctorText is the doctor's text and JSON for a folder, with what differs between machines
// and runs (the temporary folder, the machine line) replaced by fixed words.
func doctorText(t *testing.T, dir string) (string, string, DoctorReport) {
	t.Helper()
	t.Setenv("DISPLAY", ":99")
	models := t.TempDir()
	rep := Doctor(context.Background(), DoctorOptions{LlamaDir: dir, ModelDirs: []string{models}, NotebookPath: filepath.Join(models, "n.db")})
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	fix := func(s string) string {
		s = strings.ReplaceAll(s, rep.Machine, "MACHINE")
		s = strings.ReplaceAll(s, dir, "BUILD")
		return strings.ReplaceAll(s, models, "MODELS")
	}
	return fix(buf.String()), fix(string(js)), rep
}

const cpuListing = `load_backend: loaded CPU backend from /x/libggml-cpu-zen4.so
Available devices:
  (none)`

const cudaListing = `load_backend: loaded CUDA backend from /x/libggml-cuda.so
load_backend: loaded CPU backend from /x/libggml-cpu-zen4.so
Available devices:
  CUDA0: NVIDIA GeForce RTX 4090 (24076 MiB, 23000 MiB free)`

// The doctor's output for builds without a Vulkan backend, recorded before the doctor learned
// about hidden Vulkan devices (testdata/doctor_*.golden.txt and .json): it must not change.
// SPARKBENCH_UPDATE_GOLDEN=1 rewrites the files.
func TestDoctorOutputWithoutVulkanUnchanged(t *testing.T) {
	for _, c := range []struct{ name, listing string }{{"cpu", cpuListing}, {"cuda", cudaListing}} {
		t.Run(c.name, func(t *testing.T) {
			text, js, _ := doctorText(t, fakeBuild(t, c.listing, c.listing))
			for ext, got := range map[string]string{"txt": text, "json": js} {
				file := filepath.Join("testdata", "doctor_"+c.name+".golden."+ext)
				if os.Getenv("SPARKBENCH_UPDATE_GOLDEN") == "1" {
					os.MkdirAll("testdata", 0o755)
					if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Errorf("doctor %s output changed:\n got %s\nwant %s", ext, got, want)
				}
			}
		})
	}
}

const vkNoDevice = `load_backend: loaded RPC backend from /x/libggml-rpc.so
ggml_vulkan: No devices found.
load_backend: loaded Vulkan backend from /x/libggml-vulkan.so
load_backend: loaded CPU backend from /x/libggml-cpu-zen4.so
Available devices:
  (none)`

const vkLlvmpipe = `load_backend: loaded RPC backend from /x/libggml-rpc.so
ggml_vulkan: Found 1 Vulkan devices:
ggml_vulkan: 0 = llvmpipe (LLVM 15.0.6, 256 bits) (llvmpipe) | uma: 0 | fp16: 1 | bf16: 0 | fp4: 0 | warp size: 8 | shared memory: 32768 | int dot: 0 | matrix cores: none
ggml_vulkan: Warning: Device type is CPU. This is probably not the device you want.
load_backend: loaded Vulkan backend from /x/libggml-vulkan.so
load_backend: loaded CPU backend from /x/libggml-cpu-zen4.so
Available devices:
  Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits) (2048 MiB, 2048 MiB free)`

// A Vulkan build that lists no device is asked again with GGML_VK_VISIBLE_DEVICES=0: a device
// of CPU type that then appears is named with the variable that shows it; none appearing
// names the driver package; a backend library beside the tools that did not load names the
// loader too. Each is a note: the doctor's problems and its verdict are unchanged.
func TestDoctorVulkanNotes(t *testing.T) {
	for _, c := range []struct {
		name, listing, vk string
		libs              []string
		env               string
		want              string
	}{
		{"hidden llvmpipe", vkNoDevice, vkLlvmpipe, nil, "GGML_VK_VISIBLE_DEVICES=0",
			"  note:       Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits) (2048 MiB, 2048 MiB free) appears only with GGML_VK_VISIBLE_DEVICES=0 (ggml skips Vulkan devices of CPU type): set build.env in a plan to use it\n"},
		{"no device at all", vkNoDevice, vkNoDevice, nil, "",
			"  note:       the Vulkan backend (libggml-vulkan.so) loaded and found no device, also with GGML_VK_VISIBLE_DEVICES=0: install a Vulkan driver (apt-get install mesa-vulkan-drivers, or the GPU vendor's)\n"},
		{"library that did not load", cpuListing, cpuListing, []string{"libggml-vulkan.so"}, "",
			"  note:       libggml-vulkan.so is beside the tools but did not load: install the Vulkan loader and a driver (apt-get install libvulkan1 mesa-vulkan-drivers, or the GPU vendor's)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, js, rep := doctorText(t, fakeBuild(t, c.listing, c.vk, c.libs...))
			if len(rep.DeviceNotes) != 1 || rep.DeviceNotes[0].Env != c.env || rep.DeviceNotes[0].Backend != "Vulkan" {
				t.Fatalf("notes %+v", rep.DeviceNotes)
			}
			// the note follows the devices line
			if !strings.Contains(text, "  devices:    none besides the CPU\n"+c.want) {
				t.Errorf("text lacks %q after the devices line:\n%s", c.want, text)
			}
			if !strings.Contains(js, `"DeviceNotes": [`) {
				t.Errorf("JSON lacks the notes:\n%s", js)
			}
			// a note is not a problem: the only problem is the empty model folder
			if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].What, "models:") {
				t.Errorf("problems %+v", rep.Problems)
			}
		})
	}
	// A build whose Vulkan backend lists its device has nothing to add.
	_, _, rep := doctorText(t, fakeBuild(t, vkLlvmpipe, vkLlvmpipe))
	if len(rep.DeviceNotes) != 0 {
		t.Errorf("a listed Vulkan device drew notes %+v", rep.DeviceNotes)
	}
}
