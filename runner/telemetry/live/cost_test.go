package live_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/live"
	"sparkbench/runner/telemetry/telemetrytest"
)

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// FullSet discovers a workstation's worth of samplers: FullTree's sysfs and /proc and a fake
// NVML with two GPUs.
func fullSet(tb testing.TB) *live.Set {
	root := tb.TempDir()
	if err := telemetrytest.FullTree(root); err != nil {
		tb.Fatal(err)
	}
	lib := &telemetrytest.NVML{Clock: telemetrytest.NewClock(), GPUs: []*telemetrytest.GPU{
		{Load: telemetrytest.SyntheticLoad}, {Load: telemetrytest.SyntheticLoad}}}
	return live.Discover(context.Background(), live.Config{Root: root, NVML: lib, NvidiaSMI: "-", AMDSMI: "-", ROCmSMI: "-"})
}

// BenchmarkSamplerCPU is the sampler's cost at 100 ms over fullSet (nvml, amdgpu, rapl with 8
// zones, hwmon with 24 sensors, cpufreq with 16 cores, host): each iteration samples for one
// second, then the process idles one second as the control. cpu-ms/s is this process's CPU
// time (user + system, getrusage) per second of wall time; core-share-% is the difference
// between sampling and idle, in percent of one core.
func BenchmarkSamplerCPU(b *testing.B) {
	set := fullSet(b)
	defer set.Close()
	if len(set.Sources) != 6 {
		b.Fatalf("%d sources: %+v", len(set.Sources), set.Status)
	}
	var on, off, wallOn, wallOff time.Duration
	samples := 0
	for i := 0; i < b.N; i++ {
		c0, w0 := cpuTime(b), time.Now()
		s := telemetry.Start(set.Sources, 100*time.Millisecond)
		time.Sleep(time.Second)
		samples += len(s.Stop())
		c1, w1 := cpuTime(b), time.Now()
		time.Sleep(time.Second)
		c2, w2 := cpuTime(b), time.Now()
		on, wallOn = on+c1-c0, wallOn+w1.Sub(w0)
		off, wallOff = off+c2-c1, wallOff+w2.Sub(w1)
	}
	onRate := float64(on) / float64(wallOn)
	offRate := float64(off) / float64(wallOff)
	b.ReportMetric(onRate*1000, "cpu-ms/s")
	b.ReportMetric(offRate*1000, "idle-cpu-ms/s")
	b.ReportMetric((onRate-offRate)*100, "core-share-%")
	b.ReportMetric(float64(samples)/float64(b.N), "samples/s")
}
