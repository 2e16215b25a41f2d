package benchfmt

import (
	"strings"
)

// RanOn says where a row's model layers ran, as far as the row itself can tell: "CPU", or the
// backends that held the offloaded layers ("Vulkan", "CUDA", "RPC", "Vulkan,RPC" …).
//
// llama-bench's backends field is not that: it names every backend the build registered, so a
// build with libggml-vulkan.so beside it prints "Vulkan" for a run that used no Vulkan device
// at all (measured on build 11669: no device visible, -dev none, or -ngl 0 all print
// "Vulkan"). The row ran on the CPU when no device was there to use (gpu_info empty), when the
// run was told to use none (devices "none"), or when no layer was offloaded (n_gpu_layers 0).
// Otherwise the layers ran on the named devices' backends (devices "Vulkan0/RPC0[…]" give
// "Vulkan,RPC"), or, with devices "auto", on the backends the row lists.
//
// A row that does not carry gpu_info, devices or n_gpu_layers (older builds, some pasted
// tables) is taken at its word: its backends field as printed.
func (r *Result) RanOn() string {
	if !r.Known.Has(FGPUInfo) || !r.Known.Has(FNGPULayers) {
		return r.Backends
	}
	devices := ""
	if r.Known.Has(FDevices) {
		devices = strings.TrimSpace(r.Devices)
	}
	if r.GPUInfo == "" || r.NGPULayers == 0 || devices == "none" {
		return "CPU"
	}
	if devices != "" && devices != "auto" {
		if b := DeviceBackends(devices); b != "" {
			return b
		}
	}
	return r.Backends
}

// DeviceBackends names the backends of a devices value ("Vulkan0/Vulkan1" → "Vulkan",
// "CUDA0/RPC0[127.0.0.1:50052]" → "CUDA,RPC"), in order, each once; "" when a name has no
// backend prefix.
func DeviceBackends(devices string) string {
	var out []string
	for _, d := range strings.Split(devices, "/") {
		d = strings.TrimSpace(d)
		if i := strings.IndexByte(d, '['); i >= 0 {
			d = d[:i]
		}
		name := strings.TrimRight(d, "0123456789")
		if name == "" || name == "none" {
			return ""
		}
		seen := false
		for _, o := range out {
			seen = seen || o == name
		}
		if !seen {
			out = append(out, name)
		}
	}
	return strings.Join(out, ",")
}

// AskedDevices is the devices value the row's run asked for (-dev: "none", "auto", "Vulkan0"
// …), or "" when the row does not carry it.
func (r *Result) AskedDevices() string {
	if !r.Known.Has(FDevices) {
		return ""
	}
	return r.Devices
}
