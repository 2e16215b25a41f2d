package store

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"sparkbench/app/canon"
	"sparkbench/app/study"
)

func testPlan(t *testing.T) *study.Plan {
	t.Helper()
	p, err := study.Load(filepath.Join("..", "app", "study", "testdata", "valid.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Defaults()
	return p
}

func registerTestPlan(t *testing.T, r StudyRecorder, p *study.Plan) int64 {
	t.Helper()
	sum, canon, err := p.SHA256()
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := r.Register(ctx, study.NewStudy{Name: p.Name, PlanSHA256: sum, PlanJSON: canon, PlanDir: "/plans", PlanFile: "/plans/p.json", Predictions: p.Predictions})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestStudyRecorderRegistersInOneStep(t *testing.T) {
	n, _ := openTemp(t)
	r := StudyRecorder{n}
	p := testPlan(t)
	sum, canon, _ := p.SHA256()
	id := registerTestPlan(t, r, p)
	// The same plan again: that study, nothing written.
	before := journalKinds(t, n, 0)
	got, existing, err := r.Register(ctx, study.NewStudy{Name: p.Name, PlanSHA256: sum, PlanJSON: canon, Predictions: p.Predictions})
	if !existing || err != nil || got != id {
		t.Fatalf("the same plan again = %d %v %v", got, existing, err)
	}
	if after := journalKinds(t, n, 0); after != before {
		t.Fatalf("registering the same plan again journaled %q", strings.TrimPrefix(after, before))
	}
	st, err := r.Study(ctx, id)
	if err != nil || st.Status != StatusRegistered || st.PlanSHA256 != sum || st.PlanDir != "/plans" {
		t.Fatalf("%+v %v", st, err)
	}
	preds, _ := n.Predictions(ctx, id)
	if len(preds) != 4 || preds[1].Key != "P2" || preds[1].Kind != "fork" {
		t.Fatalf("predictions %+v", preds)
	}
	var spec study.Prediction
	if err := json.Unmarshal(preds[1].Spec, &spec); err != nil || len(spec.Arms) != 2 {
		t.Errorf("spec %s: %v", preds[1].Spec, err)
	}
	kinds := journalKinds(t, n, id)
	if want := "study.created plan.registered study.plan_source prediction.registered prediction.registered prediction.registered prediction.registered"; kinds != want {
		t.Errorf("journal %q", kinds)
	}
	// The same name with another plan gets the plan's short hash.
	p.Description = "another"
	id2 := registerTestPlan(t, r, p)
	st2, _ := r.Study(ctx, id2)
	if id2 == id || !strings.HasPrefix(st2.Name, p.Name+" [") {
		t.Errorf("second study %d %q", id2, st2.Name)
	}
	if rep, err := n.Verify(ctx); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep.Broken, err)
	}
}

func journalKinds(t *testing.T, n *Notebook, study int64) string {
	t.Helper()
	es, err := n.Journal(ctx, study, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var k []string
	for _, e := range es {
		k = append(k, e.Kind)
	}
	return strings.Join(k, " ")
}

func TestStudyRecorderRowStatuses(t *testing.T) {
	n, path := openTemp(t)
	r := StudyRecorder{n}
	id := registerTestPlan(t, r, testPlan(t))
	rows := parseRows(t, "bench-depth-jsonl.stdout")
	leg, sink, err := r.StartLeg(ctx, study.LegStart{StudyID: id, Label: "tiny/d0", Kind: "bench", PlanLeg: "tiny/d0", Role: study.RoleLeg, Attempt: 1,
		Argv: []string{"llama-bench"}, Conditions: []string{"quiet"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.AddBench(rows...); err != nil {
		t.Fatal(err)
	}
	status := make([]string, len(rows))
	for i := range status {
		status[i] = "result"
	}
	status[len(status)-1] = "flagged"
	if err := r.FinishLeg(ctx, leg, study.LegEnd{Class: "flagged", RowStatus: status[:1]}); err == nil || !strings.Contains(err.Error(), "statuses") {
		t.Fatalf("a status count that does not match the rows was accepted: %v", err)
	}
	if err := r.FinishLeg(ctx, leg, study.LegEnd{Class: "flagged", Reason: "cv", RowStatus: status, Transcript: []byte("out\r\n")}); err != nil {
		t.Fatal(err)
	}
	legs, err := r.Legs(ctx, id)
	if err != nil || len(legs) != 1 {
		t.Fatal(legs, err)
	}
	l := legs[0]
	if l.PlanLeg != "tiny/d0" || l.Role != study.RoleLeg || l.Attempt != 1 || l.State != LegFinished || l.Class != "flagged" ||
		l.Rows != len(rows) || l.Results != len(rows)-1 || l.Flagged != 1 || l.Unmarked != 0 {
		t.Fatalf("leg %+v", l)
	}
	got, err := r.Rows(ctx, id)
	if err != nil || len(got) != len(rows) || got[0].Status != "result" || got[len(got)-1].Status != "flagged" ||
		got[0].Result.AvgTs != rows[0].AvgTs || got[0].Seq != 0 || got[0].LegID != leg {
		t.Fatalf("rows %+v %v", got, err)
	}
	// A leg that never finishes: its rows have no status.
	leg2, sink2, _ := r.StartLeg(ctx, study.LegStart{StudyID: id, Label: "tiny/d128", PlanLeg: "tiny/d128", Role: study.RoleLeg, Attempt: 1})
	sink2.AddBench(rows[0])
	if err := n.w.flushLeg(ctx, leg2); err != nil {
		t.Fatal(err)
	}
	legs, _ = r.Legs(ctx, id)
	if legs[1].Unmarked != 1 || legs[1].State != LegRunning {
		t.Errorf("running leg %+v", legs[1])
	}
	if !strings.Contains(journalKinds(t, n, id), "leg.rows_marked leg.finished") {
		t.Errorf("journal %q", journalKinds(t, n, id))
	}
	if rep, err := n.Verify(ctx); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep.Broken, err)
	}
	// leg.finished journals the SHA-256 of the rows in their canonical serialization (the
	// bytes of a bundle's rows.jsonl), statuses included.
	var lines []byte
	for _, r := range got {
		js, err := r.Result.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		lines = canon.AppendRowLine(lines, r.Seq, r.Status, js)
	}
	es, err := n.Journal(ctx, id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var fin legFinishedPayload
	for _, e := range es {
		if e.Kind == KindLegFinished {
			if err := json.Unmarshal(e.Payload, &fin); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fin.RowsSHA256 == "" || fin.RowsSHA256 != SHA256Hex(lines) {
		t.Fatalf("rows_sha256 %q, the canonical rows hash to %s", fin.RowsSHA256, SHA256Hex(lines))
	}
	if !bytes.Contains(lines, []byte(`{"seq":0,"status":"result","row":{`)) || !bytes.HasSuffix(lines, []byte("}}\n")) {
		t.Errorf("canonical rows %.200q", lines)
	}
	// Statuses are append-only and only written while the leg runs.
	db := rawDB(t, path)
	for _, q := range []string{
		"UPDATE bench_row_status SET status = 'result' WHERE leg_id = " + itoa(leg),
		"DELETE FROM bench_row_status WHERE leg_id = " + itoa(leg),
		"INSERT INTO bench_row_status (leg_id, seq, status) VALUES (" + itoa(leg) + ", 99, 'result')",
	} {
		if _, err := db.Exec(q); err == nil {
			t.Errorf("%s: allowed", q)
		}
	}
}

func TestStudyRecorderVerdictsAmendmentsFindings(t *testing.T) {
	n, _ := openTemp(t)
	r := StudyRecorder{n}
	id := registerTestPlan(t, r, testPlan(t))
	v := 9000.0
	if err := r.RecordVerdict(ctx, id, study.Verdict{Prediction: "P1", Outcome: study.Hit, Value: &v, Sources: []string{"leg 1 seq 1"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.RecordHumanVerdict(ctx, id, study.HumanVerdict{Prediction: "P1", Outcome: "PASS", Rationale: "as registered"}); err != nil {
		t.Fatal(err)
	}
	if err := r.RecordVerdict(ctx, id, study.Verdict{Prediction: "P9", Outcome: study.Hit}); err == nil {
		t.Error("verdict on an unknown prediction accepted")
	}
	lo := 2000.0
	if err := r.AddAmendment(ctx, id, study.AmendmentRecord{Target: "prediction:P1", Reason: "typo", Change: study.AmendmentChange{Prediction: "P1", Set: study.Change{Lo: &lo}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.AddDeviation(ctx, id, study.DeviationRecord{Description: "P1 changed after tiny/d0 ran", Detail: map[string]any{"kind": "prediction_change"}}); err != nil {
		t.Fatal(err)
	}
	leg, _, _ := r.StartLeg(ctx, study.LegStart{StudyID: id, Label: "tiny/d0", PlanLeg: "tiny/d0", Role: study.RoleLeg, Attempt: 1})
	label, err := r.AddFinding(ctx, id, study.FindingRecord{Text: "fast", LegIDs: []int64{leg}, Predictions: []string{"P1"}})
	if err != nil || label != "F1" {
		t.Fatal(label, err)
	}
	if err := r.Note(ctx, id, study.NoteBandwidth, map[string]any{"gbs": 12.5}); err != nil {
		t.Fatal(err)
	}
	st, err := r.Study(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.Verdicts["P1"].Computed; c == nil || c.Outcome != "HIT" || *c.Observed != 9000 {
		t.Errorf("computed %+v", c)
	}
	if h := st.Verdicts["P1"].Human; h == nil || h.Outcome != "PASS" || h.Rationale != "as registered" {
		t.Errorf("human %+v", h)
	}
	if len(st.Amendments) != 1 || st.Amendments[0].Target != "prediction:P1" || len(st.Deviations) != 1 {
		t.Errorf("amendments %+v deviations %+v", st.Amendments, st.Deviations)
	}
	if len(st.Findings) != 1 || st.Findings[0].Label != "F1" || st.Findings[0].Predictions[0] != "P1" || st.Findings[0].LegIDs[0] != leg {
		t.Errorf("findings %+v", st.Findings)
	}
	var kinds []string
	for _, note := range st.Notes {
		kinds = append(kinds, note.Kind)
	}
	if strings.Join(kinds, " ") != "study.created study.plan_source study.bandwidth" {
		t.Errorf("notes %q", kinds)
	}
	if rep, err := n.Verify(ctx); err != nil || !rep.OK() {
		t.Fatalf("verify: %+v %v", rep.Broken, err)
	}
}
