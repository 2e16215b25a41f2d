// Package receipt assembles a study's receipt — receipt.md and study.json, plus the plots
// derived from study.json — from the raw files of its bundle, and checks a bundle: SHA256SUMS,
// the journal's hash chain, and the derived files re-assembled byte for byte. It is pure: a
// bundle is a map of relative paths to bytes, nothing here opens a file, a database or a
// process, so the same raw files give the same bytes on any machine, in any folder, under any
// user. The layout and file formats are in docs/receipts.md.
package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"sparkbench/app/kinds"
	"sparkbench/runner/jsonlex"
)

// Files is a bundle's content: slash-separated paths relative to the bundle's root → bytes.
type Files map[string][]byte

// Names returns the paths in byte order.
func (f Files) Names() []string {
	out := make([]string, 0, len(f))
	for k := range f {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Clone copies the map (the byte slices are shared: treat them as read-only).
func (f Files) Clone() Files {
	out := make(Files, len(f))
	for k, v := range f {
		out[k] = v
	}
	return out
}

// Bytes is the total size of the files.
func (f Files) Bytes() int64 {
	var n int64
	for _, v := range f {
		n += int64(len(v))
	}
	return n
}

// Bundle file names. Raw files are what the study left; derived files are re-made from them.
const (
	FileIndex     = "bundle.json"    // what kind of bundle, who wrote it; capacity: which file is which input
	FileSums      = "SHA256SUMS"     // sha256sum --check format, every other file
	FileStudy     = "study.json"     // derived: canonical JSON
	FileReceipt   = "receipt.md"     // derived: the receipt
	DirPlots      = "plots/"         // derived: PNG and SVG
	FileNotebook  = "notebook.json"  // throughput: the study as the notebook lists it (status, prediction ids, chain head)
	FilePlan      = "plan.json"      // the plan: throughput canonical as registered; capacity verbatim
	FileJournal   = "journal.jsonl"  // the journal excerpt, one entry per line (throughput; capacity when written from the notebook; quant since ladder receipts carry one)
	FileModels    = "models.json"    // throughput: model artefacts as recorded
	FileBuild     = "build.json"     // throughput: the notebook's build records, and the binaries hashed when the bundle was written
	FileMachines  = "machines.json"  // throughput: the notebook's machine records (no host names)
	FileRedaction = "redaction.json" // what was redacted
	DirLegs       = "legs/"          // throughput: legs/NNN-label/{leg.json,rows.jsonl,transcript.txt}
	DirModels     = "models/"        // throughput: models/ID.gguf-header
)

// Leg folder files.
const (
	LegFile       = "leg.json"
	LegRowsFile   = "rows.jsonl"
	LegTranscript = "transcript.txt"
	// LegTelemetry holds a sampled leg's telemetry samples (canon.AppendTelemetryLine), only
	// for a leg that has some.
	LegTelemetry   = "telemetry.jsonl"
	HeaderSuffix   = ".gguf-header"
	SchemaBundle   = "sparkbench.bundle/v1"
	KindThroughput = kinds.Throughput
	KindCapacity   = kinds.Capacity
)

// IsDerived says whether a bundle file is re-made from the raw files (study.json, receipt.md,
// plots) or is SHA256SUMS itself.
func IsDerived(name string) bool {
	return name == FileStudy || name == FileReceipt || name == FileSums || strings.HasPrefix(name, DirPlots)
}

// Index is bundle.json.
type Index struct {
	Schema string `json:"schema"`
	Kind   string `json:"kind"` // throughput or capacity
	// Sparkbench is the version that wrote the bundle; the receipt names it, and reproducing
	// the derived files byte for byte needs the same version.
	Sparkbench string `json:"sparkbench"`
	// Rules is the revision of the rules its kind's derived files were made by, where the kind
	// has more than one (BundleKind.Rules); absent: the first. Re-assembly follows it, so a
	// bundle written before a change of the rules still re-makes byte for byte.
	Rules    int            `json:"rules,omitempty"`
	Capacity *CapacityIndex `json:"capacity,omitempty"`
	// Quant is a quantization ladder bundle's journal excerpt (absent from a ladder bundle
	// written before ladder receipts carried one, and from every other kind's).
	Quant *QuantIndex `json:"quant,omitempty"`
}

// QuantIndex names a ladder bundle's journal excerpt and the study it is of in the notebook
// it was written from.
type QuantIndex struct {
	Journal string `json:"journal"` // journal.jsonl
	StudyID int64  `json:"study_id"`
	// Rules are the selection rules the derived files were made by (quant.Rules*; absent: the
	// rules before they were recorded), so a bundle verifies by the rules it was written with.
	Rules int `json:"rules,omitempty"`
}

// CapacityIndex names the raw files of a capacity bundle by the role and key `capacity
// assemble` gives them (docs/capacity.md).
type CapacityIndex struct {
	Plan       string             `json:"plan"`
	PromptPlan string             `json:"prompt_plan,omitempty"` // "" when the run folder had none
	Manifest   string             `json:"manifest,omitempty"`    // run.json, when the run wrote one
	Requests   map[string]string  `json:"requests"`              // PASS/CANDIDATE/pP → path
	RSS        map[string]string  `json:"rss"`
	ServerLogs map[string]string  `json:"server_logs"`
	Quality    map[string]string  `json:"quality,omitempty"` // CANDIDATE/pP → path
	BenchTG    map[string]float64 `json:"bench_tg,omitempty"`
	// Batched names each candidate's llama-batched-bench output (CANDIDATE → path), for the
	// server tax.
	Batched map[string]string `json:"batched,omitempty"`
	// Serving names a serving plan's open-loop records (PASS/CANDIDATE/pP → path) and Harness
	// its harness floor record (docs/serving.md); absent for a closed-loop plan.
	Serving map[string]string `json:"serving,omitempty"`
	Harness string            `json:"harness,omitempty"`
	// Telemetry names each sampled lifetime's telemetry.jsonl (PASS/CANDIDATE/pP → path);
	// absent for a run without telemetry (docs/telemetry.md).
	Telemetry map[string]string `json:"telemetry,omitempty"`
	// Evidence lists further raw files kept as evidence but not read by the assembly
	// (per-lifetime backend evidence, …).
	Evidence []string `json:"evidence,omitempty"`
	// Journal is the notebook's journal excerpt (journal.jsonl, as in a throughput bundle) and
	// StudyID the notebook's id of the study, when the bundle was written from the notebook;
	// both absent for a bundle written from a run folder alone.
	Journal string `json:"journal,omitempty"`
	StudyID int64  `json:"study_id,omitempty"`
}

// NotebookRecord is notebook.json: what the notebook says about the study besides the journal.
type NotebookRecord struct {
	StudyID int64  `json:"study_id"`
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Status  string `json:"status"` // not journaled: the notebook's current value
	// Predictions maps the notebook's prediction ids to keys (findings name predictions by id).
	Predictions []PredictionKey `json:"predictions"`
	// Head is the notebook's journal head when the bundle was written: compare it with
	// `sparkbench notebook verify` on the machine that holds the notebook.
	Head ChainPoint `json:"head"`
	// MachineIDs and BuildIDs are the notebook's machine and build records the legs name.
	MachineIDs []int64 `json:"machine_ids"`
	BuildIDs   []int64 `json:"build_ids"`
}

// PredictionKey pairs a notebook prediction id with its key.
type PredictionKey struct {
	ID  int64  `json:"id"`
	Key string `json:"key"`
}

// ChainPoint is one journal position.
type ChainPoint struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// JournalLine is one line of journal.jsonl: a notebook journal entry exactly as hashed.
type JournalLine struct {
	Seq      int64           `json:"seq"`
	Kind     string          `json:"kind"`
	Study    *int64          `json:"study"` // null: not about one study
	At       string          `json:"at"`    // as stored (nine fractional digits)
	Payload  json.RawMessage `json:"payload"`
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
}

// StudyID is the entry's study, 0 when none.
func (j JournalLine) StudyID() int64 {
	if j.Study == nil {
		return 0
	}
	return *j.Study
}

// LegRecord is legs/NNN-label/leg.json: the notebook's leg record (paths redacted).
type LegRecord struct {
	ID           int64             `json:"id"`
	Label        string            `json:"label"`
	Kind         string            `json:"kind"`
	PlanLeg      string            `json:"plan_leg"`
	Role         string            `json:"role"`
	Attempt      int               `json:"attempt"`
	State        string            `json:"state"`
	Class        string            `json:"class"`
	Reason       string            `json:"reason"`
	ExitCode     *int              `json:"exit_code"`
	Signal       string            `json:"signal"`
	Argv         []string          `json:"argv"`
	Env          map[string]string `json:"env"`
	Conditions   []string          `json:"conditions"`
	StartedAt    string            `json:"started_at"`
	EndedAt      string            `json:"ended_at"` // "" while running
	Fingerprint  string            `json:"fingerprint"`
	PeakRSSBytes int64             `json:"peak_rss_bytes"`
	MachineID    int64             `json:"machine_id"`
	BuildID      int64             `json:"build_id"`
	ArtefactID   int64             `json:"artefact_id"`
	TempBeforeC  *float64          `json:"temp_before_c"`
	TempAfterC   *float64          `json:"temp_after_c"`
}

// RowRecord is one line of rows.jsonl: a llama-bench row as llama-bench wrote it (fields it
// carried, in its order) with its sequence number in the leg and its status.
type RowRecord struct {
	Seq    int64           `json:"seq"`
	Status string          `json:"status"` // result, flagged, discarded; "" unmarked
	Row    json.RawMessage `json:"row"`
}

// ModelRecord is one entry of models.json: an artefact as the notebook recorded it.
type ModelRecord struct {
	ArtefactID     int64  `json:"artefact_id"`
	Model          string `json:"model"` // the plan's model ID ("" when no plan model has its path)
	Path           string `json:"path"`
	Bytes          int64  `json:"bytes"`
	SHA256         string `json:"sha256"`
	ExpectedSHA256 string `json:"expected_sha256"`
	Status         string `json:"status"` // VERIFIED, PENDING, MISMATCH
	Name           string `json:"name"`
	Architecture   string `json:"architecture"`
	Quant          string `json:"quant"`
	NParams        int64  `json:"n_params"`
	Source         string `json:"source"`
	Revision       string `json:"revision"`
	// Header is the bundle file holding the model's GGUF header (bytes up to its tensor data);
	// "" with HeaderNote saying why when it could not be read.
	Header     string `json:"header"`
	HeaderNote string `json:"header_note,omitempty"`
}

// BuildRecord is build.json: the notebook's build records of the legs (as recorded when the
// study ran; bundles written before they were exported lack them) and the binaries the legs
// ran, hashed when the bundle was written.
type BuildRecord struct {
	Note           string          `json:"note"`
	Binaries       []BinaryRecord  `json:"binaries"`
	Missing        []MissingBinary `json:"missing"`
	NotebookBuilds []NotebookBuild `json:"notebook_builds,omitempty"`
}

// NotebookBuild is the notebook's record of a llama.cpp build, as the study recorded it: its
// version line, build number, commit, backends and each binary's SHA-256, hashed when the
// study ran.
type NotebookBuild struct {
	ID          int64             `json:"id"`
	Fingerprint string            `json:"fingerprint"`
	Dir         string            `json:"dir"`
	VersionLine string            `json:"version_line"`
	BuildNumber int64             `json:"build_number"`
	Commit      string            `json:"commit"`
	Backends    string            `json:"backends"`
	Binaries    map[string]string `json:"binaries"` // binary name → SHA-256
	RecordedAt  string            `json:"recorded_at"`
}

// NotebookMachine is machines.json's record of a machine the legs ran on, as the notebook
// recorded it. The host name (and the free-form info, which holds it) is left out; the
// fingerprint is the notebook's, a SHA-256 that covers it.
type NotebookMachine struct {
	ID              int64   `json:"id"`
	Fingerprint     string  `json:"fingerprint"`
	CPUModel        string  `json:"cpu_model"`
	Cores           int     `json:"cores"`
	RAMBytes        int64   `json:"ram_bytes"`
	OS              string  `json:"os"`
	Kernel          string  `json:"kernel"`
	GPU             string  `json:"gpu"`
	Driver          string  `json:"driver"`
	MemBandwidthGBs float64 `json:"mem_bandwidth_gbs"`
	RecordedAt      string  `json:"recorded_at"`
}

// BinaryRecord is one binary file.
type BinaryRecord struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// MissingBinary is a binary that could not be hashed.
type MissingBinary struct {
	Path string `json:"path"`
	Why  string `json:"why"`
}

// Redaction is redaction.json. The home folder itself is never written down.
type Redaction struct {
	Redacted    bool           `json:"redacted"`
	Replacement string         `json:"replacement,omitempty"` // "~"
	Files       map[string]int `json:"files"`                 // file → replacements made
	Verbatim    []string       `json:"verbatim"`              // files kept byte for byte (hash-chained or hashed)
}

// Sums is the SHA256SUMS file for every file except SHA256SUMS itself, in byte order of the
// paths, in the format `sha256sum --check` reads.
func Sums(files Files) []byte {
	var b bytes.Buffer
	for _, name := range files.Names() {
		if name == FileSums {
			continue
		}
		s := sha256.Sum256(files[name])
		b.WriteString(hex.EncodeToString(s[:]))
		b.WriteString("  ")
		b.WriteString(name)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// SumLine is one parsed SHA256SUMS line.
type SumLine struct {
	Line   int
	SHA256 string
	Name   string
}

// ParseSums reads SHA256SUMS strictly: 64 lowercase hex digits, two spaces (or space and '*'),
// a clean relative path; each path once.
func ParseSums(data []byte) ([]SumLine, error) {
	var out []SumLine
	seen := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		if line == "" {
			continue
		}
		if len(line) < 67 || !isHex64(line[:64]) || line[64] != ' ' || (line[65] != ' ' && line[65] != '*') {
			return nil, fmt.Errorf("%s: line %d: want \"<64 hex digits>  <path>\"", FileSums, n)
		}
		name := line[66:]
		if err := CheckName(name); err != nil {
			return nil, fmt.Errorf("%s: line %d: %v", FileSums, n, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: line %d: %s is listed twice", FileSums, n, name)
		}
		seen[name] = true
		out = append(out, SumLine{Line: n, SHA256: line[:64], Name: name})
	}
	return out, nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// CheckName accepts a bundle path: relative, slash-separated, clean, without "." or ".."
// components, backslashes, control characters or a drive letter, at most 512 bytes.
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty path")
	case len(name) > 512:
		return fmt.Errorf("path %.40q… is longer than 512 bytes", name)
	case strings.HasPrefix(name, "/"):
		return fmt.Errorf("absolute path %q: a bundle holds relative paths only", name)
	case strings.ContainsAny(name, "\\\x00"):
		return fmt.Errorf("path %q has a backslash or NUL", name)
	case len(name) >= 2 && name[1] == ':':
		return fmt.Errorf("path %q starts with a drive letter", name)
	}
	for _, c := range name {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("path %q has a control character", name)
		}
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return fmt.Errorf("path %q climbs out of the bundle (..)", name)
		}
		if part == "" || part == "." {
			return fmt.Errorf("path %q is not clean (empty or . component)", name)
		}
	}
	if path.Clean(name) != name {
		return fmt.Errorf("path %q is not clean", name)
	}
	return nil
}

func decodeStrict(name string, data []byte, v any) error {
	switch e := jsonlex.DecodeStrict(data, v); {
	case e == nil:
		return nil
	case e.Kind == jsonlex.StrictTrailing:
		return fmt.Errorf("%s: more than one JSON value", name)
	default:
		return fmt.Errorf("%s: %w", name, e.Err)
	}
}

func need(files Files, name string) ([]byte, error) {
	b, ok := files[name]
	if !ok {
		return nil, fmt.Errorf("%s is missing from the bundle", name)
	}
	return b, nil
}

// ReadIndex reads bundle.json.
func ReadIndex(files Files) (*Index, error) {
	b, err := need(files, FileIndex)
	if err != nil {
		return nil, err
	}
	var ix Index
	if err := decodeStrict(FileIndex, b, &ix); err != nil {
		return nil, err
	}
	if ix.Schema != SchemaBundle {
		return nil, fmt.Errorf("%s: schema %q, want %q", FileIndex, ix.Schema, SchemaBundle)
	}
	k, ok := bundleKinds[ix.Kind]
	if !ok {
		return nil, fmt.Errorf("%s: kind %q, want %s", FileIndex, ix.Kind, bundleKindsText())
	}
	if ix.Rules != 0 && !slices.Contains(k.Rules, ix.Rules) {
		known := "only the first (no \"rules\")"
		if len(k.Rules) > 0 {
			known = fmt.Sprintf("the first (no \"rules\") and %v", k.Rules)
		}
		return nil, fmt.Errorf("%s: rules %d: this sparkbench knows %s for a %s bundle; %s wrote it: verify it with that version or a later one", FileIndex, ix.Rules, known, ix.Kind, ix.Sparkbench)
	}
	if k.CheckIndex != nil {
		if err := k.CheckIndex(&ix); err != nil {
			return nil, err
		}
	}
	return &ix, nil
}
