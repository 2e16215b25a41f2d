package runner

import "sparkbench/runner/vocab"

// The vocabulary of a run lives in runner/vocab (no process code there); these are its names
// under runner, the same types and constants.
type (
	EventType   = vocab.EventType
	Event       = vocab.Event
	Line        = vocab.Line
	Sample      = vocab.Sample
	Progress    = vocab.Progress
	Malformed   = vocab.Malformed
	Flagged     = vocab.Flagged
	Exit        = vocab.Exit
	LegStatus   = vocab.LegStatus
	Canary      = vocab.Canary
	QueueStatus = vocab.QueueStatus
	// BatchedSample is one llama-batched-bench row of a batched leg.
	BatchedSample = vocab.BatchedSample
	Class         = vocab.Class
	StopCause     = vocab.StopCause
	RowStatus     = vocab.RowStatus
	Machine       = vocab.Machine
	// Launch and Affinity: a leg run under a launch wrapper (LegSpec.Wrapper).
	Launch   = vocab.Launch
	Affinity = vocab.Affinity
)

const (
	EventLine          = vocab.EventLine
	EventSample        = vocab.EventSample
	EventProgress      = vocab.EventProgress
	EventMalformed     = vocab.EventMalformed
	EventFlagged       = vocab.EventFlagged
	EventExit          = vocab.EventExit
	EventBatched       = vocab.EventBatched
	EventLegStarted    = vocab.EventLegStarted
	EventLegFinished   = vocab.EventLegFinished
	EventCanary        = vocab.EventCanary
	EventQueueProgress = vocab.EventQueueProgress
	EventQueueHalted   = vocab.EventQueueHalted
	EventQueueDone     = vocab.EventQueueDone
	ClassOK            = vocab.ClassOK
	ClassLoadFailed    = vocab.ClassLoadFailed
	ClassBadArgs       = vocab.ClassBadArgs
	ClassOOM           = vocab.ClassOOM
	ClassDeviceLost    = vocab.ClassDeviceLost
	ClassCrashed       = vocab.ClassCrashed
	ClassTimeout       = vocab.ClassTimeout
	ClassStoppedByUser = vocab.ClassStoppedByUser
	ClassIncomplete    = vocab.ClassIncomplete
	ClassFailed        = vocab.ClassFailed
	ClassFlagged       = vocab.ClassFlagged
	StopNone           = vocab.StopNone
	StopUser           = vocab.StopUser
	StopStartTimeout   = vocab.StopStartTimeout
	StopIdleTimeout    = vocab.StopIdleTimeout
	StopTimeout        = vocab.StopTimeout
	StopGate           = vocab.StopGate
	RowResult          = vocab.RowResult
	RowFlagged         = vocab.RowFlagged
	RowDiscarded       = vocab.RowDiscarded
)

// Classes lists every class (vocab.Classes).
var Classes = vocab.Classes
