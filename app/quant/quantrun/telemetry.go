package quantrun

import (
	"context"
	"strings"

	"sparkbench/app/energy"
	"sparkbench/app/quant"
	"sparkbench/app/study"
	"sparkbench/runner/benchfmt"
)

// A ladder plan with a telemetry block samples each candidate's llama-bench legs
// (the hook Options.Telemetry gives, an energyrun.Hook): the samples are recorded with the leg in the
// notebook, the machine-state gates flag a leg as the CV gate does (it runs again; one still
// flagged gives no bench cells), and each row's Joules per token goes into its bench cell.

// benchEnergy is one sampled bench leg: the gates that fired and each row's figures by its
// 0-based sequence number.
type benchEnergy struct {
	breaches []energy.Breach
	rows     map[int]energy.RowFigures
	leg      *quant.LegEnergy // nil: not sampled
}

// why is the fired gates in words, for notes ("" when none fired).
func (b benchEnergy) why() string {
	var out []string
	for _, x := range b.breaches {
		out = append(out, x.Code+" ("+x.Reason+")")
	}
	if len(out) == 0 {
		return ""
	}
	return "; machine-state gate: " + strings.Join(out, "; ")
}

func (e *engine) beginTelemetry(ctx context.Context, legID int64) energy.LegRun {
	if e.tel == nil {
		return nil
	}
	return e.tel.Begin(ctx, legID)
}

// endTelemetry ends a leg's sampling (its samples recorded in the notebook) and computes its
// rows' energy from what was recorded.
func (e *engine) endTelemetry(ctx context.Context, tel energy.LegRun, legID int64, rows []benchfmt.Result) (benchEnergy, error) {
	if tel == nil {
		return benchEnergy{}, nil
	}
	breaches, err := tel.End(context.WithoutCancel(ctx))
	if err != nil {
		return benchEnergy{}, err
	}
	samples, err := e.nb.Telemetry(context.WithoutCancel(ctx), legID)
	if err != nil {
		return benchEnergy{}, err
	}
	out := benchEnergy{breaches: breaches, rows: map[int]energy.RowFigures{}}
	figs, ok := study.LegEnergy(samples, rows)
	if ok {
		for _, r := range figs.Rows {
			out.rows[r.Seq] = r
		}
	}
	out.leg = &quant.LegEnergy{HasEnergy: ok, Seconds: figs.Seconds, EnergyJ: figs.EnergyJ, Method: figs.Method, Devices: figs.Devices, Samples: figs.Samples}
	return out, nil
}
