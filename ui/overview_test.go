package ui

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"

	"sparkbench/app"
)

// fakeOverview refuses a line under 1 with its own words and records the options it got.
type fakeOverview struct {
	mu  sync.Mutex
	got []OverviewOptions
}

func (f *fakeOverview) Defaults() OverviewOptions {
	return OverviewOptions{Line: 70, Test: "tg", Deep: 8192}
}

func (f *fakeOverview) Open(_ context.Context, o OverviewOptions) (*OverviewResult, error) {
	f.mu.Lock()
	f.got = append(f.got, o)
	f.mu.Unlock()
	if !(o.Line >= 1) {
		return nil, errors.New("fake refusal: line is not a positive number")
	}
	return &OverviewResult{Heading: "badge table",
		Badges: OverviewTable{Header: []string{"model", "d0 t/s"}, Rows: [][]string{{"tiny", "123.45"}}, Sources: []string{"tiny d0 from study 1 tiny/d0 leg 1 seq 1"}},
		Ladder: OverviewTable{Header: []string{"architecture", "median"}, Rows: [][]string{{"llama", "0.5000"}}, Sources: []string{"tiny 0.5000"}}}, nil
}

func waitOverview(t *testing.T, v *OverviewView) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var done bool
		Locked(func() { done = !v.running })
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the overview never finished")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The section is primed at start with the defaults, lists both tables and a row's sources,
// and shows the service's refusal of a bad line (text that is not a number reaches it as NaN).
func TestOverviewSection(t *testing.T) {
	a := newTestApp(t)
	svc := &fakeOverview{}
	var wb *Workbench
	Locked(func() {
		wb = NewWorkbench(a, Deps{Doctor: func(context.Context, string) app.DoctorReport { return app.DoctorReport{} }, Overview: svc})
	})
	v := wb.Overview
	waitOverview(t, v)
	Locked(func() {
		if got := v.BadgeLines(); len(got) != 2 || got[0] != "model  d0 t/s" || got[1] != "tiny   123.45" {
			t.Errorf("badge lines %q", got)
		}
		if got := v.LadderLines(); len(got) != 2 || !strings.HasPrefix(got[1], "llama") {
			t.Errorf("ladder lines %q", got)
		}
		v.Badges.Select(1)
		if !strings.Contains(v.Detail.Text, "from: tiny d0 from study 1 tiny/d0 leg 1 seq 1") {
			t.Errorf("detail %q", v.Detail.Text)
		}
		v.Line.SetText("fast")
		test.Tap(v.ShowBt)
	})
	waitOverview(t, v)
	Locked(func() {
		if v.Status.Text != "no overview: fake refusal: line is not a positive number" || v.Result != nil || len(v.BadgeLines()) != 0 {
			t.Errorf("status %q, result %v", v.Status.Text, v.Result)
		}
	})
	svc.mu.Lock()
	defer svc.mu.Unlock()
	if len(svc.got) != 2 || svc.got[0] != (OverviewOptions{Line: 70, Test: "tg", Deep: 8192}) || !math.IsNaN(svc.got[1].Line) {
		t.Errorf("options asked %+v (the second line must be NaN)", svc.got)
	}
}

// Without a notebook the section says so and offers nothing to run.
func TestOverviewWithoutNotebook(t *testing.T) {
	newTestApp(t)
	Locked(func() {
		v := newOverviewView(nil)
		v.Load()
		if !strings.Contains(v.Status.Text, "notebook is not open") || !v.ShowBt.Disabled() {
			t.Errorf("status %q", v.Status.Text)
		}
	})
}
