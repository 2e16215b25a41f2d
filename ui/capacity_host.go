package ui

import (
	"context"
	"fmt"

	"fyne.io/fyne/v2/widget"

	"sparkbench/app/capacity"
)

// Running a capacity study's llama-servers on a bench host from the window, as `sparkbench
// capacity run ID --on HOST` does: the panel's "Run on" picker offers this machine and the
// hosts the service knows (docs/fleet.md, "Capacity studies on a host").

// ThisMachine is the Run on picker's choice for a local run.
const ThisMachine = "this machine"

// CapacityHostRunner is a CapacityService that can run a study's servers on a bench host
// (cmd's does, over the same hosts lookup as the CLI).
type CapacityHostRunner interface {
	// CapacityHosts lists the bench hosts a study may run on.
	CapacityHosts(ctx context.Context) ([]string, error)
	// RunCapacityOn is RunCapacity with every llama-server on host.
	RunCapacityOn(ctx context.Context, id int64, host string, onEvent func(capacity.RunEvent), onLine func(string)) (*capacity.RunSummary, error)
}

// newRunOn makes the Run on picker, hidden until loadHosts finds a host.
func (v *CapacityPanel) newRunOn() {
	v.RunOn = widget.NewSelect([]string{ThisMachine}, nil)
	v.RunOn.SetSelected(ThisMachine)
	v.RunOn.Hide() // until loadHosts finds a host to offer
}

// loadHosts offers the service's bench hosts beside this machine (in the background), keeping
// the choice when it is still offered.
func (v *CapacityPanel) loadHosts() {
	hr, ok := v.svc.(CapacityHostRunner)
	if !ok {
		return
	}
	go func() {
		hosts, err := hr.CapacityHosts(context.Background())
		onUI(func() {
			opts := append([]string{ThisMachine}, hosts...)
			keep := v.RunOn.Selected
			v.RunOn.Options = opts
			// shown only when there is a host to choose (a hosts list that does not read is
			// the Bench hosts card's to say; runs stay on this machine)
			if err != nil || len(hosts) == 0 {
				v.RunOn.Hide()
			} else {
				v.RunOn.Show()
			}
			found := false
			for _, o := range opts {
				found = found || o == keep
			}
			if !found {
				keep = ThisMachine
			}
			v.RunOn.SetSelected(keep)
			v.RunOn.Refresh()
		})
	}()
}

// runOn runs study id where the picker says: on this machine, or with its servers on a host.
func (v *CapacityPanel) runOn(ctx context.Context, id int64, host string) (*capacity.RunSummary, error) {
	if host == "" || host == ThisMachine {
		return v.svc.RunCapacity(ctx, id, v.onEvent, v.onLine)
	}
	hr, ok := v.svc.(CapacityHostRunner)
	if !ok {
		return nil, fmt.Errorf("this window cannot run on host %s (use `sparkbench capacity run %d --on %s`)", host, id, host)
	}
	return hr.RunCapacityOn(ctx, id, host, v.onEvent, v.onLine)
}
