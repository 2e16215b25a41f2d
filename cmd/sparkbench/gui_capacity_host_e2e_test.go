package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"sparkbench/app"
	"sparkbench/app/capacity"
	"sparkbench/runner/remote"
	"sparkbench/runner/remote/sshdtest"
	"sparkbench/store"
	"sparkbench/ui"
)

// TestWindowRunsACapacityStudyOnAHost: the capacity panel's Run on picker offers this machine
// and the bench hosts ($SPARKBENCH_HOSTS here); run on the loopback host bench-a, the study's
// llama-server runs there (run.json's network path through ssh cap-host, the host's build) and
// the panel shows the complete study; no llama-server is left on the host.
func TestWindowRunsACapacityStudyOnAHost(t *testing.T) {
	hostsFile, bin := capacityHost(t, false)
	capacityTag(t)
	t.Setenv(remote.EnvHosts, hostsFile)
	dir := t.TempDir()
	plan := hostCapacityPlan(t, dir)
	nbPath := filepath.Join(dir, "notebook.db")
	if code, out, errOut := runCapacity("register", plan, "--notebook", nbPath); code != 0 {
		t.Fatalf("register: %d\n%s%s", code, out, errOut)
	}
	nb, err := store.Open(nbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer nb.Close()
	var a fyne.App
	ui.Locked(func() { a = test.NewApp() })
	t.Cleanup(func() { ui.Locked(func() { test.NewApp() }) })
	data := filepath.Join(dir, "data")
	var wb *ui.Workbench
	ui.Locked(func() {
		wb = ui.NewWorkbench(a, ui.Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} },
			Studies: studyService{nb: nb, dataDir: data}, Notebook: notebookService{nb}, Capacity: capacityService{nb: nb, dataDir: data}})
	})
	t.Cleanup(func() { ui.Locked(func() { wb.Window.Close() }) })
	cp := wb.Studies.Cap
	ui.Locked(func() { wb.ShowSection("studies"); cp.Show(1) })
	waitFor(t, "the study and the hosts offered", func() bool {
		return cp.Study() != nil && !cp.RunButton.Disabled() && strings.Join(cp.RunOn.Options, ",") == ui.ThisMachine+",bench-a" && cp.RunOn.Visible()
	})
	ui.Locked(func() {
		cp.RunOn.SetSelected("bench-a")
		test.Tap(cp.RunButton)
	})
	waitFor(t, "the run on the host to finish", func() bool { return strings.HasPrefix(cp.ProgressMsg.Text, "finished: ") })
	waitFor(t, "the complete study", func() bool {
		s := cp.Study()
		return s != nil && s.Report.Study.Status == capacity.StatusComplete && len(cp.Rows()) == 1
	})
	if left := sshdtest.Processes(filepath.Join(bin, remote.ServerName)); len(left) > 0 {
		t.Fatalf("llama-server left on the host: %v", left)
	}
	runs, _ := filepath.Glob(filepath.Join(data, "runs", "*", capacity.RunManifestFile))
	if len(runs) != 1 {
		t.Fatalf("run folders: %v", runs)
	}
	var rep capacity.RunReport
	b, err := os.ReadFile(runs[0])
	if err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Lifetimes) != 1 {
		t.Fatalf("run.json: %v\n%s", err, b)
	}
	if n := rep.Lifetimes[0].Server.Network; n == nil || n.Host != "bench-a" || !strings.Contains(n.Path, "ssh cap-host") || !(n.RTTMinMs > 0) {
		t.Fatalf("network: %+v", n)
	}
	checkHostBuild(t, rep.Build, bin)
}
