package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"sort"
	"time"

	"sparkbench/app/canon"
	"sparkbench/app/study"
)

// SchemaThroughputStudy identifies a throughput bundle's study.json.
const SchemaThroughputStudy = "sparkbench.throughput-study/v1"

// payload helpers -------------------------------------------------------------------------

// Throughput study.json -------------------------------------------------------------------

// ThroughputStudy is a throughput bundle's study.json: the report `study show --json` gives
// (legs, results, figures, scoreboard, amendments, deviations, findings) with the plan, the
// metric definitions, provenance, the journal excerpt's summary and the redaction. It decodes
// into a study.Report as well.
type ThroughputStudy struct {
	Schema string `json:"schema"`
	Kind   string `json:"kind"`
	*study.Report
	Legs        []ReceiptLeg      `json:"legs"`
	Plan        json.RawMessage   `json:"plan"`
	Definitions map[string]string `json:"definitions"`
	Provenance  Provenance        `json:"provenance"`
	Journal     ChainSummary      `json:"journal"`
	Redaction   Redaction         `json:"redaction"`
	Plots       []string          `json:"plots"`
	// rules is bundle.json's rules revision (Index.Rules): what receipt.md says of an
	// adaptive plan's cells follows it.
	rules int
}

// ReceiptLeg is a report leg with its duration in seconds (ms precision), its fingerprint and
// its transcript's size and SHA-256 in the bundle.
type ReceiptLeg struct {
	study.ReportLeg
	DurationS        *float64 `json:"duration_s"`
	Fingerprint      string   `json:"fingerprint"`
	Dir              string   `json:"dir"`
	TranscriptBytes  int      `json:"transcript_bytes"`
	TranscriptSHA256 string   `json:"transcript_sha256"`
	PeakRSSBytes     int64    `json:"peak_rss_bytes"`
	// Command and LaunchedAs: a leg run under a launch wrapper (its report's Launch), its own
	// command line as leg.json holds it and the wrapper followed by it; absent otherwise.
	Command    []string `json:"command,omitempty"`
	LaunchedAs []string `json:"launched_as,omitempty"`
}

// Provenance is where the numbers came from.
type Provenance struct {
	PlanSHA256   string          `json:"plan_sha256"`
	RegisteredAt string          `json:"registered_at"`
	Sparkbench   string          `json:"sparkbench"`
	Builds       []BuildSeen     `json:"builds"`   // as llama-bench reported them in its rows
	Machines     []MachineSeen   `json:"machines"` // as llama-bench reported them in its rows
	Binaries     []BinaryRecord  `json:"binaries"`
	Missing      []MissingBinary `json:"binaries_missing"`
	BinariesNote string          `json:"binaries_note"`
	Models       []ModelRecord   `json:"models"`
	MachineIDs   []int64         `json:"notebook_machine_ids"`
	BuildIDs     []int64         `json:"notebook_build_ids"`
	// The notebook's build and machine records (build.json, machines.json), as recorded when
	// the study ran; empty in bundles written before they were exported.
	NotebookBuilds   []NotebookBuild   `json:"notebook_builds"`
	NotebookMachines []NotebookMachine `json:"notebook_machines"`
	Rows             string            `json:"rows"`             // how the rows relate to the journal's digests
	RowsTied         int               `json:"rows_tied_legs"`   // finished legs whose rows.jsonl matched rows_sha256
	RowsUntied       int               `json:"rows_untied_legs"` // finished legs journaled without rows_sha256
	NotebookHead     ChainPoint        `json:"notebook_head"`
	RawFiles         int               `json:"raw_files"`
	RawBytes         int64             `json:"raw_bytes"`
	Transcripts      string            `json:"transcripts"` // how the transcripts relate to the journal's digests
}

// BuildSeen is one build identity found in the rows.
type BuildSeen struct {
	Commit   string `json:"build_commit"`
	Number   int64  `json:"build_number"`
	Backends string `json:"backends"`
	Rows     int    `json:"rows"`
}

// MachineSeen is one machine identity found in the rows.
type MachineSeen struct {
	CPU  string `json:"cpu_info"`
	GPU  string `json:"gpu_info"`
	Rows int    `json:"rows"`
}

// ThroughputDefinitions are printed on every throughput receipt.
var ThroughputDefinitions = map[string]string{
	"pp":                 "pp<N>: prompt processing, N prompt tokens evaluated in batches (llama-bench -p N); tokens per second",
	"tg":                 "tg<N>: token generation, N tokens generated one at a time (llama-bench -n N); tokens per second",
	"depth":              "@ d<D>: the test runs with D tokens already in the KV cache (llama-bench -d D)",
	"mean_sd":            "mean ± sd: llama-bench's avg_ts and stddev_ts over the repetitions (-r)",
	"cv":                 "coefficient of variation: sd / mean",
	"depth_slope":        "(m(d) - m(first depth)) / m(first depth)",
	"crossing_depth":     "depth where a metric first falls below a line, linear interpolation between the bracketing measured depths",
	"ceiling":            "memory bandwidth (GB/s) / active bytes per token; house convention: file bytes / params x active params; tensor-exact: non-expert tensor bytes + expert tensor bytes x experts used / experts, the token-embedding table counting one row",
	"efficiency":         "observed tg / ceiling",
	"repeatability_cv":   "CV of the means of the same leg run again (start / middle / end)",
	"contamination":      "contaminated leg / mean(quiet leg before, quiet leg after) - 1",
	"row_reference":      "leg N seq S: row S (0-based, arrival order) of notebook leg N; the rows are in legs/NNN-label/rows.jsonl",
	"cv_gate":            "a test whose CV exceeds the plan's gate is flagged and its leg halted; flagged and discarded rows never count as results",
	"result_rows":        "only rows with status result of each plan leg's final finished attempt count",
	"verdict_band":       "band: HIT inside [lo, hi]; MISS with the signed distance from the nearest bound; MISS (edge) within the noise floor",
	"verdict_fork":       "fork: the arm whose range holds the value, or INCONCLUSIVE",
	"verdict_comparison": "comparison: HOLDS or FAILS within the tolerance",
	"verdict_question":   "question: ANSWERED with the value",
}

// DeviceDefinitions are added to a throughput receipt whose plan sets device axes or env.
var DeviceDefinitions = map[string]string{
	"ran_on":       "on-<backend> in a configuration: the row's layers ran on that backend's device; a row ran on the CPU when its gpu_info is empty, its devices is none or its n_gpu_layers is 0 (llama-bench's backends field names every backend the build registered, not where the row ran)",
	"device_gate":  "a leg that names a device halts on the first row with n_gpu_layers != 0 that ran elsewhere: device:not_used (on the CPU), device:other_backend (on another backend's device)",
	"device_ratio": "a cell on one devices value / the same cell on another (device / base_device)",
}

func (tb *throughputBundle) doc(rep *study.Report) *ThroughputStudy {
	defs := ThroughputDefinitions
	if p := tb.plan; p != nil && p.NeedsDevices() {
		defs = maps.Clone(ThroughputDefinitions)
		maps.Copy(defs, DeviceDefinitions)
	}
	defs = withEnergyDefinitions(defs, rep)
	defs = withAdaptiveDefinitions(defs, tb.ix.Rules, rep)
	defs = withProcessDefinitions(defs, tb.ix.Rules, tb.plan)
	if tb.ix.Rules < RulesProcessCells {
		rep = withoutProcessCells(rep)
	}
	d := &ThroughputStudy{Schema: SchemaThroughputStudy, Kind: KindThroughput, Report: rep, Plan: json.RawMessage(tb.planJSON),
		Definitions: defs, Journal: tb.chain, Redaction: tb.redaction, Plots: []string{}, rules: tb.ix.Rules}
	if d.Redaction.Files == nil {
		d.Redaction.Files = map[string]int{}
	}
	if d.Redaction.Verbatim == nil {
		d.Redaction.Verbatim = []string{}
	}
	byID := map[int64]legFolder{}
	for _, lf := range tb.legs {
		byID[lf.rec.ID] = lf
	}
	for _, l := range rep.Legs {
		rl := ReceiptLeg{ReportLeg: l}
		if l.Duration > 0 {
			s := math.Round(l.Duration.Seconds()*1000) / 1000
			rl.DurationS = &s
		}
		if lf, ok := byID[l.ID]; ok && l.ID != 0 {
			sum := sha256.Sum256(lf.transcript)
			rl.Fingerprint, rl.Dir, rl.TranscriptBytes = lf.rec.Fingerprint, lf.dir, len(lf.transcript)
			rl.TranscriptSHA256, rl.PeakRSSBytes = hex.EncodeToString(sum[:]), lf.rec.PeakRSSBytes
			setLaunch(&rl, lf.rec.Argv)
		}
		d.Legs = append(d.Legs, rl)
	}
	pv := Provenance{PlanSHA256: rep.Study.PlanSHA256, RegisteredAt: rep.Study.RegisteredAt.UTC().Format(time.RFC3339Nano),
		Sparkbench: tb.ix.Sparkbench, Builds: []BuildSeen{}, Machines: []MachineSeen{}, Binaries: []BinaryRecord{},
		Missing: []MissingBinary{}, Models: tb.models, MachineIDs: tb.nb.MachineIDs, BuildIDs: tb.nb.BuildIDs,
		NotebookHead: tb.nb.Head, RawFiles: tb.rawFiles, RawBytes: tb.rawBytes}
	if pv.Models == nil {
		pv.Models = []ModelRecord{}
	}
	if pv.MachineIDs == nil {
		pv.MachineIDs = []int64{}
	}
	if pv.BuildIDs == nil {
		pv.BuildIDs = []int64{}
	}
	pv.NotebookBuilds, pv.NotebookMachines = []NotebookBuild{}, append([]NotebookMachine{}, tb.machines...)
	if tb.build != nil {
		pv.NotebookBuilds = append(pv.NotebookBuilds, tb.build.NotebookBuilds...)
		pv.BinariesNote = tb.build.Note
		pv.Binaries = append(pv.Binaries, tb.build.Binaries...)
		pv.Missing = append(pv.Missing, tb.build.Missing...)
	}
	builds := map[BuildSeen]int{}
	machines := map[MachineSeen]int{}
	for _, lf := range tb.legs {
		for _, r := range lf.rows {
			builds[BuildSeen{Commit: r.Result.BuildCommit, Number: r.Result.BuildNumber, Backends: r.Result.Backends}]++
			machines[MachineSeen{CPU: r.Result.CPUInfo, GPU: r.Result.GPUInfo}]++
		}
	}
	for b, n := range builds {
		b.Rows = n
		pv.Builds = append(pv.Builds, b)
	}
	sort.Slice(pv.Builds, func(i, j int) bool {
		a, b := pv.Builds[i], pv.Builds[j]
		return a.Commit+"\x00"+a.Backends+fmt.Sprint(a.Number) < b.Commit+"\x00"+b.Backends+fmt.Sprint(b.Number)
	})
	for m, n := range machines {
		m.Rows = n
		pv.Machines = append(pv.Machines, m)
	}
	sort.Slice(pv.Machines, func(i, j int) bool {
		return pv.Machines[i].CPU+"\x00"+pv.Machines[i].GPU < pv.Machines[j].CPU+"\x00"+pv.Machines[j].GPU
	})
	if tb.redaction.Redacted {
		pv.Transcripts = "redacted: their SHA-256 differs from the digest the notebook journaled; a bundle written with --no-redact is checked against it"
	} else {
		pv.Transcripts = "verbatim: each matches the transcript_sha256 its leg.finished entry journaled"
	}
	pv.RowsTied, pv.RowsUntied = tb.rowsTied, tb.rowsOld
	switch {
	case tb.rowsOld == 0:
		pv.Rows = "verbatim: each finished leg's rows.jsonl matches the rows_sha256 its leg.finished entry journaled"
	case tb.rowsTied == 0:
		pv.Rows = "tied by row count and statuses only: the legs were journaled before leg.finished recorded rows_sha256; sparkbench notebook verify on the notebook proves the values"
	default:
		pv.Rows = "partly: the legs journaled before leg.finished recorded rows_sha256 are tied by row count and statuses only"
	}
	d.Provenance = pv
	return d
}

// AssembleThroughput returns study.json and receipt.md of a throughput bundle.
func assembleThroughput(files Files, ix *Index) ([]byte, []byte, error) {
	tb, err := readThroughput(files, ix)
	if err != nil {
		return nil, nil, err
	}
	rep, err := tb.report()
	if err != nil {
		return nil, nil, err
	}
	d := tb.doc(rep)
	d.Plots = throughputPlotNames(d)
	js, err := canon.Marshal(d)
	if err != nil {
		return nil, nil, err
	}
	js = append(js, '\n')
	md := throughputMarkdown(d)
	return js, md, nil
}
