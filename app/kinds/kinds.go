// Package kinds names the study kinds, once: the notebook stores them, plans, results and
// bundles carry them, the CLI and the window offer them. Everything else refers to these
// constants (store.StudyThroughput, receipt.KindThroughput and ui.KindCapacity are the same
// values under the names their packages always used).
package kinds

const (
	Throughput  = "throughput"  // llama-bench over depths and configurations (app/study)
	Capacity    = "capacity"    // llama-server slots x client concurrency under SLO gates (app/capacity)
	Concurrency = "concurrency" // the clients = slots diagonal of a capacity study (app/capacity)
	Quant       = "quant"       // a quantization ladder: which quant of a model, by a pre-registered rule (app/quant)
)

// All lists the kinds in the order the window offers them.
var All = []string{Throughput, Capacity, Concurrency, Quant}

// Server says whether a kind's studies run llama-server (capacity and concurrency).
func Server(kind string) bool { return kind == Capacity || kind == Concurrency }
