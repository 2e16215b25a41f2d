package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"sparkbench/app/canon"
	"sparkbench/app/kinds"
	"sparkbench/app/receipt"
	"sparkbench/app/workbench"
	"sparkbench/store"
)

// A quantization ladder's receipt bundle imported (`sparkbench import BUNDLE`). Its journal
// excerpt (workbench.ReadQuantExcerpt: re-walked, and held to the bundle's plan.json,
// records.json, provenance.json and handoffs.json) gives the study: its name and description,
// its plan (plan.json, the registered canonical bytes), the ladder's quant.* entries as notes
// (the candidates' records, the build and machine, the hand-offs: what `study show` reads),
// with the home folder written as ~ where the bundle's raw files were written so, and its legs
// as the excerpt's leg.started and leg.finished entries record them. A ladder's bundle holds no
// leg rows or transcripts (its figures are in the records), so the imported legs have none.
// The excerpt is kept with the origin notebook's chain head, so the study's receipt here is
// the bundle again, byte for byte.

// errLadderNoExcerpt: a ladder bundle written before ladder receipts carried a journal excerpt.
var errLadderNoExcerpt = errors.New("this quantization ladder's bundle predates journal excerpts in ladder receipts: it has no journal.jsonl, so there is no origin chain to keep, and it is not imported (it still verifies: `sparkbench verify BUNDLE`); re-export it with `sparkbench receipt ID` on its origin machine and import that bundle")

// quantBundleStudy is a verified ladder bundle's study as the store imports it.
func quantBundleStudy(files receipt.Files, ix *receipt.Index, source string) (importing, error) {
	x, has, err := workbench.ReadQuantExcerpt(files, ix)
	if err != nil {
		return importing{}, err
	}
	if !has {
		return importing{}, errLadderNoExcerpt
	}
	sums := sha256.Sum256(files[receipt.FileSums])
	last := x.Journal[len(x.Journal)-1]
	plan := files[receipt.FilePlan]
	b := store.BundleStudy{BundleSHA256: hex.EncodeToString(sums[:]), Source: source, Kind: kinds.Quant, Sparkbench: ix.Sparkbench,
		OriginStudyID: x.StudyID, Name: x.Name, OriginStatus: x.Status, OriginHeadSeq: last.Seq, OriginHeadHash: last.Hash,
		Machines: json.RawMessage("[]"), PlanJSON: plan, PlanSHA256: canon.SHA256Hex(plan)}
	keys := map[int64]string{}
	started := map[int64]legStartedEntry{}
	for _, j := range x.Journal {
		b.Journal = append(b.Journal, store.BundleEntry{Seq: j.Seq, Kind: j.Kind, StudyID: j.StudyID(), At: j.At, Payload: j.Payload, PrevHash: j.PrevHash, Hash: j.Hash})
		if j.StudyID() != x.StudyID {
			continue
		}
		if err := quantEntry(&b, j, x.Home, keys, started); err != nil {
			return importing{}, fmt.Errorf("%s: entry %d (%s): %w", receipt.FileJournal, j.Seq, j.Kind, err)
		}
	}
	sort.Slice(b.Legs, func(i, k int) bool { return b.Legs[i].OriginID < b.Legs[k].OriginID })
	var recs []json.RawMessage
	if err := json.Unmarshal(files["records.json"], &recs); err != nil {
		return importing{}, fmt.Errorf("records.json: %w", err)
	}
	return importing{b: b, records: len(recs)}, nil
}

// quantEntry takes one of the ladder's own journal entries into the import.
func quantEntry(b *store.BundleStudy, j receipt.JournalLine, home string, keys map[int64]string, started map[int64]legStartedEntry) error {
	switch {
	case j.Kind == store.KindPlanRegistered: // the plan is plan.json, which the excerpt registered
		return nil
	case strings.HasPrefix(j.Kind, "quant."):
		payload := j.Payload
		if home != "" { // as the bundle's raw files hold it, so the receipt here is the bundle again
			red, err := canon.Marshal(json.RawMessage(bytes.ReplaceAll(payload, []byte(home+"/"), []byte("~/"))))
			if err != nil {
				return err
			}
			payload = red
		}
		b.Notes = append(b.Notes, store.BundleNote{Kind: j.Kind, Payload: payload})
		return nil
	case j.Kind == store.KindLegStarted:
		var s legStartedEntry
		if err := json.Unmarshal(j.Payload, &s); err != nil {
			return err
		}
		started[s.Leg] = s
		return nil
	case j.Kind == store.KindLegFinished:
		var f legFinishedEntry
		if err := json.Unmarshal(j.Payload, &f); err != nil {
			return err
		}
		s, ok := started[f.Leg]
		if !ok {
			return fmt.Errorf("it finishes leg %d, which the excerpt does not start", f.Leg)
		}
		b.Legs = append(b.Legs, store.BundleLeg{OriginID: s.Leg, Dir: s.Label, Label: s.Label, Kind: s.Kind, Detail: json.RawMessage(`{}`),
			State: f.State, Class: f.Class, Reason: f.Reason, ExitCode: f.ExitCode, Signal: f.Signal, Argv: s.Argv, Env: s.Env,
			Conditions: s.Conditions, StartedAt: s.StartedAt, EndedAt: f.EndedAt, Fingerprint: s.Fingerprint})
		return nil
	}
	return addEntry(b, j, keys)
}
