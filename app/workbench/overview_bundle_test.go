package workbench

import (
	"strings"
	"testing"

	"sparkbench/app/overview"
	"sparkbench/app/receipt"
)

// overviewFixture is an overview receipt made as ExportOverview makes it, from two series of
// rows: the badge table is overview.Badges of them, the ladder one constant of both models.
func overviewFixture(t *testing.T) *OverviewReceipt {
	t.Helper()
	opts := overview.Options{Line: 70, Test: "tg", Deep: 256}
	series := func(id int64, model, sha string, d0, deep float64) overview.Series {
		leg := model + "/d"
		return overview.Series{StudyRef: overview.StudyRef{ID: id, Name: "study", Status: "complete"}, Model: model, File: model + ".gguf", SHA256: sha,
			Test: "tg32", Backend: "CPU", Config: "ub512 b2048 fa-off kv-f16/f16 t1 ngl0", BandwidthGBs: 100,
			Points: []overview.Cell{{Study: id, Leg: leg + "0", Row: "leg 1 seq 0", Depth: 0, TS: d0}, {Study: id, Leg: leg + "256", Row: "leg 2 seq 0", Depth: 256, TS: deep}}}
	}
	all := []overview.Series{series(1, "a", strings.Repeat("a", 64), 90, 75), series(2, "b", strings.Repeat("b", 64), 80, 60)}
	member := func(sr overview.Series, bytes float64) overview.Member {
		ceil := sr.BandwidthGBs * 1e9 / bytes
		return overview.Member{Model: sr.Model, File: sr.File, SHA256: sr.SHA256, Test: sr.Test, Config: sr.Config, Study: sr.ID, D0: sr.Points[0],
			BandwidthGBs: sr.BandwidthGBs, ActiveBytes: bytes, Ceiling: ceil, Efficiency: sr.Points[0].TS / ceil}
	}
	ma, mb := member(all[0], 1e9), member(all[1], 1e9)
	c := overview.Constant{Architecture: "llama", Quant: "ALL_F32", Backend: "CPU", N: 2, Models: 2, Studies: 2, Members: []overview.Member{mb, ma},
		Mean: (ma.Efficiency + mb.Efficiency) / 2, Median: (mb.Efficiency + ma.Efficiency) / 2, Min: mb.Efficiency, Max: ma.Efficiency}
	ov := &overview.Overview{Options: opts, Studies: []overview.StudyEntry{{StudyRef: all[0].StudyRef, Series: 1}, {StudyRef: all[1].StudyRef, Series: 1}},
		Badges: overview.Badges(all, opts), Ladder: overview.Ladder{Test: "tg", Convention: overview.Convention, Constants: []overview.Constant{c}, Unresolved: []overview.Unresolved{}}}
	return &OverviewReceipt{Machine: "test machine", Overview: ov, Series: all}
}

func problems(rep *receipt.VerifyReport) string {
	var s []string
	for _, p := range rep.Problems {
		s = append(s, p.String())
	}
	return strings.Join(s, "\n")
}

// An overview receipt carries the rows its tables were computed from; verify re-derives the
// badge table from them and holds the ladder's members to them. A badge row's d0 value (and a
// ladder member's, with its efficiency and the constant's summary) changed, overview.md and
// SHA256SUMS re-made by the program's own functions, fails naming the figure; an old-layout
// receipt (no rows) still verifies and says it was checked for self-consistency only.
func TestForgedOverviewFigureFailsVerify(t *testing.T) {
	files, err := OverviewFiles(overviewFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if rep := VerifyOverview(files); !rep.OK() || rep.SelfConsistencyOnly || !strings.Contains(strings.Join(rep.Checked, "\n"), "the badge table re-derived, and the 2 ladder members held, to the 4 rows of 2 series overview.json carries") {
		t.Fatalf("the made receipt: %s %v", problems(rep), rep.Checked)
	}

	r := overviewFixture(t)
	r.Overview.Badges.Rows[0].D0.TS = 95 // model a's d0: 90 in its row
	forged, err := OverviewFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	rep := VerifyOverview(forged)
	if text := problems(rep); rep.OK() || !strings.Contains(text, "overview.json: badge row a (tg32): badges.rows[0].d0.ts is 95, the rows give 90") ||
		!strings.Contains(text, "overview.md: differs from the one re-made from overview.json (its figures as the rows it carries give them): line ") {
		t.Errorf("a forged badge value:\n%s", text)
	}

	r = overviewFixture(t)
	c := &r.Overview.Ladder.Constants[0]
	m := &c.Members[1] // model a
	m.D0.TS = 99
	m.Efficiency = m.D0.TS / m.Ceiling
	c.Mean, c.Median, c.Max = (c.Members[0].Efficiency+m.Efficiency)/2, (c.Members[0].Efficiency+m.Efficiency)/2, m.Efficiency
	forged, err = OverviewFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	rep = VerifyOverview(forged)
	if text := problems(rep); rep.OK() || !strings.Contains(text, "overview.json: ladder.constants[0].members[1] (a, study 1): d0.ts is 99, the rows give 90") {
		t.Errorf("a forged ladder member:\n%s", text)
	}

	r = overviewFixture(t)
	r.Series = nil
	old, err := OverviewFiles(r)
	if err != nil {
		t.Fatal(err)
	}
	if rep := VerifyOverview(old); !rep.OK() || !rep.SelfConsistencyOnly || !strings.Contains(strings.Join(rep.Limits, "\n"), "an old-layout overview receipt (made before overview receipts carried their rows)") {
		t.Errorf("an old-layout receipt: %s %v %v", problems(rep), rep.Limits, rep.SelfConsistencyOnly)
	}
}
