package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sparkbench/app/study"
	"sparkbench/store"
)

// Fault matrix, text and journal (issue 15): control characters in free text (defect 8),
// a journal whose tail was deleted (the anchor and --expect-head), and near-miss verbs. Each
// case drives the real CLI in-process on its own copy of a notebook that ran the demo study
// on the real llama-bench, and asserts the exit status, the exact output, and — where nothing
// should be written — that every table's row count and the journal head are unchanged.

// rawControl matches a control character that must never reach a terminal or a receipt raw
// (tab and newline are layout).
var rawControl = regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]")

type faultEnv struct {
	dir, nb, id string
	vars        map[string]string // {NB}, {ID}, … for the expected output
}

func (e *faultEnv) expand(s string) string {
	for k, v := range e.vars {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// copyNotebook copies a closed notebook (and its WAL, SHM and anchor, when present).
func copyNotebook(t *testing.T, from, to string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm", ".anchor"} {
		b, err := os.ReadFile(from + suffix)
		if os.IsNotExist(err) && suffix != "" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteJournalTail deletes the journal's entries after seq keep, as a tamperer would
// (behind the append-only trigger's back), and returns the deleted head's seq and hash.
func deleteJournalTail(t *testing.T, nb string, keep int64) (int64, string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+nb+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var seq int64
	var head string
	if err := db.QueryRow("SELECT seq, hash FROM journal ORDER BY seq DESC LIMIT 1").Scan(&seq, &head); err != nil {
		t.Fatal(err)
	}
	if seq <= keep {
		t.Fatalf("the journal has %d entries, fewer than the %d kept", seq, keep)
	}
	for _, q := range []string{"DROP TRIGGER journal_no_delete", fmt.Sprintf("DELETE FROM journal WHERE seq > %d", keep)} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return seq, head
}

func journalHead(t *testing.T, nb string) (int64, string) {
	t.Helper()
	st := notebookCounts(t, nb)
	return st.JournalSeq, st.JournalHead
}

// anchorVars reads the notebook's anchor file: {ANCHOR_SEQ}, {ANCHOR_HEAD}, {ANCHOR_AT}.
func anchorVars(t *testing.T, e *faultEnv) {
	t.Helper()
	b, err := os.ReadFile(e.nb + ".anchor")
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Seq       int64  `json:"seq"`
		Head      string `json:"head"`
		WrittenAt string `json:"written_at"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339Nano, a.WrittenAt)
	if err != nil {
		t.Fatal(err)
	}
	e.vars["ANCHOR_SEQ"], e.vars["ANCHOR_HEAD"], e.vars["ANCHOR_AT"] = fmt.Sprint(a.Seq), a.Head, at.UTC().Format("2006-01-02 15:04:05Z")
}

func TestFaultMatrixText(t *testing.T) {
	base := t.TempDir()
	fixture, id := demoNotebook(t, filepath.Join(base, "home", "al"))
	// Rows as an older version stored them (or an import brought them): control characters
	// in a finding, a human verdict's rationale and a deviation, written through the store.
	func() {
		nb, err := store.Open(fixture)
		if err != nil {
			t.Fatal(err)
		}
		defer nb.Close()
		ctx := context.Background()
		var sid int64
		fmt.Sscan(id, &sid)
		rec := store.StudyRecorder{N: nb}
		if _, err := rec.AddFinding(ctx, sid, study.FindingRecord{Text: "old \x1b[31mred\x1b[0m finding\x07 | ok"}); err != nil {
			t.Fatal(err)
		}
		if err := rec.RecordHumanVerdict(ctx, sid, study.HumanVerdict{Prediction: "P1", Outcome: "NOTE", Rationale: "title \x1b]0;pwned\x07 set", Author: "old\u009bversion"}); err != nil {
			t.Fatal(err)
		}
		if err := rec.AddDeviation(ctx, sid, study.DeviationRecord{Description: "cr\rover written", Detail: map[string]any{"kind": "note"}}); err != nil {
			t.Fatal(err)
		}
	}()
	// No anchor in the fixture: each case starts as a notebook written before anchors existed,
	// unless its setup makes one.
	os.Remove(fixture + ".anchor")

	refused := func(cmd, msg string) string { return "sparkbench " + cmd + ": " + msg + "\n" }
	ctrl := func(field, char string, at int, allowed string) string {
		return fmt.Sprintf("%s contains the control character %s at byte %d; remove it (%s)", field, char, at, allowed)
	}
	const prose, line = "tabs and newlines are allowed", "it is one line: no tab or newline either"

	type faultCase struct {
		name  string
		setup func(t *testing.T, e *faultEnv)
		args  []string // {NB}, {ID} expanded
		code  int
		// stdout and stderr, exact after expansion; "*" for any (then check says what holds)
		stdout, stderr string
		unchanged      bool // every table and the journal head unchanged
		check          func(t *testing.T, e *faultEnv, stdout string)
	}
	writeAnchor := func(t *testing.T, e *faultEnv) {
		// What a writing command does when it closes the notebook, and verify when intact.
		if code, out, errOut := runCLI("notebook", "verify", "--notebook", e.nb); code != 0 {
			t.Fatalf("verify: %d %s %s", code, out, errOut)
		}
		anchorVars(t, e)
	}
	cases := []faultCase{
		// Defect 8, input: refused naming the field, the character and its byte; nothing written.
		{name: "finding ESC", args: []string{"finding", "add", "{ID}", "--text", "abcd\x1b[2J", "--notebook", "{NB}"}, code: 2,
			stderr: refused("finding add", ctrl("finding text", "U+001B (ESC)", 5, prose)), unchanged: true},
		{name: "finding CR", args: []string{"finding", "add", "{ID}", "--text", "dos line\r\n", "--notebook", "{NB}"}, code: 2,
			stderr: refused("finding add", ctrl("finding text", "U+000D (CR, carriage return)", 9, prose)), unchanged: true},
		{name: "finding C1 CSI", args: []string{"finding", "add", "{ID}", "--text", "é\u009b2J", "--notebook", "{NB}"}, code: 2,
			stderr: refused("finding add", ctrl("finding text", "U+009B (CSI)", 3, prose)), unchanged: true},
		{name: "finding DEL", args: []string{"finding", "add", "{ID}", "--text", "x\x7f", "--notebook", "{NB}"}, code: 2,
			stderr: refused("finding add", ctrl("finding text", "U+007F (DEL)", 2, prose)), unchanged: true},
		{name: "finding not UTF-8", args: []string{"finding", "add", "{ID}", "--text", "latin1 caf\xe9", "--notebook", "{NB}"}, code: 2,
			stderr: refused("finding add", "finding text is not valid UTF-8: byte 11 is 0xe9; write it as UTF-8 text"), unchanged: true},
		{name: "verdict rationale BEL", args: []string{"verdict", "{ID}", "--prediction", "P1", "--human", "PASS", "--why", "ding\x07", "--notebook", "{NB}"}, code: 2,
			stderr: refused("verdict", ctrl("verdict rationale", "U+0007 (BEL)", 5, prose)), unchanged: true},
		{name: "verdict author tab", args: []string{"verdict", "{ID}", "--prediction", "P1", "--human", "PASS", "--why", "ok", "--author", "al\tice", "--notebook", "{NB}"}, code: 2,
			stderr: refused("verdict", ctrl("verdict author", "U+0009 (HT, tab)", 3, line)), unchanged: true},
		{name: "amend reason ESC", args: []string{"amend", "{ID}", "--prediction", "P1", "--set-lo", "900", "--reason", "\x1b[8mhidden", "--notebook", "{NB}"}, code: 2,
			stderr: refused("amend", ctrl("amendment reason", "U+001B (ESC)", 1, prose)), unchanged: true},
		{name: "deviation reason ESC", args: []string{"amend", "{ID}", "--prediction", "P1", "--set-lo", "900", "--reason", "late \x1b[8m", "--as-deviation", "--notebook", "{NB}"}, code: 2,
			stderr: refused("amend", ctrl("deviation reason", "U+001B (ESC)", 6, prose)), unchanged: true},
		{name: "amend new text NUL", args: []string{"amend", "{ID}", "--prediction", "P1", "--set-text", "faster\x00", "--reason", "typo", "--notebook", "{NB}"}, code: 2,
			stderr: refused("amend", ctrl("new prediction text", "U+0000 (NUL)", 7, prose)), unchanged: true},
		// Tabs and newlines are prose: accepted (and shown).
		{name: "finding tab and newline accepted", args: []string{"finding", "add", "{ID}", "--text", "two lines:\n\tindented", "--notebook", "{NB}"}, code: 0,
			stdout: "study {ID}: F2 recorded\n"},

		// Defect 8, output: rows stored raw are escaped in study show and receipt.md.
		{name: "study show escapes stored text", args: []string{"study", "show", "{ID}", "--notebook", "{NB}"}, code: 0, stdout: "*", unchanged: true,
			check: func(t *testing.T, e *faultEnv, out string) {
				if loc := rawControl.FindStringIndex(out); loc != nil {
					t.Errorf("raw control character at byte %d: %q", loc[0], out[max(0, loc[0]-20):min(len(out), loc[1]+20)])
				}
				for _, want := range []string{"  F1 old \\x1b[31mred\\x1b[0m finding\\x07 | ok\n", "NOTE: title \\x1b]0;pwned\\x07 set", "DEVIATION: cr\\x0dover written\n"} {
					if !strings.Contains(out, want) {
						t.Errorf("study show lacks %q:\n%s", want, out)
					}
				}
			}},
		{name: "receipt escapes stored text", args: []string{"receipt", "{ID}", "--notebook", "{NB}", "--out", "{DIR}/receipt"}, code: 0, stdout: "*",
			check: func(t *testing.T, e *faultEnv, _ string) {
				md, err := os.ReadFile(filepath.Join(e.dir, "receipt", "receipt.md"))
				if err != nil {
					t.Fatal(err)
				}
				if loc := rawControl.FindIndex(md); loc != nil {
					t.Errorf("receipt.md: raw control character at byte %d: %q", loc[0], md[max(0, loc[0]-20):min(len(md), loc[1]+20)])
				}
				for _, want := range []string{"| F1 | old \\x1b\\[31mred\\x1b\\[0m finding\\x07 \\| ok |", "title \\x1b\\]0;pwned\\x07 set", "old\\u009bversion", "| DEVIATION | crover written |"} {
					if !strings.Contains(string(md), want) {
						t.Errorf("receipt.md lacks %q", want)
					}
				}
				if code, out, errOut := runCLI("verify", filepath.Join(e.dir, "receipt")); code != 0 {
					t.Errorf("verify the escaped receipt: %d\n%s\n%s", code, out, errOut)
				}
			}},

		// Journal truncation: the anchor and --expect-head.
		{name: "verify writes the first anchor", args: []string{"notebook", "verify", "--notebook", "{NB}"}, code: 0, stdout: "*", unchanged: true,
			check: func(t *testing.T, e *faultEnv, out string) {
				seq, head := journalHead(t, e.nb)
				anchorVars(t, e)
				if e.vars["ANCHOR_SEQ"] != fmt.Sprint(seq) || e.vars["ANCHOR_HEAD"] != head || !strings.HasSuffix(out, fmt.Sprintf("head entry %d %s\n", seq, head)) || strings.Count(out, "\n") != 1 {
					t.Errorf("anchor %v after verify of head %d %s:\n%s", e.vars, seq, head, out)
				}
			}},
		{name: "verify with the anchor at the head", setup: writeAnchor, args: []string{"notebook", "verify", "--notebook", "{NB}"}, code: 0,
			stdout: "notebook {NB}: intact: {ENTRIES} journal entries, {LEGS} legs' samples re-hashed ({ROWS} rows), {RECORDS} records held to their entries, SQLite integrity check ok; head entry {SEQ} {HEAD}\n" +
				"the anchor notebook.db.anchor (written {ANCHOR_AT}) saw entry {SEQ}: the chain still holds it (it is the head)\n", unchanged: true},
		{name: "tail deleted: anchor says truncated", args: []string{"notebook", "verify", "--notebook", "{NB}"},
			setup: func(t *testing.T, e *faultEnv) {
				writeAnchor(t, e)
				seq, _ := journalHead(t, e.nb)
				deleteJournalTail(t, e.nb, seq-3)
			}, code: 1,
			stdout: "notebook {NB}: journal truncated: the anchor (notebook.db.anchor, written {ANCHOR_AT}) saw entry {ANCHOR_SEQ} with head {ANCHOR_HEAD}, " +
				"but the journal ends at entry {SEQ} (head {HEAD}); entries were deleted: keep this file and its anchor as evidence and restore from a backup (if you restored an older copy on purpose, move the anchor away)\n",
			unchanged: true,
			check: func(t *testing.T, e *faultEnv, _ string) {
				if b, _ := os.ReadFile(e.nb + ".anchor"); !strings.Contains(string(b), e.vars["ANCHOR_HEAD"]) {
					t.Errorf("the anchor was moved off the deleted head: %s", b)
				}
			}},
		{name: "tail deleted then a writing command: anchor says rewritten", args: []string{"notebook", "verify", "--notebook", "{NB}"},
			setup: func(t *testing.T, e *faultEnv) {
				writeAnchor(t, e)
				seq, _ := journalHead(t, e.nb)
				deleteJournalTail(t, e.nb, seq-1)
				if code, out, errOut := runCLI("finding", "add", e.id, "--text", "written after the deletion", "--notebook", e.nb); code != 0 {
					t.Fatalf("finding add: %d %s %s", code, out, errOut)
				}
			}, code: 1,
			stdout: "notebook {NB}: journal rewritten: the anchor (notebook.db.anchor, written {ANCHOR_AT}) saw entry {ANCHOR_SEQ} with head {ANCHOR_HEAD}, " +
				"but the journal's entry {SEQ} has hash {HEAD}; entries were deleted and others written in their place, or this is another notebook: keep this file and its anchor as evidence and restore from a backup (if you restored an older copy on purpose, move the anchor away)\n",
			unchanged: true},
		{name: "tail deleted, no anchor: --expect-head of the deleted head", args: []string{"notebook", "verify", "--expect-head", "{DELETED}", "--notebook", "{NB}"},
			setup: func(t *testing.T, e *faultEnv) {
				seq, _ := journalHead(t, e.nb)
				_, deleted := deleteJournalTail(t, e.nb, seq-2)
				e.vars["DELETED"] = deleted
			}, code: 1,
			stdout:    "notebook {NB}: journal truncated or rewritten: the expected head {DELETED} is not in the journal, which ends at entry {SEQ} (head {HEAD}); entries after it were deleted, or this is another notebook: keep this file as evidence and restore from a backup\n",
			unchanged: true},
		{name: "--expect-head of an earlier entry", args: []string{"notebook", "verify", "--expect-head", "{EARLIER}", "--notebook", "{NB}"},
			setup: func(t *testing.T, e *faultEnv) {
				seq, _ := journalHead(t, e.nb)
				nb, err := store.OpenWith(e.nb, store.Options{ReadOnly: true})
				if err != nil {
					t.Fatal(err)
				}
				defer nb.Close()
				es, err := nb.Journal(context.Background(), 0, seq-3, 1)
				if err != nil || len(es) != 1 {
					t.Fatal(err, es)
				}
				e.vars["EARLIER"] = strings.ToUpper(es[0].Hash) // as someone copied it
				e.vars["EARLIER_LOW"] = es[0].Hash
				e.vars["EARLIER_SEQ"] = fmt.Sprint(es[0].Seq)
			}, code: 0,
			stdout: "notebook {NB}: intact: {ENTRIES} journal entries, {LEGS} legs' samples re-hashed ({ROWS} rows), {RECORDS} records held to their entries, SQLite integrity check ok; head entry {SEQ} {HEAD}\n" +
				"expected head {EARLIER_LOW} is entry {EARLIER_SEQ} of the chain (2 entries were journaled after it)\n", unchanged: true},
		{name: "--expect-head not a hash", args: []string{"notebook", "verify", "--expect-head", "9f3a", "--notebook", "{NB}"}, code: 2,
			stderr: "sparkbench notebook verify: --expect-head \"9f3a\" is not a journal head: want the 64 hex digits `notebook verify` printed (\"head entry N HASH\")\n", unchanged: true},
		{name: "junk anchor", args: []string{"notebook", "verify", "--notebook", "{NB}"},
			setup: func(t *testing.T, e *faultEnv) { os.WriteFile(e.nb+".anchor", []byte("{\"seq\":"), 0o600) }, code: 1,
			stdout:    "notebook {NB}: the anchor {NB}.anchor cannot be read: {NB}.anchor is not an anchor: unexpected EOF; it holds the last journal head seen, to detect deleted entries: restore it, or move it away to start a new one from this head\n",
			unchanged: true},

		// Vague messages: verbs under the wrong command, near misses.
		{name: "notebook import", args: []string{"notebook", "import", "--notebook", "{NB}", "bench.jsonl"}, code: 2,
			stderr: "sparkbench notebook: unknown sub-command \"import\"; the command is \"sparkbench import\" (usage: sparkbench import [--study S] FILE…)\n", unchanged: true},
		{name: "notebook export", args: []string{"notebook", "export", "{ID}", "--notebook", "{NB}"}, code: 2,
			stderr: "sparkbench notebook: unknown sub-command \"export\"; the command is \"sparkbench export\" (usage: sparkbench export STUDY [--format csv|json] [--rows bench|requests])\n", unchanged: true},
		{name: "notebook stat", args: []string{"notebook", "stat", "--notebook", "{NB}"}, code: 2,
			stderr: "sparkbench notebook: unknown sub-command \"stat\"; did you mean \"stats\"? (sub-commands: verify, path, stats, backup)\n", unchanged: true},
		{name: "notebook show", args: []string{"notebook", "show", "{ID}", "--notebook", "{NB}"}, code: 2,
			stderr: "sparkbench notebook: unknown sub-command \"show\"; it is a verb of another command: \"sparkbench study show\" or \"sparkbench capacity show\"\n", unchanged: true},
		{name: "stduy", args: []string{"stduy", "show", "{ID}", "--notebook", "{NB}"}, code: 2,
			stderr: "sparkbench: unknown command \"stduy\"; did you mean \"study\"? (run `sparkbench help` for the list)\n", unchanged: true},
		{name: "Study", args: []string{"Study", "show", "{ID}"}, code: 2,
			stderr: "sparkbench: unknown command \"Study\"; did you mean \"study\"? (run `sparkbench help` for the list)\n"},
		{name: "verb as a command", args: []string{"show", "{ID}", "--notebook", "{NB}"}, code: 2,
			stderr: "sparkbench: unknown command \"show\"; it is a verb: did you mean \"sparkbench study show\" or \"sparkbench capacity show\"? (run `sparkbench help` for the list)\n", unchanged: true},
		{name: "study shwo", args: []string{"study", "shwo", "{ID}", "--notebook", "{NB}"}, code: 2,
			stderr: "sparkbench study: unknown verb \"shwo\"; did you mean \"show\"? (verbs: validate, register, run, show, compare)\n", unchanged: true},
		{name: "study reg", args: []string{"study", "reg", "plan.json", "--notebook", "{NB}"}, code: 2,
			stderr: "sparkbench study: unknown verb \"reg\"; did you mean \"register\"? (verbs: validate, register, run, show, compare)\n", unchanged: true},
		{name: "study import", args: []string{"study", "import", "bench.jsonl", "--notebook", "{NB}"}, code: 2,
			stderr: "sparkbench study: unknown verb \"import\"; the command is \"sparkbench import\" (usage: sparkbench import [--study S] FILE…)\n", unchanged: true},
		{name: "study assemble", args: []string{"study", "assemble"}, code: 2,
			stderr: "sparkbench study: unknown verb \"assemble\"; it is a verb of another command: \"sparkbench capacity assemble\"\n"},
		{name: "capacity verfy", args: []string{"capacity", "valdate", "plan.json"}, code: 2,
			stderr: "sparkbench capacity: unknown verb \"valdate\"; did you mean \"validate\"? (verbs: validate, assemble, register, run, show, presets, compare)\n"},
		{name: "model inspct", args: []string{"model", "inspct", "m.gguf"}, code: 2,
			stderr: "sparkbench model: unknown verb \"inspct\"; did you mean \"inspect\"? (verbs: inspect, verify)\n"},
		{name: "leg rn", args: []string{"leg", "rn", "--", "-m", "m.gguf"}, code: 2,
			stderr: "sparkbench leg: unknown verb \"rn\"; did you mean \"run\"? (verbs: run)\n"},
		{name: "finding ad", args: []string{"finding", "ad", "{ID}", "--text", "x", "--notebook", "{NB}"}, code: 2,
			stderr: "sparkbench finding: unknown verb \"ad\"; did you mean \"add\"? (verbs: add)\n", unchanged: true},
		{name: "analyze slop", args: []string{"analyze", "slop", "--points", "0:1,8:2"}, code: 2,
			stderr: "sparkbench analyze: unknown figure \"slop\"; did you mean \"slope\"? (figures: crossing, slope, ceiling)\n"},
		{name: "notebook imprt", args: []string{"notebook", "imprt", "x.jsonl"}, code: 2,
			stderr: "sparkbench notebook: unknown sub-command \"imprt\"; did you mean the command \"sparkbench import\"?\n"},
		// Nothing better to say: the command's own message, as before.
		{name: "unknown verb, no near miss", args: []string{"study", "frobnicate"}, code: 2,
			stderr: "sparkbench study: unknown verb \"frobnicate\"; want validate, register, run, show or compare\n"},
		{name: "unknown command, no near miss", args: []string{"frobnicate"}, code: 2,
			stderr: "sparkbench: unknown command \"frobnicate\"; run `sparkbench help` for the list\n"},
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &faultEnv{dir: t.TempDir(), id: id}
			e.nb = filepath.Join(e.dir, "notebook.db")
			copyNotebook(t, fixture, e.nb)
			e.vars = map[string]string{"NB": e.nb, "ID": id, "DIR": e.dir}
			if c.setup != nil {
				c.setup(t, e)
			}
			before := notebookCounts(t, e.nb)
			// What verify reports of the notebook as it is now.
			nb, err := store.OpenWith(e.nb, store.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := nb.Verify(context.Background())
			nb.Close()
			if err != nil {
				t.Fatal(err)
			}
			e.vars["ENTRIES"], e.vars["LEGS"], e.vars["ROWS"] = fmt.Sprint(rep.Entries), fmt.Sprint(rep.LegsChecked), fmt.Sprint(rep.SamplesChecked)
			e.vars["RECORDS"] = fmt.Sprint(rep.RecordsChecked)
			e.vars["SEQ"], e.vars["HEAD"] = fmt.Sprint(rep.HeadSeq), rep.Head
			args := make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = e.expand(a)
			}
			code, stdout, stderr := runCLI(args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout, stderr)
			}
			if c.stdout != "*" && stdout != e.expand(c.stdout) {
				t.Errorf("stdout:\n%q\nwant\n%q", stdout, e.expand(c.stdout))
			}
			if c.stderr != "*" && stderr != e.expand(c.stderr) {
				t.Errorf("stderr:\n%q\nwant\n%q", stderr, e.expand(c.stderr))
			}
			if c.unchanged {
				after := notebookCounts(t, e.nb)
				if !maps.Equal(before.Tables, after.Tables) || before.JournalHead != after.JournalHead || before.JournalSeq != after.JournalSeq {
					t.Errorf("the notebook changed: %v head %d %s -> %v head %d %s", before.Tables, before.JournalSeq, before.JournalHead,
						after.Tables, after.JournalSeq, after.JournalHead)
				}
			}
			if c.check != nil {
				c.check(t, e, stdout)
			}
		})
	}
	t.Logf("fault matrix (text and journal): %d cases", len(cases))
}

// TestVerbListMatchesDispatchers holds the verb list the near-miss hints use to the commands:
// every verb a usage line names is in it, every verb in it is one the command's dispatcher
// accepts (its --help answers 0 without an "unknown" message), and a verb it does not have is
// still refused.
func TestVerbListMatchesDispatchers(t *testing.T) {
	for _, c := range baseCommands() {
		v, ok := verbs[c.name]
		re := regexp.MustCompile(`(?:^|[ |])` + c.name + ` ([a-z]+(?:\|[a-z]+)*)`)
		usage := c.usage
		if c.name == "capacity" {
			usage += " | " + capacityUsage // the help line names two verbs; the command's own usage all
		}
		var named []string
		for _, m := range re.FindAllStringSubmatch(usage, -1) {
			for _, w := range strings.Split(m[1], "|") {
				if !slices.Contains(named, w) {
					named = append(named, w)
				}
			}
		}
		if !ok {
			continue
		}
		slices.Sort(named)
		list := slices.Clone(v.list)
		slices.Sort(list)
		if !slices.Equal(named, list) {
			t.Errorf("%s: usage %q names verbs %v, the hint list has %v", c.name, usage, named, list)
		}
		for _, verb := range v.list {
			code, _, errOut := runCLI(c.name, verb, "--help")
			if code != 0 || strings.Contains(errOut, "unknown") {
				t.Errorf("%s %s --help: %d %q", c.name, verb, code, errOut)
			}
		}
		if code, _, errOut := runCLI(c.name, "zzzz"); code != 2 || !strings.HasPrefix(errOut, "sparkbench "+c.name+": ") {
			t.Errorf("%s zzzz: %d %q", c.name, code, errOut)
		}
	}
}
