package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sparkbench/runner/sharedtest"
	"strings"
	"testing"

	"sparkbench/runner/llamatest"
)

func TestDoctorRealBinariesAndModels(t *testing.T) {
	loc := llamatest.Binaries(t)
	models := llamatest.ModelsDir()
	llamatest.Model(t, "tiny-llama-f32.gguf")
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "notgguf.gguf"), []byte("\x7fELF not a model"), 0o644)
	t.Setenv("DISPLAY", ":99")

	rep := Doctor(context.Background(), DoctorOptions{
		LlamaDir:     loc.Dir,
		ModelDirs:    []string{models, bad, filepath.Join(bad, "absent")},
		NotebookPath: filepath.Join(bad, "notebook.db"),
	})
	if rep.Llama == nil {
		t.Fatalf("llama.cpp not inspected: %s", rep.LlamaErr)
	}
	if rep.Llama.BuildNumber <= 0 || len(rep.Llama.Binaries) != 2 {
		t.Fatalf("build not described: %+v", rep.Llama)
	}
	var tiny, moe, broken *ModelEntry
	for i := range rep.Models {
		m := &rep.Models[i]
		switch filepath.Base(m.Path) {
		case "tiny-llama-f32.gguf":
			tiny = m
		case "tiny-moe-f32.gguf":
			moe = m
		case "notgguf.gguf":
			broken = m
		}
	}
	if tiny == nil || tiny.Architecture != "llama" || tiny.Context != 4096 || tiny.Params == 0 || tiny.Err != "" {
		t.Errorf("tiny model: %+v", tiny)
	}
	if moe == nil || moe.Experts != 4 || moe.ExpertsUsed != 2 {
		t.Errorf("moe model: %+v", moe)
	}
	if broken == nil || !strings.Contains(broken.Err, "magic") {
		t.Errorf("broken model: %+v", broken)
	}
	if len(rep.ModelDirs) != 3 || rep.ModelDirs[2].Exists {
		t.Errorf("model dirs: %+v", rep.ModelDirs)
	}
	// Exactly one problem: the broken model, with a fix.
	if len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].What, "notgguf.gguf") || rep.Problems[0].Fix == "" {
		t.Errorf("problems: %+v", rep.Problems)
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{rep.Llama.VersionLine, "sha256:", "tiny-llama-f32.gguf: llama", "4 experts (2 used)", "notebook.db (will be created on first use)", "1 problem(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor text lacks %q:\n%s", want, out)
		}
	}
	// The libraries that hold the build's code are listed with their hashes.
	var lib string
	for _, l := range rep.Llama.Libraries {
		if l.Name == "libllama.so.0" {
			lib = "library:    " + l.SHA256 + "  libllama.so.0"
		}
	}
	if lib == "" || !strings.Contains(out, lib) {
		t.Errorf("doctor lists no libllama.so.0 hash (libraries %+v):\n%s", rep.Llama.Libraries, out)
	}
}

func TestDoctorNothingFound(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("SPARKBENCH_LLAMA_DIR", "")
	t.Setenv("SPARKBENCH_LLAMA_PREFIX", filepath.Join(tmp, "none"))
	t.Setenv("PATH", tmp)
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	rep := Doctor(context.Background(), DoctorOptions{ModelDirs: []string{tmp}, NotebookPath: filepath.Join(tmp, "n.db")})
	if rep.Llama != nil || rep.OK() {
		t.Fatalf("want problems, got %+v", rep)
	}
	var fixes []string
	for _, p := range rep.Problems {
		fixes = append(fixes, p.Fix)
	}
	joined := strings.Join(fixes, "\n")
	for _, want := range []string{"make llama", "make models", "xvfb-run"} {
		if !strings.Contains(joined, want) {
			t.Errorf("fixes lack %q:\n%s", want, joined)
		}
	}
}

func TestHumanUnits(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want string
	}{{12, "12"}, {164544, "164.5K"}, {7241732096, "7.24B"}, {3_500_000, "3.50M"}} {
		if got := HumanCount(c.n); got != c.want {
			t.Errorf("HumanCount(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		n    int64
		want string
	}{{512, "512 B"}, {665856, "650.2 KiB"}, {4 << 30, "4.0 GiB"}} {
		if got := HumanBytes(c.n); got != c.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// TestDoctorRealVulkanSoftwareDevice: the default prefix has the Vulkan backend, and Mesa's
// llvmpipe is listed only with GGML_VK_VISIBLE_DEVICES=0; the doctor says so, naming the
// device with its memory and the variable, as a note rather than a problem.
func TestDoctorRealVulkanSoftwareDevice(t *testing.T) {
	loc := llamatest.Binaries(t)
	t.Setenv("DISPLAY", ":99")
	rep := Doctor(context.Background(), DoctorOptions{LlamaDir: loc.Dir, ModelDirs: []string{llamatest.ModelsDir()}})
	if rep.Llama == nil {
		t.Fatalf("llama.cpp not inspected: %s", rep.LlamaErr)
	}
	vulkan := false
	for _, b := range rep.Llama.Backends {
		vulkan = vulkan || strings.HasPrefix(b, "Vulkan ")
	}
	for _, d := range rep.Llama.Devices {
		if strings.HasPrefix(d.Name, "Vulkan") {
			t.Skipf("this machine lists a Vulkan device without the variable (%s): nothing hidden", d.Name)
		}
	}
	if !vulkan {
		msg := "the build has no Vulkan backend: run make setup (the full prefix, libvulkan1, mesa-vulkan-drivers)"
		if os.Getenv("SPARKBENCH_REQUIRE_LLAMA") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if len(rep.DeviceNotes) != 1 {
		t.Fatalf("notes %+v", rep.DeviceNotes)
	}
	n := rep.DeviceNotes[0]
	if n.Env == "" {
		sharedtest.Require(t, "no Vulkan device even with GGML_VK_VISIBLE_DEVICES=0: run make setup (mesa-vulkan-drivers): "+n.Text)
	}
	if n.Env != "GGML_VK_VISIBLE_DEVICES=0" || len(n.Devices) != 1 || n.Devices[0].Name != "Vulkan0" || n.Devices[0].TotalMiB <= 0 || !n.CPUType ||
		!strings.Contains(n.Text, "Vulkan0: "+n.Devices[0].Description) || !strings.Contains(n.Text, "appears only with GGML_VK_VISIBLE_DEVICES=0 (ggml skips Vulkan devices of CPU type)") {
		t.Fatalf("note %+v", n)
	}
	for _, p := range rep.Problems {
		if strings.Contains(p.What, "Vulkan") {
			t.Errorf("the note became a problem: %+v", p)
		}
	}
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "  note:       "+n.Text+"\n") {
		t.Errorf("doctor text lacks the note:\n%s", buf.String())
	}
}
