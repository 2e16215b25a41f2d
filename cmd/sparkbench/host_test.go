package main

import (
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/runner"
	"sparkbench/runner/llamatest"
	"sparkbench/runner/remote/sshdtest"
)

// exampleLab is docs/examples/hosts.json against two loopback sshd hosts with the tiny models.
func exampleLab(t *testing.T) *sshdtest.Lab {
	t.Helper()
	loc := llamatest.Binaries(t)
	return sshdtest.StartLab(t, filepath.Join(llamatest.RepoRoot(), "docs", "examples", "hosts.json"), loc.Dir,
		llamatest.Model(t, "tiny-llama-f16.gguf"), llamatest.Model(t, "tiny-llama-f32.gguf"))
}

func TestDoctorHostFingerprintsLikeTheLocalDoctor(t *testing.T) {
	lab := exampleLab(t)
	code, out, errOut := runCLI("doctor", "--host", "host-a", "--hosts", lab.HostsFile)
	if code != 0 {
		t.Fatalf("doctor --host: exit %d\n%s%s", code, out, errOut)
	}
	local := (&runner.Fingerprinter{}).Take(t.Context(), llamatest.Binaries(t).Bench, nil)
	for _, want := range []string{"host host-a (ssh lab-a)", "llama.cpp:  " + local.VersionLine, "sha256 " + local.Binary.SHA256,
		"machine:    " + local.Machine.String(), "clock:      host − desktop"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor --host output lacks %q:\n%s", want, out)
		}
	}
	for _, l := range local.Libraries {
		if !strings.Contains(out, "library:    "+l.Name+"  sha256 "+l.SHA256) {
			t.Errorf("doctor --host lacks the library %s the local fingerprint hashes", l.Name)
		}
	}
	code, out, _ = runCLI("host", "check", "host-b", "--hosts", lab.HostsFile, "--json")
	if code != 0 || !strings.Contains(out, `"host": "host-b"`) || !strings.Contains(out, local.Binary.SHA256) {
		t.Fatalf("host check --json: exit %d\n%s", code, out)
	}
}

func TestDoctorHostRefusesAnUnknownHost(t *testing.T) {
	lab := exampleLab(t)
	code, _, errOut := runCLI("doctor", "--host", "host-z", "--hosts", lab.HostsFile)
	if code != 2 || !strings.Contains(errOut, `unknown host "host-z": the hosts list has host-a, host-b`) {
		t.Fatalf("doctor --host host-z: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI("doctor", "--host", "host-a", "--hosts", filepath.Join(t.TempDir(), "none.json"))
	if code != 2 || !strings.Contains(errOut, "no hosts file at") {
		t.Fatalf("a missing hosts file: exit %d, %q", code, errOut)
	}
}
