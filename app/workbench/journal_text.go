package workbench

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/app/quant/quantrun"
	"sparkbench/app/study"
	"sparkbench/store"
)

// The journal as people read it: one sentence per entry, made by JournalSentence from the
// entry's kind and payload — the one renderer the window's timeline, its search and the CLI
// use. The payload itself stays one click away; the sentence never replaces it.

// jmap is a decoded payload with lenient accessors: a field that is missing or of another type
// reads as its zero value, so an old entry (or one of a newer schema) still reads as a sentence.
type jmap map[string]any

func (m jmap) str(k string) string {
	s, _ := m[k].(string)
	return s
}

func (m jmap) num(k string) (float64, bool) {
	f, ok := m[k].(float64)
	return f, ok
}

func (m jmap) int(k string) int64 {
	f, _ := m[k].(float64)
	return int64(f)
}

func (m jmap) obj(k string) jmap {
	o, _ := m[k].(map[string]any)
	return o
}

func (m jmap) list(k string) []any {
	l, _ := m[k].([]any)
	return l
}

// or is s, or def when s is empty.
func or(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// clip shortens s to n runes, with an ellipsis.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// figure prints a number as people write it: no trailing zeros, at most 4 significant digits
// after the point for small values.
func figure(v float64) string {
	switch {
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	default:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.4g", v), "0"), ".")
	}
}

// legSpan is the duration between a payload's started_at and ended_at, as "0.48 s" ("" when
// either is missing).
func legSpan(m jmap) string {
	a, errA := time.Parse(time.RFC3339Nano, m.str("started_at"))
	b, errB := time.Parse(time.RFC3339Nano, m.str("ended_at"))
	if errA != nil || errB != nil || b.Before(a) {
		return ""
	}
	d := b.Sub(a).Seconds()
	if d >= 100 {
		return fmt.Sprintf("%.0f s", d)
	}
	return fmt.Sprintf("%.2f s", d)
}

func legName(m jmap) string {
	label := or(m.str("label"), fmt.Sprintf("%d", m.int("leg")))
	if k := m.str("kind"); k != "" && k != store.LegKindBench && !strings.Contains(label, k) {
		return k + " leg " + label
	}
	return "leg " + label
}

func legFinished(m jmap) string {
	var rows []string
	for _, f := range []struct{ key, word string }{{"bench_rows", "row"}, {"request_rows", "request"}, {"batched_rows", "batched row"}, {"telemetry_rows", "telemetry sample"}} {
		if n := m.int(f.key); n > 0 || (f.key == "bench_rows" && m.int("request_rows") == 0 && m.int("batched_rows") == 0) {
			s := fmt.Sprintf("%d %s", n, f.word)
			if n != 1 {
				s += "s"
			}
			rows = append(rows, s)
		}
	}
	state, class := m.str("state"), m.str("class")
	verb := or(state, "finished")
	s := fmt.Sprintf("%s %s", legName(m), verb)
	if class != "" {
		s += " " + class
	}
	s += ": " + strings.Join(rows, ", ")
	if d := legSpan(m); d != "" {
		s += " in " + d
	}
	if r := m.str("reason"); r != "" {
		s += " (" + clip(r, 80) + ")"
	}
	return s
}

func legStarted(m jmap) string {
	s := legName(m) + " started"
	if argv := m.list("argv"); len(argv) > 0 {
		if bin, ok := argv[0].(string); ok {
			s += ": " + bin[strings.LastIndex(bin, "/")+1:]
			if len(argv) > 1 {
				s += fmt.Sprintf(" with %d arguments", len(argv)-1)
			}
		}
	}
	if c := m.list("conditions"); len(c) > 0 {
		s += fmt.Sprintf(", under %d declared condition(s)", len(c))
	}
	return s
}

func rowsMarked(m jmap) string {
	return fmt.Sprintf("leg %d's %d row(s) marked: %d counted, %d flagged, %d discarded", m.int("leg"), m.int("rows"), m.int("result"), m.int("flagged"), m.int("discarded"))
}

func verdictSentence(m jmap) string {
	key, outcome := or(m.str("key"), "a prediction"), m.str("outcome")
	s := fmt.Sprintf("%s: %s", key, outcome)
	if v, ok := m.num("observed"); ok {
		s += " at " + figure(v)
	}
	if d := m.obj("detail"); d != nil {
		if e := d.str("expected"); e != "" && !strings.HasPrefix(e, "question") {
			s += " (expected " + e + ")"
		}
	}
	return s
}

func humanVerdict(m jmap) string {
	s := fmt.Sprintf("%s: human verdict %s", or(m.str("key"), "a prediction"), m.str("outcome"))
	if a := m.str("author"); a != "" {
		s += " by " + a
	}
	if r := m.str("rationale"); r != "" {
		s += ": " + clip(r, 120)
	}
	return s
}

func findingSentence(m jmap) string {
	text := or(m.str("title"), m.str("body"))
	s := fmt.Sprintf("finding %s: %s", or(m.str("label"), fmt.Sprintf("F%d", m.int("number"))), clip(text, 140))
	if n := len(m.list("legs")); n > 0 {
		s += fmt.Sprintf(" (%d leg(s)", n)
		if p := len(m.list("predictions")); p > 0 {
			s += fmt.Sprintf(", %d prediction(s)", p)
		}
		s += ")"
	}
	return s
}

func incompleteLegs(m jmap, key, noun string) string {
	items := m.list(key)
	var names []string
	for _, it := range items {
		if o, ok := it.(map[string]any); ok {
			j := jmap(o)
			names = append(names, or(j.str("leg"), j.str("key"))+" ("+j.str("class")+")")
		}
	}
	return fmt.Sprintf("the run ended incomplete: %d %s without results: %s", len(items), noun, clip(strings.Join(names, ", "), 140))
}

func selectedPoints(m jmap) string {
	var parts []string
	for _, it := range m.list("selected") {
		o, ok := it.(map[string]any)
		if !ok {
			continue
		}
		j := jmap(o)
		p, hasP := j.num("slots")
		c, hasC := j.num("clients")
		if hasP && hasC {
			parts = append(parts, fmt.Sprintf("%s at P%d/C%d", j.str("candidate"), int(p), int(c)))
		} else {
			parts = append(parts, j.str("candidate")+": none selected")
		}
	}
	if len(parts) == 0 {
		return "capacity study assembled"
	}
	return "capacity study assembled: " + strings.Join(parts, "; ")
}

// journalSentences is the renderer of each known kind.
var journalSentences = map[string]func(jmap) string{
	store.KindStudyCreated: func(m jmap) string {
		return fmt.Sprintf("%s study %q created", or(m.str("kind"), "a"), m.str("name"))
	},
	store.KindStudyStatus: func(m jmap) string {
		if r := m.str("reason"); r != "" {
			return "status: " + or(m.str("status"), "?") + ": " + r
		}
		return "status: " + or(m.str("status"), "?")
	},
	store.KindPlanRegistered: func(m jmap) string {
		return "plan registered and frozen, sha256 " + shortHash(m.str("plan_sha256"))
	},
	store.KindPredictionRegistered: func(m jmap) string {
		return fmt.Sprintf("prediction %s (%s) registered: %s", m.str("key"), m.str("kind"), clip(m.str("text"), 140))
	},
	store.KindAmendment: func(m jmap) string {
		return fmt.Sprintf("amendment of %s: %s", or(m.str("target"), "the plan"), clip(m.str("reason"), 140))
	},
	store.KindDeviation: func(m jmap) string {
		return "deviation recorded: " + clip(m.str("description"), 140)
	},
	store.KindLegStarted:   legStarted,
	store.KindLegFinished:  legFinished,
	store.KindRowsMarked:   rowsMarked,
	store.KindVerdict:      verdictSentence,
	store.KindHumanVerdict: humanVerdict,
	store.KindFinding:      findingSentence,
	store.KindLeaseTakenOver: func(m jmap) string {
		h := m.obj("holder")
		return fmt.Sprintf("run lease taken over from process %d (host %s, since %s), which no longer ran", h.int("pid"), or(h.str("host"), "?"), or(h.str("since"), "?"))
	},
	KindTrustCache: func(m jmap) string {
		return "the run took its models' hashes from the notebook's cache (" + or(m.str("by"), "--trust-cache") +
			"), not from the files: a model written in place with its size, mtime, inode and ctime put back would not be noticed"
	},
	store.KindArtefactRecorded: func(m jmap) string {
		verb := "model record updated"
		if b, _ := m["created"].(bool); b {
			verb = "model recorded"
		}
		sum := m.str("sha256")
		if len(sum) > 16 {
			sum = sum[:16] + "…"
		}
		return fmt.Sprintf("%s: %s (%s bytes, SHA-256 %s)", verb, m.str("path"), m.str("size_bytes"), or(sum, "not computed yet"))
	},
	store.KindReceiptExported: func(m jmap) string {
		return fmt.Sprintf("receipt exported (%s, %d bytes) to %s", m.str("format"), m.int("bytes"), m.str("path"))
	},
	study.NotePlanSource: func(m jmap) string { return "plan file: " + m.str("plan_file") },
	study.NoteBandwidth: func(m jmap) string {
		v, _ := m.num("gbs")
		return fmt.Sprintf("memory bandwidth measured: %s GB/s", figure(v))
	},
	study.NoteHalted: func(m jmap) string {
		s := "the run halted"
		if l := m.str("leg"); l != "" {
			s += " at leg " + l
		}
		return s + ": " + clip(m.str("reason"), 140)
	},
	study.NoteRun: func(m jmap) string {
		return fmt.Sprintf("run started with %d of %d legs already finished", m.int("legs_done"), m.int("legs_total")) + samplersText(m)
	},
	study.NoteIncomplete: func(m jmap) string { return incompleteLegs(m, "legs", "leg(s)") },
	study.NoteAdaptive: func(m jmap) string {
		met := "not met"
		if b, _ := m["met"].(bool); b {
			met = "met"
		}
		return fmt.Sprintf("adaptive repetitions over %d leg(s): stopping rule %s", len(m.list("legs")), met)
	},
	study.NoteLegLaunch: legLaunch,
	study.EntryKVKLD: func(m jmap) string {
		v, _ := m.num("mean_kld")
		return fmt.Sprintf("KV cache %s on %s: mean KLD %s against f16", m.str("kv"), m.str("model"), figure(v))
	},
	capacity.NoteAssembled: selectedPoints,
	capacity.NoteRun:       func(m jmap) string { return "capacity run started in " + m.str("run_dir") + samplersText(m) },
	capacity.NoteResumed: func(m jmap) string {
		return fmt.Sprintf("capacity run resumed: %d of %d server lifetimes skipped", m.int("lifetimes_skipped"), m.int("lifetimes_total"))
	},
	capacity.NoteIncomplete:  func(m jmap) string { return incompleteLegs(m, "lifetimes", "server lifetime(s)") },
	capacity.NoteValidity:    servingValidity,
	capacity.NoteNetwork:     networkPath,
	quantrun.EntryStarted:    func(m jmap) string { return "ladder run started, plan sha256 " + shortHash(m.str("plan_sha256")) },
	quantrun.EntryProvenance: func(jmap) string { return "ladder run: the build and machine recorded" },
	quantrun.EntryRecord: func(m jmap) string {
		r := m.obj("record")
		return fmt.Sprintf("ladder candidate %s measured (%s bits per weight, %d bytes)", r.str("type"), figure(numOr(r, "bits_per_weight")), r.int("bytes"))
	},
	quantrun.EntryStale: func(m jmap) string {
		return fmt.Sprintf("cached %s set aside: it no longer hashed as recorded", or(m.str("type"), "file"))
	},
	quantrun.EntryImatrix: func(m jmap) string { return "importance matrix recorded, sha256 " + shortHash(m.str("sha256")) },
	quantrun.EntryAssembled: func(m jmap) string {
		return fmt.Sprintf("ladder assembled: %s selected, runner-up %s", or(m.str("selected"), "none"), or(m.str("runner_up"), "none"))
	},
	EntryHandOff:           func(m jmap) string { return "capacity plan handed off: " + m.str("capacity_plan") },
	store.KindHostRecorded: hostRecorded,
}

// hostRecorded is a bench host added, changed or removed in the notebook's hosts list.
func hostRecorded(m jmap) string {
	s := fmt.Sprintf("bench host %s %s", m.str("name"), or(m.str("action"), "recorded"))
	if m.str("action") == store.HostRemoved {
		return s + " from the hosts list"
	}
	return s + fmt.Sprintf(" (ssh %s, llama.cpp in %s)", m.str("ssh"), m.str("llama_dir"))
}

func numOr(m jmap, k string) float64 {
	v, _ := m.num(k)
	return v
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return or(h, "?")
}

// JournalKinds lists every entry kind JournalSentence has a sentence for, sorted.
func JournalKinds() []string {
	out := make([]string, 0, len(journalSentences))
	for k := range journalSentences {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// JournalSentence is the one sentence an entry reads as. An unknown kind, or a payload that is
// not a JSON object, reads as its kind and a note that the payload holds the details.
func JournalSentence(kind string, payload []byte) string {
	f := journalSentences[kind]
	var m jmap
	if err := json.Unmarshal(payload, &m); err != nil || f == nil {
		return kind + " entry (see its payload)"
	}
	return f(m)
}

// JournalTone groups kinds for colour: "study" (lifecycle), "leg", "prediction", "verdict",
// "finding", "receipt", "warning" (halts, incomplete runs, deviations, stale caches) and
// "other".
func JournalTone(kind string) string {
	switch kind {
	case study.NoteHalted, study.NoteIncomplete, capacity.NoteIncomplete, store.KindDeviation, quantrun.EntryStale, KindTrustCache:
		return "warning"
	case store.KindLegStarted, store.KindLegFinished, store.KindRowsMarked, study.NoteLegLaunch:
		return "leg"
	case store.KindPredictionRegistered, store.KindAmendment:
		return "prediction"
	case store.KindVerdict, store.KindHumanVerdict:
		return "verdict"
	case store.KindFinding:
		return "finding"
	case store.KindReceiptExported, EntryHandOff:
		return "receipt"
	}
	if _, ok := journalSentences[kind]; ok {
		return "study"
	}
	return "other"
}

// samplersText is a run note's telemetry samplers in words ("" without them): those that
// read, and how many did not (the payload says why).
func samplersText(m jmap) string {
	list := m.list("samplers")
	if list == nil {
		return ""
	}
	var read []string
	for _, x := range list {
		if s, ok := x.(map[string]any); ok {
			if a, _ := s["available"].(bool); a {
				name, _ := s["source"].(string)
				read = append(read, name)
			}
		}
	}
	if len(read) == 0 {
		return fmt.Sprintf("; telemetry: no sampler available (%d tried)", len(list))
	}
	return fmt.Sprintf("; telemetry: %s read, %d not available", strings.Join(read, ", "), len(list)-len(read))
}

// legLaunch is a leg run under the plan's launch wrapper: the wrapper and the affinity read.
func legLaunch(m jmap) string {
	var w []string
	for _, a := range m.list("wrapper") {
		if s, ok := a.(string); ok {
			w = append(w, s)
		}
	}
	s := fmt.Sprintf("leg %s launched under %s", m.str("label"), strings.Join(w, " "))
	if a := m.obj("affinity"); a != nil {
		return s + fmt.Sprintf(": llama-bench (PID %d, %s) may run on CPUs %s", a.int("pid"), a.str("how"), a.str("cpus_allowed_list"))
	}
	return s + ": affinity " + m.str("affinity_error")
}
