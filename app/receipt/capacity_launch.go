package receipt

import "fmt"

// capLaunch writes a capacity receipt's launch wrapper section from the run manifest: each
// llama-server start (attempt) made under the plan's build.launch_wrapper, with its canonical
// command line and the one it was launched as, apart, and the affinity /proc gave of
// llama-server's process. Nothing when no attempt has a launch record, so receipts of plans
// without a wrapper are unchanged.
func capLaunch(w *mdWriter, cb *capacityBundle) {
	if cb.manifest == nil {
		return
	}
	var rows [][]string
	for _, lt := range cb.manifest.Lifetimes {
		for i, at := range lt.Server.Attempts {
			if at.Launch == nil {
				continue
			}
			cpus, mems, proc := affinityCells(at.Launch.Affinity, at.Launch.AffinityError)
			rows = append(rows, []string{code(lt.Key), code(fmt.Sprint(i + 1)), code(shellLine(at.Argv)), code(shellLine(at.Launch.LaunchedAs)), cpus, mems, proc})
		}
	}
	if len(rows) == 0 {
		return
	}
	w.heading(2, "Launch wrapper")
	if wr := cb.plan.Build.LaunchWrapper; len(wr) > 0 {
		w.line("The plan starts every llama-server under the launch wrapper %s (%s).", code(shellLine(wr)), code("build.launch_wrapper"))
	} else {
		w.line("These llama-server starts were made under a launch wrapper.")
	}
	w.line("Each start's canonical command is llama-server's own command line, unchanged: the one %s records as the attempt's %s. It was launched as the wrapper, its program resolved on %s, followed by that command line, argv only (no shell). The affinity is what %s said of llama-server's own process while it ran (the same process when the wrapper exec'd it, else the wrapper's child in the server's process group).",
		code(cb.ix.Capacity.Manifest), code("argv"), code("PATH"), code("/proc/PID/status"))
	w.blank()
	w.table([]string{"Server lifetime", "Start", "Canonical command", "Launched as", "CPUs allowed", "Memory nodes", "llama-server process"}, "lrlllll", rows)
}
