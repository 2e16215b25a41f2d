package live_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sparkbench/runner/telemetry"
	"sparkbench/runner/telemetry/live"
	"sparkbench/runner/telemetry/telemetrytest"
)

func fake(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func status(t *testing.T, set *live.Set, name string) telemetry.Status {
	t.Helper()
	for _, st := range set.Status {
		if st.Source == name {
			return st
		}
	}
	t.Fatalf("no status for %s in %+v", name, set.Status)
	return telemetry.Status{}
}

// This machine has no sensors: every hardware sampler says why it is not available; the host's
// /proc readings are all there is. The real go-nvml is asked (no driver: library not found).
func TestDiscoverThisMachine(t *testing.T) {
	if _, err := os.Stat("/sys/class/hwmon"); err == nil {
		t.Skip("this machine has hwmon sensors; the test describes one without")
	}
	set := live.Discover(context.Background(), live.Config{})
	defer set.Close()
	for _, st := range set.Status {
		t.Logf("%-12s available=%v %s", st.Source, st.Available, st.Reason)
		if st.Source != "host" && (st.Available || st.Reason == "") {
			t.Errorf("%s: %+v", st.Source, st)
		}
	}
	if st := status(t, set, "nvml"); !strings.Contains(st.Reason, "libnvidia-ml.so.1 not found") {
		t.Errorf("nvml: %q", st.Reason)
	}
	if st := status(t, set, "rapl"); !strings.Contains(st.Reason, "/sys/class/powercap is absent") {
		t.Errorf("rapl: %q", st.Reason)
	}
	if len(set.Sources) != 1 || set.Sources[0].Name() != "host" {
		t.Fatalf("sources %d", len(set.Sources))
	}
}

func noNVML() *telemetrytest.NVML {
	return &telemetrytest.NVML{Clock: telemetrytest.NewClock(), InitErr: errors.New("libnvidia-ml.so.1 not found")}
}

// Without NVML, nvidia-smi is found, checked once and then run with -lms in its own process
// group; its lines are read until Close stops it.
func TestDiscoverNvidiaSMIFallback(t *testing.T) {
	root := t.TempDir()
	set := live.Discover(context.Background(), live.Config{Root: root, NVML: noNVML(), NvidiaSMI: fake(t, "fake-nvidia-smi"),
		AMDSMI: "-", ROCmSMI: "-", Interval: 20 * time.Millisecond})
	st := status(t, set, "nvidia-smi")
	if !st.Available || st.Energy != "power" || strings.Join(st.Devices, ",") != "GPU0,GPU1" {
		t.Fatalf("%+v", st)
	}
	var src telemetry.Source
	for _, s := range set.Sources {
		if s.Name() == "nvidia-smi" {
			src = s
		}
	}
	var pts []telemetry.Point
	for i := 0; i < 5000 && len(pts) < 20; i++ {
		pts, _ = src.Read(context.Background())
		time.Sleep(time.Millisecond)
	}
	if len(pts) != 20 {
		t.Fatalf("read %v", pts)
	}
	if err := set.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Read(context.Background()); !errors.Is(err, telemetry.ErrGone) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestDiscoverAMDSMIAndBadTools(t *testing.T) {
	root := t.TempDir()
	set := live.Discover(context.Background(), live.Config{Root: root, NVML: noNVML(), NvidiaSMI: fake(t, "fake-garbage"),
		AMDSMI: fake(t, "fake-amd-smi"), ROCmSMI: "-"})
	defer set.Close()
	if st := status(t, set, "amd-smi"); !st.Available || st.Energy != "counter" {
		t.Fatalf("amd-smi %+v", st)
	}
	if st := status(t, set, "rocm-smi"); st.Available || !strings.Contains(st.Reason, "amd-smi answers") {
		t.Fatalf("rocm-smi %+v", st)
	}
	if st := status(t, set, "nvidia-smi"); st.Available || !strings.Contains(st.Reason, "unreadable output") {
		t.Fatalf("garbage nvidia-smi: %+v", st)
	}
	set2 := live.Discover(context.Background(), live.Config{Root: root, NVML: noNVML(), NvidiaSMI: "-",
		AMDSMI: fake(t, "fake-garbage"), ROCmSMI: filepath.Join(root, "absent")})
	defer set2.Close()
	if st := status(t, set2, "amd-smi"); st.Available || !strings.Contains(st.Reason, "unreadable output") {
		t.Fatalf("garbage amd-smi: %+v", st)
	}
	if st := status(t, set2, "rocm-smi"); st.Available || !strings.Contains(st.Reason, "no such file") {
		t.Fatalf("absent rocm-smi: %+v", st)
	}
}

// A tool that hangs is killed with its whole process group at the bound, and reported as a
// timeout (the sampler then takes it as gone).
func TestExecHangIsBoundedAndKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	_, err := live.Exec(300*time.Millisecond)(context.Background(), []string{fake(t, "fake-hang"), pidFile})
	if !errors.Is(err, telemetry.ErrTimeout) {
		t.Fatalf("err %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ { // the group's last zombies are reaped by init, not by us
		if err := syscall.Kill(-pg, 0); errors.Is(err, syscall.ESRCH) {
			break
		}
		if i == 5000 {
			t.Fatalf("process group %d still has members", pg)
		}
		time.Sleep(time.Millisecond)
	}
	c := telemetry.NewAMDSMI(fake(t, "fake-hang"), live.Exec(200*time.Millisecond))
	if _, err := c.Read(context.Background()); !errors.Is(err, telemetry.ErrGone) {
		t.Fatalf("a hanging amd-smi: %v", err)
	}
}
