package server

import (
	"time"

	"sparkbench/runner"
)

// affinityWait bounds how long an attempt waits for the launch wrapper's watcher to find
// llama-server's process once /health answered (it is running by then: the watcher looks at
// most every 50 ms) or once the attempt ended.
const affinityWait = 2 * time.Second

// toolPid is llama-server's own process: the process started, or with a launch wrapper that
// forked it, the child the watcher found (the process started while it has not).
func (a *attempt) toolPid() int {
	if a.launch != nil {
		if aff, _, done := a.proc.WaitAffinity(affinityWait); done && aff != nil {
			return aff.PID
		}
	}
	return a.proc.Pid()
}

// launched is the attempt's launch record with the affinity read so far (nil without a
// wrapper).
func (a *attempt) launched() *runner.Launch {
	if a.launch == nil {
		return nil
	}
	l := *a.launch
	switch aff, why, done := a.proc.WaitAffinity(affinityWait); {
	case aff != nil:
		l.Affinity = aff
	case done && why != "":
		l.AffinityError = why
	case !done:
		l.AffinityError = "not read: llama-server's process was not seen within " + affinityWait.String()
	}
	return &l
}
