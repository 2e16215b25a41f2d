package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sparkbench/runner/llamacpp"
)

// VulkanVisibleEnv is the variable that makes ggml's Vulkan backend use the devices it names,
// those of CPU type (Mesa's llvmpipe) included, which it skips when the variable is unset.
const VulkanVisibleEnv = "GGML_VK_VISIBLE_DEVICES"

// vulkanLib is the Vulkan backend's library, as the installer and llama.cpp's builds name it.
const vulkanLib = "libggml-vulkan.so"

// DeviceNote is what the doctor says about a backend whose devices the build does not list:
// devices that appear only with an environment variable set (Env, Devices), or a backend that
// found none. It is a note, not a problem: the build works on the devices it lists.
type DeviceNote struct {
	Backend string            // "Vulkan"
	Env     string            // e.g. "GGML_VK_VISIBLE_DEVICES=0": the devices appear with it; "" when none did
	Devices []llamacpp.Device `json:",omitempty"` // the devices that appear only with Env
	CPUType bool              `json:",omitempty"` // the backend said the device is of CPU type
	Text    string            // the note in words, with what to do
}

// vulkanNote asks the build again, with GGML_VK_VISIBLE_DEVICES=0, when it has the Vulkan
// backend (loaded, or its library beside the tools) and lists no Vulkan device (nil
// otherwise): ggml skips Vulkan devices of CPU type unless that variable names them.
func vulkanNote(ctx context.Context, b *llamacpp.Build) *DeviceNote {
	loaded := false
	for _, be := range b.Backends {
		if strings.HasPrefix(be, "Vulkan ") || be == "Vulkan" {
			loaded = true
		}
	}
	if !loaded && !hasVulkanLib(b) {
		return nil
	}
	for _, d := range b.Devices {
		if strings.HasPrefix(d.Name, "Vulkan") {
			return nil
		}
	}
	env := VulkanVisibleEnv + "=0"
	n := &DeviceNote{Backend: "Vulkan"}
	out, err := llamacpp.RunMetaEnv(ctx, llamacpp.MetaTimeout, []string{env}, b.Bench, "--list-devices")
	if err != nil {
		n.Text = fmt.Sprintf("the Vulkan backend lists no device, and %s --list-devices with %s did not run: %v", filepath.Base(b.Bench), env, err)
		return n
	}
	for _, d := range llamacpp.ParseDevices(out) {
		if strings.HasPrefix(d.Name, "Vulkan") {
			n.Devices = append(n.Devices, d)
		}
	}
	if len(n.Devices) == 0 {
		if loaded {
			n.Text = fmt.Sprintf("the Vulkan backend (%s) loaded and found no device, also with %s: install a Vulkan driver (apt-get install mesa-vulkan-drivers, or the GPU vendor's)", vulkanLib, env)
		} else {
			n.Text = fmt.Sprintf("%s is beside the tools but did not load: install the Vulkan loader and a driver (apt-get install libvulkan1 mesa-vulkan-drivers, or the GPU vendor's)", vulkanLib)
		}
		return n
	}
	n.Env = env
	n.CPUType = strings.Contains(out, "Device type is CPU")
	var devs []string
	for _, d := range n.Devices {
		devs = append(devs, deviceLine(d))
	}
	verb, why := "appears", "ggml skips Vulkan devices of CPU type"
	if len(devs) > 1 {
		verb = "appear"
	}
	if !n.CPUType {
		why = "ggml does not list it without the variable"
	}
	n.Text = fmt.Sprintf("%s %s only with %s (%s): set build.env in a plan to use it", strings.Join(devs, "; "), verb, env, why)
	return n
}

// hasVulkanLib reports whether the Vulkan backend's library lies beside the tools or beside
// the build's other libraries.
func hasVulkanLib(b *llamacpp.Build) bool {
	dirs := []string{b.Dir}
	for _, l := range b.Libraries {
		dirs = append(dirs, filepath.Dir(l.Path))
	}
	for _, d := range dirs {
		if st, err := os.Stat(filepath.Join(d, vulkanLib)); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// deviceLine is a device as doctor and the Bench section show it:
// "Vulkan0: llvmpipe (LLVM 15.0.6, 256 bits) (2048 MiB, 2048 MiB free)".
func deviceLine(d llamacpp.Device) string {
	return fmt.Sprintf("%s: %s (%d MiB, %d MiB free)", d.Name, d.Description, d.TotalMiB, d.FreeMiB)
}
