package capacity

import (
	"slices"
	"strconv"

	"sparkbench/app/study"
)

// Lifetime is one llama-server lifetime of the study, with the client levels it measures.
type Lifetime struct {
	Key   LifetimeKey `json:"key"`
	Model string      `json:"model"` // resolved model path
	// Args are llama-server's arguments without --host and --port (the runner picks a free
	// local port): -m MODEL --parallel P --ctx-size ctx_per_slot x P, then the candidate's flags.
	Args    []string `json:"args"`
	Clients []int    `json:"clients"` // client levels in visit order
}

// Schedule lists the server lifetimes of a validated plan in run order: passes in plan order;
// the forward pass visits candidates, slots and clients in plan order, the reverse pass visits
// all three in reverse order. planDir resolves relative model paths.
func Schedule(p *Plan, planDir string) []Lifetime {
	var out []Lifetime
	for _, pass := range p.Passes {
		cands := slices.Clone(p.Candidates)
		slots := slices.Clone(p.Slots)
		if pass == PassReverse {
			slices.Reverse(cands)
			slices.Reverse(slots)
		}
		for _, c := range cands {
			model := study.ResolvePath(planDir, c.Model.Path)
			for _, s := range slots {
				clients := slices.Clone(p.ClientLevels(s))
				if pass == PassReverse {
					slices.Reverse(clients)
				}
				args := []string{"-m", model, "--parallel", strconv.Itoa(s), "--ctx-size", strconv.Itoa(p.CtxPerSlot * s)}
				args = append(args, p.RPCArgs(c)...) // before the flags: a -dev RPCn there needs the servers registered
				args = append(args, c.ServerFlags...)
				out = append(out, Lifetime{Key: LifetimeKey{pass, c.ID, s}, Model: model, Args: args, Clients: clients})
			}
		}
	}
	return out
}
