package receipt

import (
	"bytes"
	"fmt"

	"sparkbench/app/canon"
	"sparkbench/app/capacity"
	"sparkbench/app/study"
)

// capacityJournal is a capacity bundle's journal excerpt (written from the notebook), its
// chain re-walked and held to the bundle's plan and re-assembled figures.
type capacityJournal struct {
	chain   ChainSummary
	studyID int64
	name    string // as study.created recorded it
	// The study's entries the receipt cites.
	registered  JournalLine   // plan.registered
	predictions []JournalLine // prediction.registered
	firstLeg    *JournalLine  // the first leg.started (nil: none in the excerpt)
	assembled   JournalLine   // the latest capacity.assembled
	note        capacity.AssembledNote
	studySHA    string // this bundle's re-assembled study.json
	// kv are the study's KV cache quality checks (study.EntryKVKLD), kvSeq the entry of the
	// latest of each model and cache type.
	kv    []study.KVCheck
	kvSeq map[string]int64
}

// readCapacityJournal parses journal.jsonl, re-walks its chain (as for a throughput bundle)
// and holds it to the bundle: the study it names must be a capacity or concurrency study of
// the result's kind, its plan.registered must have registered the plan the bundle holds (the
// same canonical SHA-256, which covers the predictions), and its latest capacity.assembled
// must have journaled the plan and the selected points that the bundle's raw files give.
func readCapacityJournal(files Files, ci *CapacityIndex, res *capacity.Result, studyJSON []byte) (*capacityJournal, error) {
	b, err := need(files, ci.Journal)
	if err != nil {
		return nil, err
	}
	entries, err := ParseJournal(b)
	if err != nil {
		return nil, err
	}
	cj := &capacityJournal{studyID: ci.StudyID, studySHA: sha(studyJSON)}
	if cj.chain, err = WalkChain(entries, ci.StudyID); err != nil {
		return nil, err
	}
	var created, registered, assembled bool
	for i := range entries {
		j := entries[i]
		if j.StudyID() != ci.StudyID {
			continue
		}
		switch j.Kind {
		case "study.created":
			p, err := createdPayload(j)
			if err != nil {
				return nil, err
			}
			if p.Kind != res.Kind {
				return nil, fmt.Errorf("%s: entry %d (study.created): study %d is a %s study, the bundle's plan makes a %s study", FileJournal, j.Seq, ci.StudyID, p.Kind, res.Kind)
			}
			created, cj.name = true, p.Name
		case "plan.registered":
			var p struct {
				SHA256 string `json:"plan_sha256"`
			}
			if err := payloadOf(j, &p); err != nil {
				return nil, err
			}
			if p.SHA256 != res.PlanSHA256 {
				return nil, fmt.Errorf("%s: its canonical SHA-256 is %s, the journal registered plan %s for study %d (entry %d)", ci.Plan, res.PlanSHA256, p.SHA256, ci.StudyID, j.Seq)
			}
			if !registered {
				registered, cj.registered = true, j
			}
		case "prediction.registered":
			cj.predictions = append(cj.predictions, j)
		case "leg.started":
			if cj.firstLeg == nil {
				cj.firstLeg = &entries[i]
			}
		case capacity.NoteAssembled:
			assembled, cj.assembled = true, j
		case study.EntryKVKLD:
			var c study.KVCheck
			if err := payloadOf(j, &c); err != nil {
				return nil, err
			}
			if cj.kvSeq == nil {
				cj.kvSeq = map[string]int64{}
			}
			cj.kv, cj.kvSeq[c.Model+"\x00"+c.KV] = append(cj.kv, c), j.Seq
		}
	}
	switch {
	case !created:
		return nil, fmt.Errorf("%s: no study.created entry for study %d in the excerpt", FileJournal, ci.StudyID)
	case !registered:
		return nil, fmt.Errorf("%s: no plan.registered entry for study %d in the excerpt", FileJournal, ci.StudyID)
	case !assembled:
		return nil, fmt.Errorf("%s: no %s entry for study %d in the excerpt", FileJournal, capacity.NoteAssembled, ci.StudyID)
	}
	j := cj.assembled
	if err := payloadOf(j, &cj.note); err != nil {
		return nil, err
	}
	if cj.note.PlanSHA256 != res.PlanSHA256 {
		return nil, fmt.Errorf("%s: entry %d (%s) journaled plan %s, the bundle's plan is %s", FileJournal, j.Seq, j.Kind, cj.note.PlanSHA256, res.PlanSHA256)
	}
	got, err := canon.Marshal(capacity.SelectedPoints(res))
	if err != nil {
		return nil, err
	}
	want, err := canon.Marshal(cj.note.Selected)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(got, want) {
		return nil, fmt.Errorf("%s: entry %d (%s) journaled the selected points %s, the bundle's raw files give %s: its request records, RSS records or server logs are not the run's",
			FileJournal, j.Seq, j.Kind, want, got)
	}
	return cj, nil
}

// journalRows are the provenance rows of a capacity receipt's journal excerpt. Every number
// is in a code span: they are the journal's, not study.json's (which is capacity assemble's
// output and holds none of them).
func (cj *capacityJournal) journalRows() [][]string {
	c := cj.chain
	seq := func(j JournalLine) string { return code(fmt.Sprintf("entry %d", j.Seq)) + " at " + code(j.At) }
	rows := [][]string{
		{"Notebook study", code(fmt.Sprint(cj.studyID)) + " · " + cell(cj.name)},
		{"Journal excerpt", code(fmt.Sprintf("entries %d–%d", c.FirstSeq, c.LastSeq)) + " · " + code(fmt.Sprintf("%d entries, %d of this study", c.Entries, c.StudyEntries)) + " · chain re-walked, intact"},
		{"Journal excerpt anchors", "first prev_hash " + code(c.FirstPrevHash) + " · last hash " + code(c.LastHash)},
		{"Notebook chain head", code(fmt.Sprintf("seq %d", c.LastSeq)) + " · " + code(c.LastHash) + " (after the study's last entry; receipts exported later are left out)"},
	}
	reg := seq(cj.registered) + " · plan SHA-256 matches " + code(FilePlan)
	if n := len(cj.predictions); n > 0 {
		reg += fmt.Sprintf(" · %s predictions registered (%s to %s)", code(fmt.Sprint(n)), code(fmt.Sprintf("entry %d", cj.predictions[0].Seq)), code(fmt.Sprintf("entry %d", cj.predictions[n-1].Seq)))
	}
	last := cj.registered.Seq
	if n := len(cj.predictions); n > 0 && cj.predictions[n-1].Seq > last {
		last = cj.predictions[n-1].Seq
	}
	switch {
	case cj.firstLeg == nil:
		reg += " · no server lifetime started in the excerpt"
	case last < cj.firstLeg.Seq:
		reg += " · before the first server lifetime started (" + seq(*cj.firstLeg) + ")"
	default:
		reg += " · NOT before the first server lifetime started (" + seq(*cj.firstLeg) + ")"
	}
	rows = append(rows, []string{"Plan and predictions registered", reg})
	asm := seq(cj.assembled) + " · plan and selected points match this bundle's · journaled " + code(FileStudy) + " SHA-256 " + code(cj.note.StudySHA256)
	if cj.note.StudySHA256 == cj.studySHA {
		asm += ", the same as this bundle's"
	} else {
		asm += "; this bundle's hashes to " + code(cj.studySHA) + " (redacted inputs are fingerprinted anew; `sparkbench receipt` compares every figure with the journaled file before writing the bundle)"
	}
	rows = append(rows, []string{"Result assembled", asm})
	return rows
}
