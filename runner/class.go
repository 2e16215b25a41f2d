package runner

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"unicode/utf8"
)

// logPattern is one recognised llama.cpp message. all holds lower-case substrings that must
// all occur in the line. A detail pattern names the precise cause (kept from its first
// occurrence); a summary pattern is the tool's closing line (kept from its last occurrence).
type logPattern struct {
	class  Class
	all    []string
	detail bool
}

// logPatterns in priority order of their classes: device_lost over oom over load_failed over
// bad_args (an allocation failure during load prints "failed to load model" too).
var logPatterns = []logPattern{
	{ClassDeviceLost, []string{"devicelost"}, true}, // vk::…: ErrorDeviceLost, DeviceLost
	{ClassDeviceLost, []string{"device_lost"}, true},
	{ClassDeviceLost, []string{"device lost"}, true},
	{ClassDeviceLost, []string{"fallen off the bus"}, true},

	{ClassOOM, []string{"not enough memory"}, true},
	{ClassOOM, []string{"out of memory"}, true},
	{ClassOOM, []string{"outofdevicememory"}, true},
	{ClassOOM, []string{"outofhostmemory"}, true},
	{ClassOOM, []string{"out_of_device_memory"}, true},
	{ClassOOM, []string{"out_of_host_memory"}, true},
	{ClassOOM, []string{"std::bad_alloc"}, true},
	{ClassOOM, []string{"cudamalloc failed"}, true},
	{ClassOOM, []string{"failed to allocate"}, true},
	{ClassOOM, []string{"unable to allocate"}, true},
	{ClassOOM, []string{"memory allocation", "failed"}, true},

	{ClassLoadFailed, []string{"invalid magic"}, true},
	{ClassLoadFailed, []string{"not within the file bounds"}, true},
	{ClassLoadFailed, []string{"failed to open gguf file"}, true},
	{ClassLoadFailed, []string{"failed to read magic"}, true},
	{ClassLoadFailed, []string{"failed to read key-value pairs"}, true},
	{ClassLoadFailed, []string{"failed to read tensor"}, true},
	{ClassLoadFailed, []string{"unknown model architecture"}, true},
	{ClassLoadFailed, []string{"gguf_init_from", "failed"}, true},
	{ClassLoadFailed, []string{"error loading model"}, false},
	{ClassLoadFailed, []string{"failed to load model"}, false},
	// llama-batched-bench and the other common tools: "error: unable to load model" (their
	// earlier lines, "invalid magic" among them, go through llama.cpp's asynchronous log and
	// can be lost when the tool exits at once: seen on build 11669)
	{ClassLoadFailed, []string{"unable to load model"}, false},
	// llama-quantize --imatrix FILE with a FILE it cannot read (after the GGUF reader's own
	// line, "invalid magic characters …"): build 11669
	{ClassLoadFailed, []string{"failed to load imatrix"}, false},
	// llama-perplexity --kl-divergence with a base-logits file it cannot read (it exits 0)
	{ClassLoadFailed, []string{"does not look like a file containing log-probabilities"}, true},
	{ClassLoadFailed, []string{"kl_divergence: failed to open"}, true},
	{ClassLoadFailed, []string{"kl_divergence: failed reading"}, true},

	{ClassBadArgs, []string{"error: unknown argument"}, true},
	{ClassBadArgs, []string{"error: invalid parameter for argument"}, true},
	{ClassBadArgs, []string{"error: invalid argument"}, true},
	{ClassBadArgs, []string{"error: missing argument"}, true},
	{ClassBadArgs, []string{"error: unknown value for"}, true},
	// the common argument parser (llama-perplexity …): error while handling argument "-f":
	// error: failed to open file '…'
	{ClassBadArgs, []string{"error while handling argument"}, true},
	// llama-quantize: "invalid ftype 'Q9_9'"; requantizing without --allow-requantize; a type
	// that needs an importance matrix without --imatrix (build 11669)
	{ClassBadArgs, []string{"invalid ftype"}, true},
	{ClassBadArgs, []string{"requantizing from type", "is disabled"}, true},
	{ClassBadArgs, []string{"requires an importance matrix"}, true},
	{ClassBadArgs, []string{"requires an imatrix"}, true},
	// llama-perplexity, which exits 0 after each of these: a corpus under two contexts ("you
	// need at least 256 tokens to evaluate perplexity with a context of 128", "the data file
	// you provided tokenizes to only 140 tokens"), --kl-divergence without a base file, a
	// base file made at a larger context, another vocabulary
	{ClassBadArgs, []string{"you need at least", "tokens"}, true},
	{ClassBadArgs, []string{"tokenizes to only"}, true},
	{ClassBadArgs, []string{"must provide a name of a file containing the log probabilities"}, true},
	{ClassBadArgs, []string{"has been computed with", "increase it with -c"}, true},
	{ClassBadArgs, []string{"inconsistent vocabulary"}, true},
}

// scanPrefix bounds how much of one line the classifier looks at.
const scanPrefix = 2048

// maxReason bounds a reason's length in bytes.
const maxReason = 600

type classHits struct {
	detail     string // first detail line
	lastDetail string // last detail line
	summary    string // last summary line
}

// LogScanner watches a process's output lines for llama.cpp's failure messages. It keeps a
// fixed amount of state whatever it is fed. The zero value is ready; not safe for concurrent use.
type LogScanner struct {
	hits map[Class]*classHits
	// last lines that look like an error (for the reason of a crash without a known pattern)
	hint string
	tail [3]string // last three interesting lines, oldest first
	n    int
}

// Observe feeds one normalised output line (no line end).
func (s *LogScanner) Observe(line string) {
	if len(line) > scanPrefix {
		line = line[:scanPrefix]
	}
	t := strings.TrimSpace(line)
	if t == "" || isNoise(t) {
		return
	}
	lower := strings.ToLower(t)
	for _, p := range logPatterns {
		if !containsAll(lower, p.all) {
			continue
		}
		if s.hits == nil {
			s.hits = make(map[Class]*classHits, 4)
		}
		h := s.hits[p.class]
		if h == nil {
			h = &classHits{}
			s.hits[p.class] = h
		}
		if p.detail {
			if h.detail == "" {
				h.detail = clip(t, 300)
			}
			h.lastDetail = clip(t, 300)
		} else {
			h.summary = clip(t, 300)
		}
		break
	}
	if strings.Contains(lower, "error") || strings.Contains(lower, "ggml_assert") ||
		strings.Contains(lower, "abort") || strings.Contains(lower, "fatal") ||
		strings.Contains(lower, "failed") || strings.Contains(lower, "panic") {
		s.hint = clip(t, 300)
	}
	s.tail[0], s.tail[1], s.tail[2] = s.tail[1], s.tail[2], clip(t, 200)
	s.n++
}

// Match returns the highest-priority class whose messages were seen, with llama.cpp's own
// words as the reason ("" when none).
func (s *LogScanner) Match() (Class, string) {
	for _, c := range []Class{ClassDeviceLost, ClassOOM, ClassLoadFailed, ClassBadArgs} {
		h := s.hits[c]
		if h == nil {
			continue
		}
		parts := []string{h.detail}
		if h.lastDetail != h.detail {
			parts = append(parts, h.lastDetail)
		}
		if h.summary != "" {
			parts = append(parts, h.summary)
		}
		if parts[0] == "" {
			parts = parts[1:]
		}
		return c, strings.Join(parts, " | ")
	}
	return "", ""
}

// Hint is the last line that looked like an error, else the last interesting line.
func (s *LogScanner) Hint() string {
	if s.hint != "" {
		return s.hint
	}
	return s.tail[2]
}

// isNoise: start-up lines every ggml build prints, progress lines and result rows.
func isNoise(t string) bool {
	return strings.HasPrefix(t, "ggml_backend_load_best:") || strings.HasPrefix(t, "load_backend:") ||
		strings.HasPrefix(t, "llama-bench: benchmark ") || t[0] == '{'
}

func containsAll(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// clip shortens s to at most n bytes on a rune boundary and makes it valid UTF-8.
func clip(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// ClassifyInput is everything the classification looks at.
type ClassifyInput struct {
	StartErr   error          // the process never started
	Code       int            // exit status when not signalled
	Signal     syscall.Signal // the signal that killed it, 0 if none
	Cause      StopCause      // why sparkbench ended it, if it did
	CauseNote  string         // e.g. "no output for 30s"
	GateClass  Class          // for StopGate: the class the gate asked for
	GateReason string
	Escalated  bool // SIGKILL was needed after the grace period
	Log        *LogScanner
	Bench      bool // a benchmark leg: rows are expected
	Rows       int  // result rows received
	Expected   int  // rows expected; 0 when unknown
	Malformed  int  // jsonl lines that did not parse
}

// Classify decides a leg's class and a one-line reason that quotes llama.cpp where it spoke.
func Classify(in ClassifyInput) (Class, string) {
	c, r := classify(in)
	return c, clip(r, maxReason)
}

func classify(in ClassifyInput) (Class, string) {
	log := in.Log
	if log == nil {
		log = &LogScanner{}
	}
	killed := ""
	if in.Escalated {
		killed = " (SIGKILL after the grace period)"
	}
	switch {
	case in.StartErr != nil:
		var bad *BenchArgError
		if errors.As(in.StartErr, &bad) {
			return ClassBadArgs, "sparkbench: " + bad.Msg
		}
		return ClassFailed, "could not start: " + in.StartErr.Error()
	case in.Cause == StopUser:
		return ClassStoppedByUser, "stopped by the user" + killed
	case in.Cause == StopStartTimeout, in.Cause == StopIdleTimeout, in.Cause == StopTimeout:
		r := in.CauseNote
		if r == "" {
			r = string(in.Cause)
		}
		if h := log.Hint(); h != "" {
			r += "; last output: " + h
		}
		return ClassTimeout, r + killed
	case in.Cause == StopGate:
		c := in.GateClass
		if c == "" {
			c = ClassFlagged
		}
		return c, in.GateReason
	}
	missing := in.Bench && (in.Rows == 0 || (in.Expected > 0 && in.Rows < in.Expected))
	failedRun := in.Signal != 0 || in.Code != 0
	if failedRun || missing {
		if c, r := log.Match(); c != "" {
			return c, r
		}
	}
	switch {
	case in.Signal != 0:
		r := "killed by " + SignalName(in.Signal)
		if in.Signal == syscall.SIGKILL {
			r += " from outside sparkbench (the kernel's OOM killer sends it)"
		}
		if h := log.Hint(); h != "" {
			r += "; last output: " + h
		}
		return ClassCrashed, r
	case in.Code != 0:
		r := fmt.Sprintf("exited with status %d", in.Code)
		if h := log.Hint(); h != "" {
			r += ": " + h
		}
		return ClassFailed, r
	case missing:
		var r string
		if in.Expected > 0 {
			r = fmt.Sprintf("exited 0 with %d of %d result rows", in.Rows, in.Expected)
		} else {
			r = "exited 0 without any result row"
		}
		if in.Malformed > 0 {
			r += fmt.Sprintf("; %d malformed jsonl line(s)", in.Malformed)
		}
		if h := log.Hint(); h != "" {
			r += "; last output: " + h
		}
		return ClassIncomplete, r
	}
	return ClassOK, ""
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}

// SignalName is "SIGSEGV (segmentation fault)" style.
func SignalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n + " (" + s.String() + ")"
	}
	return fmt.Sprintf("signal %d (%s)", int(s), s.String())
}
