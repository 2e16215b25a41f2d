package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/telemetrytest"
)

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseNvidiaSMIRecorded(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(testdata(t, "nvidia-smi-query.csv")), "\n")
	pts, ns, err := telemetry.ParseNvidiaSMILine(lines[1])
	if err != nil || len(ns) != 0 {
		t.Fatal(err, ns)
	}
	if value(t, pts, "GPU1", telemetry.PowerW) != 449.83 || value(t, pts, "GPU1", telemetry.Throttle) != telemetry.ReasonSwPowerCap ||
		value(t, pts, "GPU1", telemetry.ThrottleHot) != 0 || value(t, pts, "GPU1", telemetry.MemTotalBytes) != 24564<<20 {
		t.Fatalf("GPU1 %v", pts)
	}
	pts, _, err = telemetry.ParseNvidiaSMILine(strings.TrimSpace(testdata(t, "nvidia-smi-thermal.csv")))
	if err != nil || value(t, pts, "GPU0", telemetry.ThrottleHot) != 1 || value(t, pts, "GPU0", telemetry.ClockSMMHz) != 1410 {
		t.Fatalf("thermal line: %v %v", pts, err)
	}
	// DGX Spark: memory is Not Supported; the rest reads.
	pts, ns, err = telemetry.ParseNvidiaSMILine(strings.TrimSpace(testdata(t, "nvidia-smi-spark.csv")))
	if err != nil || strings.Join(ns, ",") != "memory.used,memory.total" || value(t, pts, "GPU0", telemetry.PowerW) != 38.12 {
		t.Fatalf("spark line: %v %v %v", pts, ns, err)
	}
	for _, line := range strings.Split(testdata(t, "garbage.txt"), "\n") {
		if _, _, err := telemetry.ParseNvidiaSMILine(line); err == nil {
			t.Fatalf("garbage %q parsed", line)
		}
	}
	if _, _, err := telemetry.ParseNvidiaSMILine("0, x, 1, 1, 1, 1, 1, 1, 0x0, 1"); err == nil || !strings.Contains(err.Error(), "power.draw") {
		t.Fatalf("a bad number: %v", err)
	}
}

// fakeStream replays lines sent on its channel.
type fakeStream struct {
	ch     chan string
	closed bool
}

func (f *fakeStream) Lines() <-chan string { return f.ch }
func (f *fakeStream) Close() error {
	if !f.closed {
		f.closed = true
		close(f.ch)
	}
	return nil
}

func waitRead(t *testing.T, n *telemetry.NvidiaSMI, ok func([]telemetry.Point, error) bool) ([]telemetry.Point, error) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		pts, err := n.Read(context.Background())
		if ok(pts, err) {
			return pts, err
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the stream's lines never arrived")
	return nil, nil
}

// nvidia-smi -lms: the latest line per GPU; garbage is an unreadable sample; a GPU that stops
// printing drops out; a stream silent beyond Stale is hung, and the source gone.
func TestNvidiaSMIStream(t *testing.T) {
	clk := telemetrytest.NewClock()
	fs := &fakeStream{ch: make(chan string, 8)}
	n := telemetry.NewNvidiaSMI(fs, 2*time.Second, clk.Now)
	for _, l := range strings.Split(strings.TrimSpace(testdata(t, "nvidia-smi-query.csv")), "\n") {
		fs.ch <- l
	}
	pts, _ := waitRead(t, n, func(p []telemetry.Point, _ error) bool { return len(p) == 20 })
	if value(t, pts, "GPU0", telemetry.PowerW) != 287.45 {
		t.Fatalf("%v", pts)
	}
	fs.ch <- "\x00garbage"
	waitRead(t, n, func(_ []telemetry.Point, err error) bool {
		return err != nil && strings.Contains(err.Error(), "fields")
	})
	clk.Advance(1500 * time.Millisecond)
	fs.ch <- "0, 100.00, 2520, 10501, 3105, 64, 18231, 24564, 0x0000000000000000, 98" // GPU1 has gone quiet
	clk.Advance(1000 * time.Millisecond)
	pts, err := waitRead(t, n, func(p []telemetry.Point, _ error) bool { return len(p) == 10 })
	if err != nil || value(t, pts, "GPU0", telemetry.PowerW) != 100 {
		t.Fatalf("after GPU1 went quiet: %v %v", pts, err)
	}
	clk.Advance(3 * time.Second)
	if _, err := n.Read(context.Background()); !errors.Is(err, telemetry.ErrGone) || !strings.Contains(err.Error(), "hung") {
		t.Fatalf("a silent stream: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Read(context.Background()); !errors.Is(err, telemetry.ErrGone) {
		t.Fatalf("after the command ended: %v", err)
	}
}

func TestParseAMDSMIRecorded(t *testing.T) {
	pts, err := telemetry.ParseAMDSMI([]byte(testdata(t, "amd-smi-metric.json")))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dev, metric string
		want        float64
	}{{"GPU0", telemetry.PowerW, 289}, {"GPU0", telemetry.UtilPct, 97}, {"GPU0", telemetry.EnergyJ, 1234567.891},
		{"GPU0/hotspot", telemetry.TempC, 78}, {"GPU0", telemetry.ClockSMMHz, 2385}, {"GPU0", telemetry.ClockMaxMHz, 2500},
		{"GPU0", telemetry.ClockMemMHz, 1249}, {"GPU0", telemetry.MemUsedBytes, 17012 << 20}} {
		if got := value(t, pts, c.dev, c.metric); got != c.want {
			t.Errorf("%s %s = %v, want %v", c.dev, c.metric, got, c.want)
		}
	}
	// The older string form ("41 W") reads the same.
	old := `[{"gpu": 1, "power": {"socket_power": "41 W"}, "energy": {"total_energy_consumption": "12.5 J"}, "mem_usage": {"used_vram": "N/A"}}]`
	pts, err = telemetry.ParseAMDSMI([]byte(old))
	if err != nil || value(t, pts, "GPU1", telemetry.PowerW) != 41 || len(pts) != 2 {
		t.Fatalf("string form: %v %v", pts, err)
	}
	for _, bad := range []string{testdata(t, "garbage.txt"), "[]", `[{"power": {}}]`} {
		if _, err := telemetry.ParseAMDSMI([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestParseROCmSMIRecorded(t *testing.T) {
	pts, err := telemetry.ParseROCmSMI([]byte(testdata(t, "rocm-smi.json")))
	if err != nil {
		t.Fatal(err)
	}
	if value(t, pts, "GPU0", telemetry.PowerW) != 212 || value(t, pts, "GPU0/junction", telemetry.TempC) != 74 ||
		value(t, pts, "GPU0", telemetry.ClockSMMHz) != 2304 || value(t, pts, "GPU0", telemetry.MemUsedBytes) != 9126805504 ||
		value(t, pts, "GPU0", telemetry.EnergyJ) != 998877.665544 {
		t.Fatalf("%v", pts)
	}
	if _, err := telemetry.ParseROCmSMI([]byte(testdata(t, "garbage.txt"))); err == nil {
		t.Fatal("garbage parsed")
	}
}

// A one-shot command: its energy counts from the first reading; garbage output is an
// unreadable sample (the next read tries again); a command past its bound is gone.
func TestCommandSource(t *testing.T) {
	outputs := []string{testdata(t, "amd-smi-metric.json"), testdata(t, "garbage.txt"),
		strings.Replace(testdata(t, "amd-smi-metric.json"), "1234567.891", "1234600.391", 1)}
	i := 0
	exec := func(_ context.Context, argv []string) ([]byte, error) {
		if strings.Join(argv, " ") != "/opt/rocm/bin/amd-smi metric --json" {
			return nil, fmt.Errorf("argv %q", argv)
		}
		if i == len(outputs) {
			return nil, fmt.Errorf("amd-smi gave no answer within 5s: %w", telemetry.ErrTimeout)
		}
		i++
		return []byte(outputs[i-1]), nil
	}
	c := telemetry.NewAMDSMI("/opt/rocm/bin/amd-smi", exec)
	if value(t, read(t, c), "GPU0", telemetry.EnergyJ) != 0 {
		t.Fatal("the first energy reading is not the zero")
	}
	if _, err := c.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "unreadable output") || errors.Is(err, telemetry.ErrGone) {
		t.Fatalf("garbage: %v", err)
	}
	if got := value(t, read(t, c), "GPU0", telemetry.EnergyJ); got < 32.4999 || got > 32.5001 {
		t.Fatalf("energy since the first reading: %v J, want 32.5", got)
	}
	if _, err := c.Read(context.Background()); !errors.Is(err, telemetry.ErrGone) {
		t.Fatalf("a hung command: %v", err)
	}
}

// amd-smi's throttle state reaches the thermal gate: power.throttle_status THROTTLED (the SMU cut
// the clocks, the reason unnamed) is a hardware slowdown; where amd-smi prints the throttle
// section, its thermal violations decide and PPT (the power limit) is the power cap, not heat.
func TestParseAMDSMIThrottle(t *testing.T) {
	pts, err := telemetry.ParseAMDSMI([]byte(testdata(t, "amd-smi-metric.json")))
	if err != nil || value(t, pts, "GPU0", telemetry.ThrottleHot) != 0 {
		t.Fatalf("UNTHROTTLED: %v %v", pts, err)
	}
	for _, p := range pts {
		if p.Metric == telemetry.Throttle {
			t.Fatalf("no power-cap state printed, none recorded: %v", p)
		}
	}
	pts, err = telemetry.ParseAMDSMI([]byte(testdata(t, "amd-smi-metric-throttled.json")))
	if err != nil || value(t, pts, "GPU0", telemetry.ThrottleHot) != 1 || value(t, pts, "GPU0", telemetry.PowerW) != 262 ||
		value(t, pts, "GPU0/hotspot", telemetry.TempC) != 110 {
		t.Fatalf("THROTTLED (gpu_data): %v %v", pts, err)
	}
	pts, err = telemetry.ParseAMDSMI([]byte(testdata(t, "amd-smi-metric-violation.json")))
	if err != nil {
		t.Fatal(err)
	}
	if value(t, pts, "GPU0", telemetry.ThrottleHot) != 0 || value(t, pts, "GPU0", telemetry.Throttle) != telemetry.ReasonSwPowerCap {
		t.Fatalf("GPU0 power-limited, not hot: %v", pts)
	}
	if value(t, pts, "GPU1", telemetry.ThrottleHot) != 1 || value(t, pts, "GPU1", telemetry.Throttle) != 0 {
		t.Fatalf("GPU1 socket-thermal: %v", pts)
	}
}

func TestParseAMDSMIList(t *testing.T) {
	m, err := telemetry.ParseAMDSMIList([]byte(testdata(t, "amd-smi-list.json")))
	if err != nil || len(m) != 1 || m["GPU0"] != "0000:03:00.0" {
		t.Fatalf("%v %v", m, err)
	}
	m, err = telemetry.ParseAMDSMIList([]byte(`{"gpu_data": [{"gpu": 1, "bdf": "00000000:0B:00.0"}, {"gpu": 2, "bdf": "N/A"}]}`))
	if err != nil || len(m) != 1 || m["GPU1"] != "0000:0b:00.0" {
		t.Fatalf("gpu_data, eight-digit domain, N/A: %v %v", m, err)
	}
	if _, err := telemetry.ParseAMDSMIList([]byte(testdata(t, "garbage.txt"))); err == nil {
		t.Fatal("garbage parsed")
	}
}
