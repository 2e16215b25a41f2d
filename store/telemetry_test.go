package store

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sparkbench/runner/telemetry"
)

var telemetrySamples = []telemetry.Sample{
	{Source: "nvml", T: 0, Points: []telemetry.Point{{Device: "GPU0", Metric: telemetry.PowerW, Value: 287.45}, {Device: "GPU0", Metric: telemetry.EnergyJ, Value: 0}}},
	{Source: "rapl", T: 3 * time.Millisecond, Err: "rapl package-0: not a counter"},
	{Source: "nvml", T: 250 * time.Millisecond, Points: []telemetry.Point{{Device: "GPU0", Metric: telemetry.PowerW, Value: 301}, {Device: "GPU0", Metric: telemetry.EnergyJ, Value: 73.6}}},
}

// A notebook at schema 7 with a finished leg migrates to 8: that leg's journal entry and
// digest are unchanged (no telemetry_rows key) and verify; a new leg keeps telemetry samples,
// append-only, only while it runs, read back as written and hashed into its digest.
func TestTelemetrySamplesMigrationAndDigest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notebook.db")
	old := must[*Notebook](t)(OpenWith(path, Options{migrateTo: 7}))
	st := must[Study](t)(old.CreateStudy(ctx, Study{Name: "old", Kind: StudyThroughput, Status: StatusRunning}))
	leg, _, err := old.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: "before", Argv: []string{"llama-bench"}})
	if err != nil {
		t.Fatal(err)
	}
	_, before := must2(t)(old.FinishLeg(ctx, leg.ID, LegOutcome{Class: "ok"}))
	old.Close()

	n := must[*Notebook](t)(OpenWith(path, Options{migrateTo: 8}))
	defer n.Close()
	if stats := must[Stats](t)(n.Stats(ctx)); stats.SchemaVersion != 8 || stats.Tables["telemetry_samples"] != 0 {
		t.Fatalf("schema %d, tables %v", stats.SchemaVersion, stats.Tables)
	}
	leg2, _, err := n.StartLeg(ctx, LegSpec{StudyID: st.ID, Label: "with telemetry", Argv: []string{"llama-bench"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.AddTelemetry(ctx, leg2.ID, telemetrySamples[:1]); err != nil {
		t.Fatal(err)
	}
	if err := n.AddTelemetry(ctx, leg2.ID, telemetrySamples[1:]); err != nil {
		t.Fatal(err)
	}
	_, after := must2(t)(n.FinishLeg(ctx, leg2.ID, LegOutcome{Class: "ok"}))
	if err := n.AddTelemetry(ctx, leg2.ID, telemetrySamples[:1]); err == nil || !strings.Contains(err.Error(), "running leg") {
		t.Fatalf("telemetry added to a finished leg: %v", err)
	}
	got := must[[]telemetry.Sample](t)(n.Telemetry(ctx, leg2.ID))
	if !reflect.DeepEqual(got, telemetrySamples) {
		t.Fatalf("read back\n%+v\nwant\n%+v", got, telemetrySamples)
	}
	if !strings.Contains(string(after.Payload), `"telemetry_rows":3`) {
		t.Fatalf("leg entry %s", after.Payload)
	}
	entries := must[[]JournalEntry](t)(n.Journal(ctx, st.ID, 0, 100))
	for _, e := range entries {
		if e.Seq == before.Seq && (string(e.Payload) != string(before.Payload) || strings.Contains(string(e.Payload), "telemetry")) {
			t.Fatalf("the old leg's entry changed: %s", e.Payload)
		}
	}
	if rep := must[VerifyReport](t)(n.Verify(ctx)); !rep.OK() {
		t.Fatalf("does not verify: %v", rep.Broken)
	}
	if stats := must[Stats](t)(n.Stats(ctx)); stats.Tables["telemetry_samples"] != 3 {
		t.Fatalf("tables %v", stats.Tables)
	}
	if _, err := n.wdb.Exec("UPDATE telemetry_samples SET t_ns = 1 WHERE leg_id = ?", leg2.ID); err == nil {
		t.Fatal("a telemetry sample was changed")
	}
	if _, err := n.wdb.Exec("DELETE FROM telemetry_samples WHERE leg_id = ?", leg2.ID); err == nil {
		t.Fatal("a telemetry sample was deleted")
	}
}

func must2(t *testing.T) func(Leg, JournalEntry, error) (Leg, JournalEntry) {
	return func(l Leg, e JournalEntry, err error) (Leg, JournalEntry) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l, e
	}
}
