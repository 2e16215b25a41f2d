package vocab

import "fmt"

// Class is the outcome of a leg: ok, or what went wrong. Only ok legs (and the rows a
// flagged leg produced before its flag) yield results; every other class keeps its rows marked
// as discarded.
type Class string

// The classes. The first nine are the crash classes; failed and flagged are
// sparkbench's own (an unexplained non-zero exit or a start failure, and a leg halted by the
// CV gate).
const (
	ClassOK            Class = "ok"              // exit 0 and every expected row
	ClassLoadFailed    Class = "load_failed"     // the model did not load (missing, not GGUF, truncated …)
	ClassBadArgs       Class = "bad_args"        // llama-bench (or sparkbench) refused the arguments
	ClassOOM           Class = "oom"             // out of host or device memory
	ClassDeviceLost    Class = "device_lost"     // the GPU went away (Vulkan ErrorDeviceLost …)
	ClassCrashed       Class = "crashed"         // killed by a signal (SIGSEGV, SIGABRT, a foreign SIGKILL …)
	ClassTimeout       Class = "timeout"         // start, idle or overall limit reached; the group was killed
	ClassStoppedByUser Class = "stopped_by_user" // Stop or context cancellation
	ClassIncomplete    Class = "incomplete"      // exit 0 but rows missing
	ClassFailed        Class = "failed"          // could not start, or a non-zero exit with no known message
	ClassFlagged       Class = "flagged"         // a gate (CV) flagged a test and halted the leg
)

// Classes lists every class, in the order above.
var Classes = []Class{ClassOK, ClassLoadFailed, ClassBadArgs, ClassOOM, ClassDeviceLost,
	ClassCrashed, ClassTimeout, ClassStoppedByUser, ClassIncomplete, ClassFailed, ClassFlagged}

// Valid reports whether c is one of Classes.
func (c Class) Valid() bool {
	for _, k := range Classes {
		if c == k {
			return true
		}
	}
	return false
}

// NeedsCanary says whether a leg of this class may have left the machine unhealthy, so the
// queue runs the canary leg before it continues.
func (c Class) NeedsCanary() bool {
	return c == ClassDeviceLost || c == ClassCrashed || c == ClassOOM
}

// StopCause says why sparkbench ended a process itself ("" when it ended on its own).
type StopCause string

// The causes.
const (
	StopNone         StopCause = ""
	StopUser         StopCause = "user"          // Stop or context cancellation
	StopStartTimeout StopCause = "start_timeout" // no byte of output within Limits.Start
	StopIdleTimeout  StopCause = "idle_timeout"  // no byte of output for Limits.Idle
	StopTimeout      StopCause = "timeout"       // Limits.Total reached
	StopGate         StopCause = "gate"          // a gate halted the leg
)

// RowStatus says whether a row counts as a result.
type RowStatus string

// Row statuses.
const (
	RowResult    RowStatus = "result"    // the leg ended ok (or the row came before a gate's flag)
	RowFlagged   RowStatus = "flagged"   // a gate flagged this row; not a result
	RowDiscarded RowStatus = "discarded" // the leg failed; kept for the record, never a result
)

// Machine is the host as /proc and uname describe it.
type Machine struct {
	CPUModel    string `json:"cpu_model"`
	LogicalCPUs int    `json:"logical_cpus"`
	Cores       int    `json:"cores"` // physical cores, when /proc/cpuinfo says
	MemBytes    int64  `json:"mem_bytes"`
	OS          string `json:"os"`
	Kernel      string `json:"kernel"` // uname -r
	KernelBuild string `json:"kernel_build,omitempty"`
	Arch        string `json:"arch"`
	Hostname    string `json:"hostname"`
}

// String is a one-line description: "Intel(R) Xeon(R), 2 CPUs, 23.5 GiB, Linux 6.1 x86_64".
func (m Machine) String() string {
	s := m.CPUModel
	if s == "" {
		s = "unknown CPU"
	}
	s += fmt.Sprintf(", %d CPUs", m.LogicalCPUs)
	if m.MemBytes > 0 {
		s += fmt.Sprintf(", %.1f GiB", float64(m.MemBytes)/(1<<30))
	}
	if m.Kernel != "" {
		s += ", Linux " + m.Kernel
	}
	return s
}
