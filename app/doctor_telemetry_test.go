package app

import (
	"bytes"
	"strings"
	"testing"

	"sparkbench/runner/telemetry"
)

// The doctor lists every sampler, available or not and why, after the machine.
func TestDoctorTelemetryLines(t *testing.T) {
	r := DoctorReport{Machine: "m", Telemetry: []telemetry.Status{
		{Source: "nvml", Reason: "nvml: libnvidia-ml.so.1 not found (no NVIDIA driver on this machine)"},
		{Source: "nvidia-smi", Available: true, Devices: []string{"GPU0"}, Energy: "power", Reason: "nvidia-smi: not supported: memory.used, memory.total (unified memory: host memory is recorded instead)"},
		{Source: "host", Available: true, Devices: []string{"psi/cpu", "host"}},
	}}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := "machine\n  m\ntelemetry\n" +
		"  nvml:         not available: libnvidia-ml.so.1 not found (no NVIDIA driver on this machine)\n" +
		"  nvidia-smi:   available: GPU0 (energy: power); not supported: memory.used, memory.total (unified memory: host memory is recorded instead)\n" +
		"  host:         available: psi/cpu, host\n" +
		"notebook\n"
	if !strings.Contains(buf.String(), want) {
		t.Fatalf("doctor text:\n%s\nwant within it:\n%s", buf.String(), want)
	}
	// Without telemetry statuses (a report made before) the text has no such section.
	buf.Reset()
	r.Telemetry = nil
	if err := r.WriteText(&buf); err != nil || strings.Contains(buf.String(), "telemetry") {
		t.Fatalf("%v\n%s", err, buf.String())
	}
}
