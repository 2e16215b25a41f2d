package capacity

import (
	"sparkbench/app/analysis"
	"sparkbench/app/canon"
	"sparkbench/app/energy"
	"sparkbench/app/study"
	"sparkbench/runner/vocab"
)

// SchemaResult identifies version 1 of the assembled study (study.json).
const SchemaResult = "sparkbench.capacity-study/v1"

// Exact gate failure codes (docs/domain.md). The per-pass codes are prefixed with the pass:
// "forward:ttft_ms_p95_above_maximum".
const (
	CodeTTFTAbove           = "ttft_ms_p95_above_maximum"
	CodeE2EAbove            = "e2e_latency_ms_p95_above_maximum"
	CodeCompletionBelow     = "completion_rate_below_minimum"
	CodePassesFailedLoadSLO = "one_or_more_passes_failed_load_slo"
	CodeRateSpreadAbove     = "generation_rate_spread_above_maximum"
	CodeE2ESpreadAbove      = "e2e_p95_spread_above_maximum"
	CodePeakRSSAbove        = "peak_rss_above_maximum"
	CodePeakDeviceAbove     = "peak_device_mib_above_maximum"
	CodeDeviceNotUsed       = "device:not_used"
	CodeOffloadBelow        = "offload:layers_below_requested"
	CodeQualityFailed       = "quality_gate_failed"
	CodeMarkerMissing       = "backend_marker_missing"
	CodeMarkerForbidden     = "backend_marker_forbidden_present"
)

// Tie-break steps, in order; Selection.DecidedBy names the one that chose the point.
const (
	DecidedByRate    = "generation_rate" // the only passing cell within tolerance of the best
	DecidedByE2E     = "e2e_p95"
	DecidedByTTFT    = "ttft_p95"
	DecidedByPeakRSS = "peak_rss"
	DecidedBySlots   = "fewer_slots"
	DecidedByClients = "fewer_clients"
)

// Result is the assembled study: a pure function of the plan and the raw files.
type Result struct {
	Schema     string `json:"schema"`
	Kind       string `json:"kind"` // "capacity" or "concurrency"
	PlanSHA256 string `json:"plan_sha256"`
	Plan       *Plan  `json:"plan"`
	// Definitions name how each metric was measured (printed on receipts).
	Definitions map[string]string `json:"definitions"`
	Inputs      []InputRef        `json:"inputs"`
	Candidates  []CandidateResult `json:"candidates"`
	Verdicts    []study.Verdict   `json:"verdicts"`
	// HarnessFloor is the client's own overhead (serving plans run with one; docs/serving.md).
	HarnessFloor *HarnessFloor `json:"harness_floor,omitempty"`
	// NetworkTax pairs each RPC candidate with each local candidate of its model (plans with
	// rpc_servers only; docs/capacity.md "RPC topologies").
	NetworkTax []NetworkTax `json:"network_tax,omitempty"`
}

// InputRef fingerprints one raw input file. Paths are left out on purpose: the same bundle
// assembled from another folder yields the same bytes.
type InputRef struct {
	Role   string `json:"role"` // requests, rss, server_log, quality, batched
	Key    string `json:"key"`  // forward/q8-generic/p4, q8-generic/p4 for quality, q8-generic for batched
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// CandidateResult is one candidate's envelope, selection and derived figures.
type CandidateResult struct {
	ID        string           `json:"id"`
	Label     string           `json:"label"`
	Role      string           `json:"role,omitempty"`
	Arm       string           `json:"arm,omitempty"`
	Lifetimes []LifetimeResult `json:"lifetimes"` // per (pass, P), passes forward then reverse, P ascending
	Cells     []CellResult     `json:"cells"`     // P ascending, then C ascending
	Quality   []QualityResult  `json:"quality"`   // per P; empty without a quality gate
	// Base is the P1/C1 reference of the gain: the smallest slot count and client level.
	Base     PointRef   `json:"base"`
	Selected *Selection `json:"selected"` // nil: no cell passes every gate
	// SelectionNote explains a missing selection.
	SelectionNote string         `json:"selection_note,omitempty"`
	Scaling       *ScalingResult `json:"scaling"`
	ScalingNote   string         `json:"scaling_note,omitempty"`
	// BenchTG is the llama-bench tg figure given for the serving tax (t/s).
	BenchTG *float64 `json:"bench_tg"`
	// ServingTax is 1 - single-stream per-stream rate (smallest P, one client) / BenchTG.
	ServingTax     *float64 `json:"serving_tax"`
	ServingTaxNote string   `json:"serving_tax_note,omitempty"`
	// ServerTax is the cell generation rate at P = C = B / llama-batched-bench's B×TG / T at
	// each B both measured (only with a --batched file for the candidate).
	ServerTax *ServerTaxResult `json:"server_tax,omitempty"`
	// Serving is the open-loop measurement of each server lifetime (serving plans only).
	Serving []ServingResult `json:"serving,omitempty"`
}

// LifetimeResult is what one server lifetime (pass, candidate, P) left besides requests.
type LifetimeResult struct {
	Pass       string  `json:"pass"`
	Slots      int     `json:"slots"`
	Requests   int     `json:"requests"` // records in its request file (warmups included)
	PeakRSSKiB int64   `json:"peak_rss_kib"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	RSSFormat  string  `json:"rss_format"`
	// LoadBlockLine is the 1-based line where the last model-load block of the server log
	// starts (0: none found); LoadBlocks counts the blocks (2 with the default fitting pass).
	LoadBlockLine int           `json:"load_block_line"`
	LoadBlocks    int           `json:"load_blocks"`
	Markers       []MarkerCheck `json:"markers"`
	// Device evidence, read only for plans with a device memory gate (limits.max_device_mib):
	// the layers offloaded and each device's peak memory in the last load block.
	Offloaded *vocab.Offload `json:"offloaded,omitempty"`
	Devices   []DeviceMemory `json:"devices,omitempty"`
	// RPC is the split among the plan's rpc_servers its log gives (RPC candidates only).
	RPC *LifetimeRPC `json:"rpc,omitempty"`
}

// DeviceMemory is a device's peak memory in a server lifetime (vocab.Evidence.PeakDeviceMiB).
type DeviceMemory struct {
	Device  string  `json:"device"`
	PeakMiB float64 `json:"peak_mib"`
}

// CellResult is one (candidate, P, C) across passes. Reported figures are medians over passes.
type CellResult struct {
	Slots          int      `json:"slots"`
	Clients        int      `json:"clients"`
	GenerationRate *float64 `json:"generation_rate"` // tok/s, median over passes
	PerStreamRate  *float64 `json:"per_stream_rate"` // tok/s, median over passes
	TTFTMsP50      *float64 `json:"ttft_ms_p50"`
	TTFTMsP95      *float64 `json:"ttft_ms_p95"` // observed p95, median over passes
	E2EMsP50       *float64 `json:"e2e_ms_p50"`
	E2EMsP95       *float64 `json:"e2e_ms_p95"`
	// CompletionRateWorst is the lowest completion rate over passes.
	CompletionRateWorst float64 `json:"completion_rate_worst"`
	// Spreads are (max - min) / median over passes; nil when they cannot be computed.
	GenerationRateSpread *float64 `json:"generation_rate_spread"`
	E2EP95Spread         *float64 `json:"e2e_p95_spread"`
	PeakRSSMiB           float64  `json:"peak_rss_mib"`
	// PeakDeviceMiB is the worst device peak over the cell's server lifetimes (device memory
	// gate plans only).
	PeakDeviceMiB *float64 `json:"peak_device_mib,omitempty"` // worst pass of the (candidate, P) server
	// JPerGeneratedToken is the median over passes of the cell's Joules per generated token,
	// when its lifetimes were sampled (docs/telemetry.md).
	JPerGeneratedToken *float64      `json:"j_per_generated_token,omitempty"`
	Passes             []PassMetrics `json:"passes"`
	Checks             []GateCheck   `json:"checks"`
	Failures           []string      `json:"failures"` // exact codes, fixed order
	Passed             bool          `json:"passed"`
}

// PassMetrics are one cell's figures in one pass, from its measured requests.
type PassMetrics struct {
	Pass            string  `json:"pass"`
	Attempted       int     `json:"attempted"`
	Completed       int     `json:"completed"`
	CompletionRate  float64 `json:"completion_rate"`
	GeneratedTokens int     `json:"generated_tokens"`
	// WindowMs is last measured completion - first measured send.
	WindowMs       float64  `json:"window_ms"`
	GenerationRate *float64 `json:"generation_rate"` // generated tokens / window, tok/s
	PerStreamRate  *float64 `json:"per_stream_rate"` // mean of 1000 / ITL over completed requests
	TTFTMsP50      *float64 `json:"ttft_ms_p50"`
	TTFTMsP95      *float64 `json:"ttft_ms_p95"`
	E2EMsP50       *float64 `json:"e2e_ms_p50"`
	E2EMsP95       *float64 `json:"e2e_ms_p95"`
	// ServerPerStreamRate is the mean of the server's predicted_n / predicted_ms (tok/s).
	ServerPerStreamRate *float64 `json:"server_per_stream_rate"`
	// OverheadMsP50 is the median of E2E - (prompt_ms + predicted_ms): client/HTTP overhead.
	OverheadMsP50 *float64 `json:"overhead_ms_p50"`
	// Energy is the cell's energy in this pass, when its lifetime was sampled.
	Energy *energy.CellFigures `json:"energy,omitempty"`
}

// GateCheck is one gate of one cell: observed against limit.
type GateCheck struct {
	Gate     string   `json:"gate"`
	Observed *float64 `json:"observed"`
	Limit    *float64 `json:"limit"`
	Passed   bool     `json:"passed"`
	Failure  string   `json:"failure,omitempty"` // the exact code when it fails
	Detail   string   `json:"detail,omitempty"`
}

// QualityResult is the quality guard of one (candidate, P).
type QualityResult struct {
	Slots     int      `json:"slots"`
	Score     int      `json:"score"` // k of Cases
	Cases     int      `json:"cases"`
	Fraction  float64  `json:"fraction"`  // k / N
	Reference string   `json:"reference"` // candidate whose score retention is measured against
	Retention *float64 `json:"retention"` // score / reference's score at the same P
	// Stable: the candidate's per-case outcomes are identical at every slot count.
	Stable bool     `json:"stable"`
	Passed bool     `json:"passed"`
	Why    []string `json:"why"` // below_floor, retention_below_minimum, outcomes_unstable
}

// PointRef names a cell and its reported rate.
type PointRef struct {
	Slots          int      `json:"slots"`
	Clients        int      `json:"clients"`
	GenerationRate *float64 `json:"generation_rate"`
}

// Selection is a candidate's selected operating point.
type Selection struct {
	Slots          int     `json:"slots"`
	Clients        int     `json:"clients"`
	GenerationRate float64 `json:"generation_rate"`
	// Gain is rate / base rate - 1 (0.42 is +42%); nil when the base rate is unknown.
	Gain      *float64 `json:"gain_vs_base"`
	DecidedBy string   `json:"decided_by"`
	// WithinTolerance lists every passing cell within the objective tolerance of the best
	// rate, in tie-break order: the selected point first.
	WithinTolerance []PointRef `json:"within_tolerance"`
}

// ScalingResult is aggregate rate against slots along the diagonal clients = slots.
type ScalingResult struct {
	Points []analysis.Point `json:"points"` // (P, rate at C = P)
	analysis.Scaling
	// TTFTGrowth is observed-p95 TTFT at the largest diagonal P / at the smallest (3.4 = 3.4x).
	TTFTGrowth *float64 `json:"ttft_growth"`
}

// Marshal is the result's canonical JSON (app/canon): the bytes of study.json.
func (r *Result) Marshal() ([]byte, error) {
	b, err := canon.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Definitions printed on every result.
var definitions = map[string]string{
	"ttft":                "first SSE event carrying generated content - request bytes written (client clock)",
	"e2e":                 "final event (stop) - request bytes written (client clock)",
	"itl":                 "(end event - first token) / (tokens - 1); the end event stands in for the last token",
	"per_stream_rate":     "mean over completed measured requests of 1000 / ITL (tok/s)",
	"generation_rate":     "generated tokens of the measured requests / (last measured completion - first measured send) (tok/s); reported value = median over passes",
	"completion_rate":     "measured requests with HTTP 200, no error and tokens == n_predict / measured requests attempted",
	"percentiles":         "linear interpolation between closest ranks (numpy default) over completed measured requests; 'observed p95' because few requests give a coarse p95",
	"spread":              "(max - min) / median over passes",
	"peak_rss":            "VmHWM of the server process (GNU time -v maximum resident set size), worst pass per (candidate, P)",
	"backend_markers":     "regexes matched line by line in the last model-load block of each server log",
	"gain":                "selected rate / rate at the smallest slots and clients (P1/C1) - 1",
	"serving_tax":         "1 - per-stream rate at the smallest slots with one client / llama-bench tg",
	"speedup":             "rate at the largest diagonal P (clients = slots) / rate at the smallest",
	"knee":                "first diagonal P whose gain over the previous P is below knee_threshold",
	"quality_retention":   "candidate's guard score / the reference candidate's score at the same P",
	"quality_stability":   "identical per-case outcomes at every slot count of the candidate",
	"selection":           "maximise generation rate among cells passing every gate; within objective_tolerance of the best: lower E2E p95, lower TTFT p95, lower peak RSS, fewer slots, fewer clients",
	"server_timings_rate": "mean of the server's predicted_n / predicted_ms (tok/s) beside the client clock",
}
