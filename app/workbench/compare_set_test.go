package workbench

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sparkbench/app/study"
)

// Fewer than two studies, or one named twice, is refused as bad input before the notebook is
// read.
func TestCompareStudiesRefusesBadChoices(t *testing.T) {
	for _, c := range []struct {
		ids  []int64
		want string
	}{
		{[]int64{4}, "a comparison needs two or more studies (the first is the baseline); 1 chosen"},
		{[]int64{4, 5, 4}, "study 4 is chosen twice: a study compared with itself is the A/A control (sparkbench study compare --aa 4)"},
	} {
		_, err := CompareStudies(context.Background(), nil, CompareRequest{IDs: c.ids})
		var re *RequestError
		if !errors.As(err, &re) || err.Error() != c.want {
			t.Errorf("%v: %v", c.ids, err)
		}
	}
}

// A shared prediction is one every study registered under the same ID about the same figure;
// its line names each study's verdict and whether they agree.
func TestSharedVerdicts(t *testing.T) {
	rep := func(id int64, scores ...study.ReportScore) *study.Report {
		return &study.Report{Study: study.ReportStudy{ID: id}, Scoreboard: scores}
	}
	p1 := study.ReportScore{Prediction: "P1", About: "tg @ d0 of m", Word: "HIT"}
	p2 := study.ReportScore{Prediction: "P2", About: "slope of m", Word: "ANSWERED -0.3"}
	p1miss := study.ReportScore{Prediction: "P1", About: "tg @ d0 of m", Word: "MISS -4.0%"}
	p2other := study.ReportScore{Prediction: "P2", About: "slope of other", Word: "ANSWERED -0.3"}
	got := sharedVerdicts([]*study.Report{rep(1, p1, p2), rep(2, p2other, p1miss), rep(3, p1, p2)})
	if len(got) != 1 {
		t.Fatalf("shared %+v", got)
	}
	studies := []study.ComparedStudy{{ID: 1}, {ID: 2}, {ID: 3}}
	if line := got[0].Line(studies); line != "P1 (tg @ d0 of m): study 1 HIT · study 2 MISS -4.0% · study 3 HIT — they differ" {
		t.Errorf("line %q", line)
	}
	if got := sharedVerdicts([]*study.Report{rep(1, p1), rep(3, p1)}); len(got) != 1 || !got[0].Agree || !strings.HasSuffix(got[0].Line(studies), "they agree") {
		t.Errorf("agreeing: %+v", got)
	}
}
