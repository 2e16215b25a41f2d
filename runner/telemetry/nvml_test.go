package telemetry_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/telemetrytest"
)

func TestNVMLReadsEveryMetric(t *testing.T) {
	clk := telemetrytest.NewClock()
	lib := &telemetrytest.NVML{Clock: clk, GPUs: []*telemetrytest.GPU{
		{Label: "NVIDIA GeForce RTX 4090", Load: telemetrytest.SyntheticLoad, EnergyOffsetMJ: 987654321},
		{Label: "NVIDIA GB10", Load: telemetrytest.SyntheticLoad, MemNotSupported: true,
			Reasons: func(float64) uint64 { return telemetry.ReasonHwThermalSlowdown }},
	}}
	src, st := telemetry.OpenNVML(lib)
	if !st.Available || st.Energy != "counter" || !strings.Contains(st.Reason, "GPU1: memory Not Supported (unified memory): host memory") ||
		strings.Join(st.Devices, ",") != "GPU0 NVIDIA GeForce RTX 4090,GPU1 NVIDIA GB10" {
		t.Fatalf("status %+v", st)
	}
	read(t, src)
	clk.Advance(4 * time.Second)
	pts := read(t, src)
	// The counter counts from the first reading, whatever the driver's own offset.
	want := telemetrytest.Integral(telemetrytest.SyntheticLoad, 0, 4)
	if got := value(t, pts, "GPU0", telemetry.EnergyJ); math.Abs(got-want) > 0.001 {
		t.Fatalf("GPU0 energy %v J, want %v", got, want)
	}
	if value(t, pts, "GPU0", telemetry.PowerW) != telemetrytest.SyntheticLoad(4) || value(t, pts, "GPU0", telemetry.ThrottleHot) != 0 {
		t.Fatalf("GPU0 %v", pts)
	}
	if value(t, pts, "GPU1", telemetry.ThrottleHot) != 1 || value(t, pts, "GPU1", telemetry.Throttle) != telemetry.ReasonHwThermalSlowdown {
		t.Fatalf("GPU1 throttle %v", pts)
	}
	for _, p := range pts {
		if p.Device == "GPU1" && p.Metric == telemetry.MemUsedBytes {
			t.Fatal("GPU1 reported memory it does not have")
		}
	}
	// GPU1 falls off the bus: GPU0 still reads; then GPU0 goes too and the source is gone.
	lib.GPUs[1].Lose()
	pts, err := src.Read(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GPU1 lost") || errors.Is(err, telemetry.ErrGone) || len(pts) == 0 {
		t.Fatalf("one GPU lost: %v %v", pts, err)
	}
	lib.GPUs[0].Lose()
	if _, err := src.Read(context.Background()); !errors.Is(err, telemetry.ErrGone) {
		t.Fatalf("every GPU lost: %v", err)
	}
}

func TestNVMLNotAvailable(t *testing.T) {
	lib := &telemetrytest.NVML{Clock: telemetrytest.NewClock(), InitErr: errors.New("libnvidia-ml.so.1 not found (no NVIDIA driver on this machine)")}
	if _, st := telemetry.OpenNVML(lib); st.Available || st.Reason != "nvml: libnvidia-ml.so.1 not found (no NVIDIA driver on this machine)" {
		t.Fatalf("%+v", st)
	}
	lib = &telemetrytest.NVML{Clock: telemetrytest.NewClock()}
	if _, st := telemetry.OpenNVML(lib); st.Available || st.Reason != "nvml: no GPU listed" {
		t.Fatalf("%+v", st)
	}
	lib = &telemetrytest.NVML{Clock: telemetrytest.NewClock(), GPUs: []*telemetrytest.GPU{{Load: telemetrytest.SyntheticLoad, NoEnergyCounter: true}}}
	if _, st := telemetry.OpenNVML(lib); !st.Available || st.Energy != "power" || !strings.Contains(st.Reason, "energy is integrated from power") {
		t.Fatalf("%+v", st)
	}
}
