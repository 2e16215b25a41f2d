package runner

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestParseCPUInfo(t *testing.T) {
	info := `processor	: 0
model name	: AMD EPYC 7B13
physical id	: 0
core id		: 0

processor	: 1
model name	: AMD EPYC 7B13
physical id	: 0
core id		: 0

processor	: 2
model name	: AMD EPYC 7B13
physical id	: 0
core id		: 1
`
	model, logical, cores := parseCPUInfo(info, 99)
	if model != "AMD EPYC 7B13" || logical != 3 || cores != 2 {
		t.Fatalf("%q %d %d", model, logical, cores)
	}
	if m, l, c := parseCPUInfo("", 7); m != "" || l != 7 || c != 0 {
		t.Fatalf("empty: %q %d %d", m, l, c)
	}
	if n := parseMemTotal("MemTotal:       16318800 kB\nMemFree: 1 kB\n"); n != 16318800*1024 {
		t.Fatalf("mem %d", n)
	}
}

func TestTempsFromHwmon(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "hwmon0", "name"), "k10temp\n")
	write(filepath.Join(root, "hwmon0", "temp1_input"), "45125\n")
	write(filepath.Join(root, "hwmon0", "temp1_label"), "Tctl\n")
	write(filepath.Join(root, "hwmon1", "name"), "amdgpu\n")
	write(filepath.Join(root, "hwmon1", "temp2_input"), "61000\n")
	write(filepath.Join(root, "hwmon1", "temp3_input"), "garbage\n")
	f := &Fingerprinter{HwmonRoot: root}
	got := f.Temps()
	want := []Temp{{Chip: "k10temp", Sensor: "temp1", Label: "Tctl", Celsius: 45.125}, {Chip: "amdgpu", Sensor: "temp2", Celsius: 61}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("temps %+v", got)
	}
	none := (&Fingerprinter{HwmonRoot: filepath.Join(root, "absent")}).Temps()
	if none == nil || len(none) != 0 {
		t.Fatalf("no hwmon: %#v, want an empty list", none)
	}
}

func TestFingerprintOfFakeBinary(t *testing.T) {
	f := &Fingerprinter{HwmonRoot: t.TempDir()}
	fp := f.Take(context.Background(), fakeLlama(t), nil)
	if fp.VersionLine != "version: 0.7.0 (build 11669, commit Debian)" || fp.BuildNumber != 11669 || fp.Commit != "Debian" {
		t.Errorf("version %+v", fp)
	}
	if len(fp.Binary.SHA256) != 64 || fp.Binary.Size == 0 || len(fp.Errors) != 0 {
		t.Errorf("binary %+v errors %v", fp.Binary, fp.Errors)
	}
	if len(fp.Libraries) != 1 || fp.Libraries[0].Name != "libggml-cpu-fake.so" || len(fp.Libraries[0].SHA256) != 64 {
		t.Errorf("libraries %+v: want the loaded backend beside the tool, hashed", fp.Libraries)
	}
	if runtime.GOOS == "linux" && (fp.Machine.Kernel == "" || fp.Machine.LogicalCPUs == 0 || fp.Machine.MemBytes == 0) {
		t.Errorf("machine %+v", fp.Machine)
	}
	if fp.Devices == nil || fp.TempsBefore == nil {
		t.Errorf("devices %#v temps %#v: want empty lists, not null", fp.Devices, fp.TempsBefore)
	}
	// the build part is cached per binary
	fp2 := f.Take(context.Background(), fakeLlama(t), nil)
	if fp2.Binary != fp.Binary || fp2.VersionLine != fp.VersionLine {
		t.Error("cache changed the fingerprint")
	}
	bad := f.Take(context.Background(), "/nonexistent/llama-bench", nil)
	if len(bad.Errors) == 0 {
		t.Error("no errors for a missing binary")
	}
}

func TestLegCarriesFingerprint(t *testing.T) {
	spec := fakeLeg(t, "")
	spec.NoFingerprint = false
	f := &Fingerprinter{HwmonRoot: t.TempDir()}
	leg := StartLeg(context.Background(), spec, WithFingerprinter(f))
	collect(t, leg.Events(), 30e9)
	res := leg.Result()
	if res.Fingerprint == nil || res.Fingerprint.BuildNumber != 11669 || res.Fingerprint.TempsAfter == nil {
		t.Fatalf("fingerprint %+v", res.Fingerprint)
	}
	assertGone(t, leg.Pid())
}
