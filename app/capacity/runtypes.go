package capacity

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"sparkbench/app/study"
	"sparkbench/runner/vocab"
)

// The run folder's layout, the one `capacity assemble` reads:
//
//	OUT/plan.json                              the plan's bytes, verbatim (same SHA-256)
//	OUT/runs/PASS/CANDIDATE/pP/requests.jsonl  request records (docs/requests.md)
//	OUT/runs/PASS/CANDIDATE/pP/rss.json        {"schema":"sparkbench.rss/v1","vmhwm_kib":N,"source":…}
//	OUT/runs/PASS/CANDIDATE/pP/server.log      llama-server's log (CR and ANSI removed)
//	OUT/runs/PASS/CANDIDATE/pP/evidence.json   backend evidence of the last load block, the server's argv
//	OUT/runs/PASS/CANDIDATE/pP.N/…             the same, for attempt N of a lifetime run again (rundirs.go)
//	OUT/quality/CANDIDATE/pP/quality-evidence.json, server.log   the quality guard (gated plans)
//	OUT/run.json                               what happened: lifetimes, ports, classes, files
//	OUT/study.json                             the assembled study
const (
	RunPlanFile      = "plan.json"
	RunManifestFile  = "run.json"
	RunStudyFile     = "study.json"
	RunRequestsFile  = "requests.jsonl"
	RunRSSFile       = "rss.json"
	RunServerLogFile = "server.log"
	RunEvidenceFile  = "evidence.json"
	RunQualityFile   = "quality-evidence.json"
)

// RunEventType names a run event.
type RunEventType string

// Run events, in the order they occur. Every lifetime emits lifetime_started, then
// server_ready or server_failed, then per client level cell_started, request…, cell_done,
// then lifetime_done. The run ends with assembled (or assembly_failed), then run_done.
const (
	RunStarted      RunEventType = "run_started" // Resume set when the run resumes a folder
	LifetimeStarted RunEventType = "lifetime_started"
	ServerReady     RunEventType = "server_ready"
	ServerFailed    RunEventType = "server_failed"
	CellStarted     RunEventType = "cell_started"
	ServerLine      RunEventType = "server_line" // one line of the server's log (Line; Dropped before it)
	RequestDone     RunEventType = "request"
	CellDone        RunEventType = "cell_done"
	LifetimeDone    RunEventType = "lifetime_done"
	GuardStarted    RunEventType = "guard_started" // quality guard of one (candidate, P)
	GuardDone       RunEventType = "guard_done"
	Assembled       RunEventType = "assembled"
	AssemblyFailed  RunEventType = "assembly_failed"
	RunDone         RunEventType = "run_done"
	// NotResumed comes from Engine.Run, before run_started: the study's last run folder could
	// not be resumed (Error says why), so a new one is started.
	NotResumed RunEventType = "not_resumed"
	// RPCServerEvent is one of the plan's ggml-rpc-servers started (before the first
	// lifetime), refused, or stopped (after the last): RPC says which and how.
	RPCServerEvent RunEventType = "rpc_server"
	// RPCSplitEvent (after an RPC candidate's lifetime_done) is where its server log says the
	// model went among the plan's servers: Lifetime and RPCSplit.
	RPCSplitEvent    RunEventType = "rpc_split"
	MaxEventErrorLen              = 400 // the most bytes of an event's Error text
)

// RunEvent is one thing that happened during a run: plain data, for a console, the notebook
// or the UI. Exactly the fields its type needs are set.
type RunEvent struct {
	Type     RunEventType   `json:"type"`
	T        time.Duration  `json:"t"` // since the run started
	Progress RunProgress    `json:"progress"`
	Lifetime string         `json:"lifetime,omitempty"` // PASS/CANDIDATE/pP
	Clients  int            `json:"clients,omitempty"`
	Server   *RunServer     `json:"server,omitempty"`  // server_ready, server_failed, lifetime_done
	Request  *RequestRecord `json:"request,omitempty"` // request
	Cell     *RunCell       `json:"cell,omitempty"`    // cell_done
	Error    string         `json:"error,omitempty"`
	Study    string         `json:"study,omitempty"` // assembled: path of study.json
	Guard    *RunGuard      `json:"guard,omitempty"` // guard_done
	// Line is a server_line's text. Dropped counts the log lines before it that were not
	// sent as events because the consumer fell behind (the log file keeps every line).
	Line    string `json:"line,omitempty"`
	Dropped int    `json:"dropped,omitempty"`
	// Origin (lifetime_started) is the wall-clock origin of the pass's clock: the lifetime's
	// request times are milliseconds since it (run.json's pass_origins).
	Origin time.Time `json:"origin,omitzero"`
	// Dir (lifetime_started) is the run-folder relative folder the lifetime writes into when it
	// is not its LifetimeDir: a lifetime measured again beside an earlier attempt's files
	// (rundirs.go). Empty: LifetimeDir.
	Dir string `json:"dir,omitempty"`
	// Resume (run_started) says what a resumed run kept from before.
	Resume *RunResume `json:"resume,omitempty"`
	// NoResults (lifetime_done) says why the lifetime ended without results.
	NoResults string `json:"no_results,omitempty"`
	// RPC (rpc_server) is the server's start, refusal or stop.
	RPC *study.RPCServerNote `json:"rpc,omitempty"`
	// RPCSplit (rpc_split) is the lifetime's split among the plan's RPC servers.
	RPCSplit *LifetimeRPC `json:"rpc_split,omitempty"`
}

// RunResume is one resumption of a run folder: what was kept and what is run again.
type RunResume struct {
	At time.Time `json:"at"`
	// Lifetimes and Guards are the keys kept from before: finished, not run again.
	Lifetimes []string `json:"lifetimes_done"`
	Guards    []string `json:"guards_done,omitempty"`
	// Cleared are the run-folder relative folders emptied to be run again: the quality guard
	// the interruption cut, and any partial guard folder a killed run left (a run folder
	// resumed by an earlier version emptied lifetime folders too).
	Cleared []string `json:"cleared,omitempty"`
	// Kept are the run-folder relative folders of the lifetimes run again that hold an earlier
	// attempt's files (the lifetime the interruption cut, any partial folder a killed run
	// left): they stay as they are, and the new attempt writes into a new sibling folder
	// (rundirs.go).
	Kept []string `json:"kept,omitempty"`
	// Previous is how the run before ended: its run.json error, or "killed" when it never
	// wrote its final run.json (the last checkpoint was read).
	Previous string `json:"previous,omitempty"`
}

// RunGuard is one quality-guard run: CANDIDATE/pP, its score and its server.
type RunGuard struct {
	Key    string            `json:"key"`
	Dir    string            `json:"dir"`
	Score  int               `json:"score"`
	Cases  int               `json:"cases"`
	Server RunServer         `json:"server"`
	Files  map[string]string `json:"files"`
	// Interrupted says why the guard did not finish; a resumed run runs it again.
	Interrupted string `json:"interrupted,omitempty"`
}

// RunProgress counts what is done.
type RunProgress struct {
	LifetimesDone  int `json:"lifetimes_done"`
	LifetimesTotal int `json:"lifetimes_total"`
	CellsDone      int `json:"cells_done"`
	CellsTotal     int `json:"cells_total"`
	GuardsDone     int `json:"guards_done,omitempty"`
	GuardsTotal    int `json:"guards_total,omitempty"`
	// LifetimesKept and CellsKept are the parts of the done counts a resumed run kept from
	// before (not measured by this run).
	LifetimesKept int           `json:"lifetimes_kept,omitempty"`
	CellsKept     int           `json:"cells_kept,omitempty"`
	Elapsed       time.Duration `json:"elapsed"`
	ETA           time.Duration `json:"eta"` // -1 while unknown
}

// RunServer is one server lifetime's process as the run saw it.
type RunServer struct {
	Argv     []string        `json:"argv,omitempty"`
	Port     int             `json:"port,omitempty"`
	Pid      int             `json:"pid,omitempty"`
	ReadyIn  time.Duration   `json:"ready_in,omitempty"`
	Attempts []vocab.Attempt `json:"attempts,omitempty"`
	// Class and Reason: how the lifetime ended ("stopped_by_user" is the normal end), or why
	// the server never became healthy.
	Class     string          `json:"class,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Unexpect  bool            `json:"unexpected_exit,omitempty"` // it ended before the run stopped it
	RSS       *vocab.RSS      `json:"rss,omitempty"`
	Evidence  *vocab.Evidence `json:"evidence,omitempty"`
	Escalated bool            `json:"escalated,omitempty"` // SIGKILL was needed
	// Network: a server on a bench host (capacity run --on), the path its clients took and the
	// round-trip floor measured over it before the load; absent for a local server.
	Network *RunNetwork `json:"network,omitempty"`
}

// RunNetwork is the network path of a server lifetime on a bench host: this machine's
// 127.0.0.1:LocalPort, forwarded over the host's ssh connection to the host's
// 127.0.0.1:RemotePort; its round-trip floor (RTTProbes sequential GET /health over one
// kept-alive connection, before the load: their minimum and median); and what was left on the
// host after the server was stopped.
type RunNetwork struct {
	Host        string   `json:"host"`
	SSH         string   `json:"ssh"`
	Path        string   `json:"path"`
	LocalPort   int      `json:"local_port"`
	RemotePort  int      `json:"remote_port"`
	RTTProbes   int      `json:"rtt_probes"`
	RTTMinMs    float64  `json:"rtt_min_ms"`
	RTTMedianMs float64  `json:"rtt_median_ms"`
	RTTError    string   `json:"rtt_error,omitempty"`
	StopSignal  string   `json:"stop_signal,omitempty"` // sent on the host
	Left        []string `json:"left"`                  // llama-servers on the host after the stop
	StopError   string   `json:"stop_error,omitempty"`
}

// RunCell summarises one client level of one lifetime.
type RunCell struct {
	Clients   int     `json:"clients"`
	Attempted int     `json:"attempted"` // measured requests
	Completed int     `json:"completed"` // measured, HTTP 200, n_predict tokens
	Retries   int     `json:"retries,omitempty"`
	Rate      float64 `json:"generation_rate"` // tok/s of the measured window (0 when undefined)
	FirstErr  string  `json:"first_error,omitempty"`
}

// RunLifetime is a lifetime's record in run.json.
type RunLifetime struct {
	Key    string            `json:"key"`
	Dir    string            `json:"dir"` // relative to the run folder
	Server RunServer         `json:"server"`
	Cells  []RunCell         `json:"cells"`
	Files  map[string]string `json:"files"` // role -> path relative to the run folder
	// Interrupted says why the lifetime did not finish (Stop, a halt, an I/O failure): its
	// client levels were cut short, so a resumed run measures it again.
	Interrupted string `json:"interrupted,omitempty"`
	// NoResults says why the lifetime ended without results: no measured request completed
	// (the server did not start, died, or answered none). The run ends incomplete, and a
	// resumed run measures the lifetime again.
	NoResults string `json:"no_results,omitempty"`
}

// IncompleteLifetime is a server lifetime that ended without results.
type IncompleteLifetime struct {
	Key    string `json:"key"`
	Class  string `json:"class,omitempty"` // how its server ended (or why it never started)
	Reason string `json:"reason"`
}

// IncompleteError ends a run in which server lifetimes ended without results: the run is
// incomplete, not complete, whatever the assembly made of the rest (Assembled says whether
// study.json was written from them).
type IncompleteError struct {
	Lifetimes []IncompleteLifetime
	Total     int
	Assembled bool
}

func (e *IncompleteError) Error() string {
	parts := make([]string, len(e.Lifetimes))
	for i, l := range e.Lifetimes {
		parts[i] = l.Key + " (" + l.Reason + ")"
	}
	return fmt.Sprintf("incomplete: %d of %d server lifetimes ended without results: %s", len(e.Lifetimes), e.Total, strings.Join(parts, "; "))
}

// IsIncomplete says whether err ends an incomplete run, and returns it.
func IsIncomplete(err error) (*IncompleteError, bool) {
	var ie *IncompleteError
	ok := errors.As(err, &ie)
	return ie, ok
}

// RunReport is what a run did; run.json holds it.
type RunReport struct {
	Schema     string         `json:"schema"`
	Plan       string         `json:"plan"` // run-folder relative
	PlanSHA256 string         `json:"plan_sha256"`
	PromptPlan string         `json:"prompt_plan_sha256"`
	Build      *vocab.Build   `json:"build,omitempty"`
	Machine    *vocab.Machine `json:"machine,omitempty"` // CPU, cores, memory, kernel (from /proc)
	// Started is when the run folder's first run started; Duration the time spent running,
	// summed over the resumptions (the pauses between them excluded).
	Started   time.Time     `json:"started"`
	Duration  time.Duration `json:"duration"`
	Lifetimes []RunLifetime `json:"lifetimes"`
	// PassOrigins are the wall-clock origins of each pass's clock (request times are
	// milliseconds since it): a resumed run measures the rest of a pass on the same axis.
	PassOrigins map[string]time.Time `json:"pass_origins,omitempty"`
	// Resumes lists each time the folder's run was resumed, in order.
	Resumes []RunResume `json:"resumes,omitempty"`
	// InProgress marks a checkpoint: run.json is rewritten after every lifetime and guard
	// while the run goes on, so a killed run leaves what it finished; the final run.json has
	// it false.
	InProgress bool       `json:"in_progress,omitempty"`
	Guards     []RunGuard `json:"guards,omitempty"`
	// QualityCases is the SHA-256 of the guard's case list (when the plan gates quality).
	QualityCases string `json:"quality_cases_sha256,omitempty"`
	Study        string `json:"study,omitempty"` // run-folder relative; empty when not assembled
	StudySHA     string `json:"study_sha256,omitempty"`
	Error        string `json:"error,omitempty"`
	// Incomplete lists the lifetimes that ended without results (the run is incomplete).
	Incomplete []IncompleteLifetime `json:"incomplete,omitempty"`
	// AssembleArgs reproduce study.json: `sparkbench capacity assemble ARGS…` from the run
	// folder's parent gives the same bytes.
	AssembleArgs []string `json:"assemble_args"`
	// RPCServers are the starts, refusals and stops of the plan's ggml-rpc-servers, in order
	// (plans with rpc_servers only).
	RPCServers []study.RPCServerNote `json:"rpc_servers,omitempty"`

	OutDir string  `json:"-"`
	Result *Result `json:"-"` // the assembled study (nil when assembly failed)
}

// RunSummary is what Engine.Run did.
type RunSummary struct {
	StudyID     int64           `json:"study_id"`
	Status      string          `json:"status"`
	RunDir      string          `json:"run_dir"`
	StudySHA256 string          `json:"study_sha256,omitempty"`
	Legs        int             `json:"legs"`
	Verdicts    []study.Verdict `json:"verdicts"` // journaled by this run
	// Resumed: the run continued the study's last run folder; LifetimesKept and GuardsKept
	// finished before and were not run again (Legs counts only what this run recorded).
	Resumed       bool `json:"resumed,omitempty"`
	LifetimesKept int  `json:"lifetimes_kept,omitempty"`
	GuardsKept    int  `json:"guards_kept,omitempty"`
	// NotResumed says why the last run folder could not be resumed (a new one was started).
	NotResumed string `json:"not_resumed,omitempty"`
	// Incomplete lists the lifetimes without results of an incomplete run.
	Incomplete []IncompleteLifetime `json:"incomplete,omitempty"`
	Report     *RunReport           `json:"-"`
}

// ErrRunStopped is the cause of a run ended by Stop.
var ErrRunStopped = errors.New("capacity run stopped")

// InputError-like refusals before anything runs.
type runRefusal struct{ msg string }

func (e *runRefusal) Error() string { return e.msg }

// IsRefusal says whether a run error is a refusal of its input (plan, prompt plan, folder)
// before anything ran.
func IsRefusal(err error) bool {
	var r *runRefusal
	return errors.As(err, &r) || IsResumeError(err)
}

// Refuse is a run refused before any server started (IsRefusal).
func Refuse(format string, a ...any) error { return &runRefusal{fmt.Sprintf(format, a...)} }

// ResumeError refuses to resume a run folder, before anything runs.
type ResumeError struct {
	Dir string
	Why string
}

func (e *ResumeError) Error() string {
	return fmt.Sprintf("cannot resume the run in %s: %s; start the study afresh in a new run folder (`sparkbench capacity run ID --fresh`)", e.Dir, e.Why)
}

// IsResumeError says whether err refuses to resume a run folder.
func IsResumeError(err error) bool {
	var r *ResumeError
	return errors.As(err, &r)
}
