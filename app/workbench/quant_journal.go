package workbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/kinds"
	"sparkbench/app/quant"
	"sparkbench/app/quant/quantrun"
	"sparkbench/app/receipt"
	"sparkbench/store"
)

// A ladder's receipt carries its journal excerpt (journal.jsonl, named with the study's id by
// bundle.json's "quant" map), as a throughput or capacity study's does: every entry from the
// study's first to its last, other studies' entries between them included, so the chain can
// be re-walked anywhere and the origin notebook's chain head is kept with the bundle. Its raw
// files (records.json, provenance.json, handoffs.json) are what the excerpt's entries hold,
// written as the receipt writes them (the home folder as ~ when redacted); verify holds them
// to the excerpt, and `sparkbench import` imports the ladder from it. A ladder bundle written
// before ladder receipts carried an excerpt still verifies as it did; it is not imported.

// quantEntry is one of a ladder study's journal entries, from the notebook or an excerpt.
type quantEntry struct {
	Seq     int64
	Kind    string
	Payload json.RawMessage
}

// quantParts is what a ladder's journal holds beside its plan: the candidates' records of its
// last run, the capacity plans it handed off, and the build and machine of its latest run.
type quantParts struct {
	records    []quant.Record
	handOffs   []quant.HandOffRecord
	provenance *quant.Provenance
}

// quantJournalParts reads a ladder study's own entries, in order.
func quantJournalParts(entries []quantEntry) (quantParts, error) {
	var p quantParts
	fresh := true // the next record starts a run's set
	for _, e := range entries {
		switch e.Kind {
		case quantrun.EntryStarted: // a run's own records follow (a halted run's are its partial set)
			p.records, fresh = nil, false
		case quantrun.EntryAssembled:
			fresh = true
		case quantrun.EntryRecord:
			if fresh {
				p.records, fresh = nil, false
			}
			var x struct {
				Record quant.Record `json:"record"`
			}
			if err := json.Unmarshal(e.Payload, &x); err != nil {
				return p, fmt.Errorf("journal entry %d: %w", e.Seq, err)
			}
			p.records = append(p.records, x.Record)
		case EntryHandOff:
			var h quant.HandOffRecord
			if err := json.Unmarshal(e.Payload, &h); err != nil {
				return p, fmt.Errorf("journal entry %d: %w", e.Seq, err)
			}
			p.handOffs = append(p.handOffs, h)
		case quantrun.EntryProvenance:
			var x struct {
				Provenance quant.Provenance `json:"provenance"`
			}
			if err := json.Unmarshal(e.Payload, &x); err != nil {
				return p, fmt.Errorf("journal entry %d: %w", e.Seq, err)
			}
			p.provenance = &x.Provenance
		}
	}
	return p, nil
}

// quantRawFiles are a ladder bundle's records.json and, when there are any, handoffs.json and
// provenance.json, with home+"/" written as "~/" (home "": verbatim).
func quantRawFiles(p quantParts, home string) (receipt.Files, error) {
	files := receipt.Files{}
	add := func(name string, v any) error {
		b, err := canon.Marshal(v)
		if err != nil {
			return err
		}
		if home != "" {
			b = []byte(strings.ReplaceAll(string(b), home+"/", "~/"))
		}
		files[name] = b
		return nil
	}
	recs := p.records
	if recs == nil {
		recs = []quant.Record{}
	}
	if err := add(fileRecords, recs); err != nil {
		return nil, err
	}
	// Each only when there is one: a ladder without keeps its bundle as it was.
	if len(p.handOffs) > 0 {
		if err := add(fileHandOffs, p.handOffs); err != nil {
			return nil, err
		}
	}
	if p.provenance != nil {
		if err := add(fileProvenance, p.provenance); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// fileRecords is a ladder bundle's raw candidate records.
const fileRecords = "records.json"

// QuantExcerpt is a ladder bundle's journal excerpt, re-walked and held to its raw files.
type QuantExcerpt struct {
	StudyID    int64 // the ladder's id in the notebook the bundle was written from
	Name       string
	Journal    []receipt.JournalLine
	Chain      receipt.ChainSummary
	Registered receipt.JournalLine // the study's plan.registered
	// Home is the home folder the raw files were written with as ~ ("": written verbatim):
	// the excerpt's entries hold the paths as they were.
	Home string
	// Status is the ladder's status as its excerpt shows it: registered (never run), halted
	// (its last run did not assemble), complete or incomplete (a candidate without results).
	Status string
}

// ReadQuantExcerpt reads a ladder bundle's journal excerpt (false: the bundle has none, it
// was written before ladder receipts carried one) and holds it to the bundle: the study it
// names is a ladder, its plan.registered registered plan.json (the same canonical SHA-256),
// and its entries hold the records, hand-offs and provenance the raw files hold.
func ReadQuantExcerpt(files receipt.Files, ix *receipt.Index) (*QuantExcerpt, bool, error) {
	qi := ix.Quant
	if qi == nil {
		return nil, false, nil
	}
	b, ok := files[qi.Journal]
	if !ok {
		return nil, true, fmt.Errorf("%s: missing: %s names it as the ladder's journal excerpt", qi.Journal, receipt.FileIndex)
	}
	entries, err := receipt.ParseJournal(b)
	if err != nil {
		return nil, true, err
	}
	x := &QuantExcerpt{StudyID: qi.StudyID, Journal: entries}
	if x.Chain, err = receipt.WalkChain(entries, qi.StudyID); err != nil {
		return nil, true, err
	}
	planSHA := canon.SHA256Hex(files["plan.json"])
	var own []quantEntry
	created := false
	for _, j := range entries {
		if j.StudyID() != qi.StudyID {
			continue
		}
		switch j.Kind {
		case store.KindStudyCreated:
			var p struct {
				Name string `json:"name"`
				Kind string `json:"kind"`
			}
			if err := json.Unmarshal(j.Payload, &p); err != nil {
				return nil, true, fmt.Errorf("%s: entry %d (%s): %w", receipt.FileJournal, j.Seq, j.Kind, err)
			}
			if p.Kind != kinds.Quant {
				return nil, true, fmt.Errorf("%s: entry %d (%s): study %d is a %s study, not a quantization ladder", receipt.FileJournal, j.Seq, j.Kind, qi.StudyID, p.Kind)
			}
			created, x.Name = true, p.Name
		case store.KindPlanRegistered:
			var p struct {
				SHA256 string `json:"plan_sha256"`
			}
			if err := json.Unmarshal(j.Payload, &p); err != nil {
				return nil, true, fmt.Errorf("%s: entry %d (%s): %w", receipt.FileJournal, j.Seq, j.Kind, err)
			}
			if p.SHA256 != planSHA {
				return nil, true, fmt.Errorf("plan.json: its canonical SHA-256 is %s, the journal registered plan %s for study %d (entry %d)", planSHA, p.SHA256, qi.StudyID, j.Seq)
			}
			if x.Registered.Seq == 0 {
				x.Registered = j
			}
		}
		own = append(own, quantEntry{Seq: j.Seq, Kind: j.Kind, Payload: j.Payload})
	}
	switch {
	case !created:
		return nil, true, fmt.Errorf("%s: no study.created entry for study %d in the excerpt", receipt.FileJournal, qi.StudyID)
	case x.Registered.Seq == 0:
		return nil, true, fmt.Errorf("%s: no plan.registered entry for study %d in the excerpt", receipt.FileJournal, qi.StudyID)
	}
	parts, err := quantJournalParts(own)
	if err != nil {
		return nil, true, fmt.Errorf("%s: %w", receipt.FileJournal, err)
	}
	if x.Home, err = quantRawFilesMatch(files, parts); err != nil {
		return nil, true, err
	}
	x.Status = store.StatusRegistered
	for _, e := range own {
		switch e.Kind {
		case quantrun.EntryStarted:
			x.Status = store.StatusHalted
		case quantrun.EntryAssembled:
			x.Status = store.StatusComplete
		}
	}
	for _, r := range parts.records {
		if x.Status == store.StatusComplete && len(r.Incomplete) > 0 {
			x.Status = store.StatusIncomplete
		}
	}
	return x, true, nil
}

// quantRawFilesMatch holds the bundle's raw files to what the excerpt's entries hold: each the
// same bytes, or the same with one home folder written as ~ throughout (which it returns).
func quantRawFilesMatch(files receipt.Files, parts quantParts) (string, error) {
	want, err := quantRawFiles(parts, "")
	if err != nil {
		return "", err
	}
	home := ""
	for _, name := range []string{fileRecords, fileHandOffs, fileProvenance} {
		w, inJournal := want[name]
		got, inBundle := files[name]
		switch {
		case inJournal && !inBundle:
			return "", fmt.Errorf("%s: missing: the journal excerpt holds its entries", name)
		case !inJournal && inBundle:
			return "", fmt.Errorf("%s: the journal excerpt holds none of its entries", name)
		case !inJournal:
			continue
		}
		h, ok := redactedHome(w, got)
		if !ok || (h != "" && home != "" && h != home) {
			return "", fmt.Errorf("%s: not what the journal excerpt's entries hold (not even with one home folder written as ~): the bundle's raw files are not the ladder's", name)
		}
		if h != "" {
			home = h
		}
	}
	return home, nil
}

// redactedHome says whether got is want with one home folder H written as ~ (every H+"/" as
// "~/"), and which (""; got is want itself).
func redactedHome(want, got []byte) (string, bool) {
	if bytes.Equal(want, got) {
		return "", true
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	if !bytes.HasPrefix(got[i:], []byte("~/")) {
		return "", false
	}
	for j := i + 1; j < len(want) && j-i <= 4096; j++ {
		if c := want[j]; c == '"' || c == '\\' {
			break
		} else if c != '/' {
			continue
		}
		h := want[i:j]
		if bytes.Equal(bytes.ReplaceAll(want, append(bytes.Clone(h), '/'), []byte("~/")), got) {
			return string(h), true
		}
	}
	return "", false
}

// journalMarkdown is the ladder receipt's section on its journal excerpt: the study, the
// excerpt's ends and the origin notebook's chain head, where the plan was registered.
func (x *QuantExcerpt) journalMarkdown() []byte {
	c := x.Chain
	var b strings.Builder
	b.WriteString("## Notebook journal\n\n")
	fmt.Fprintf(&b, "- Notebook study `%d` · %s\n", x.StudyID, strings.ReplaceAll(x.Name, "\n", " "))
	fmt.Fprintf(&b, "- Journal excerpt `entries %d–%d` · `%d entries, %d of this study` · chain re-walked, intact\n", c.FirstSeq, c.LastSeq, c.Entries, c.StudyEntries)
	fmt.Fprintf(&b, "- Journal excerpt anchors: first prev_hash `%s` · last hash `%s`\n", c.FirstPrevHash, c.LastHash)
	fmt.Fprintf(&b, "- Notebook chain head `seq %d` · `%s` (after the study's last entry; receipts exported later are left out)\n", c.LastSeq, c.LastHash)
	fmt.Fprintf(&b, "- Plan registered at `entry %d` at `%s` · plan SHA-256 matches `plan.json`\n", x.Registered.Seq, x.Registered.At)
	raw := "as the excerpt's entries hold them"
	if x.Home != "" {
		raw += ", the home folder written as ~"
	}
	fmt.Fprintf(&b, "- `records.json`, `provenance.json` and `handoffs.json` (where present) are %s\n\n", raw)
	return []byte(b.String())
}
