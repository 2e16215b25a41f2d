package receipt

import (
	"bytes"
	"fmt"

	"sparkbench/app/canon"
)

// The journal's hash chain (docs/notebook.md): the bytes hashed for an entry are the canonical
// JSON {"at":…,"kind":…,"payload":…,"seq":…,"study":…|null}, and
// hash = hex(SHA-256(prev_hash as 32 raw bytes || entry bytes)). store writes the chain; this
// re-walks an excerpt of it without the notebook (cmd tests hold both to the same bytes).

// EntryBytes are the bytes hashed for one journal entry.
func EntryBytes(seq int64, kind string, studyID int64, at string, payload []byte) []byte {
	return canon.JournalEntryBytes(seq, kind, studyID, at, payload)
}

// ChainHash is hex(SHA-256(prev || entry)): see app/canon.
func ChainHash(prevHex string, entry []byte) (string, error) { return canon.ChainHash(prevHex, entry) }

// ParseJournal reads journal.jsonl: one canonical JSON entry per line, newline-terminated.
func ParseJournal(data []byte) ([]JournalLine, error) {
	var out []JournalLine
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, line := range lines {
		var j JournalLine
		if err := decodeStrict(fmt.Sprintf("%s: line %d", FileJournal, i+1), line, &j); err != nil {
			return nil, err
		}
		if len(j.Payload) == 0 {
			return nil, fmt.Errorf("%s: line %d: entry without a payload", FileJournal, i+1)
		}
		out = append(out, j)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no entries", FileJournal)
	}
	return out, nil
}

// MarshalJournal writes entries as journal.jsonl (canonical JSON lines).
func MarshalJournal(entries []JournalLine) ([]byte, error) {
	var b []byte
	for _, j := range entries {
		line, err := canon.Marshal(j)
		if err != nil {
			return nil, fmt.Errorf("journal entry %d: %w", j.Seq, err)
		}
		b = append(append(b, line...), '\n')
	}
	return b, nil
}

// WalkChain re-walks the excerpt from its first entry's prev_hash: seq must rise by one, each
// prev_hash must be the hash before it, each hash must match its entry's bytes, each payload
// must be canonical. The first entry that fails is named with its line. studyID counts the
// study's own entries (the excerpt also holds other studies' entries that fall between them,
// so that the chain can be re-walked).
func WalkChain(entries []JournalLine, studyID int64) (ChainSummary, error) {
	var s ChainSummary
	for i, j := range entries {
		at := fmt.Sprintf("%s: line %d: entry %d (%s)", FileJournal, i+1, j.Seq, j.Kind)
		if i == 0 {
			s.FirstSeq, s.FirstPrevHash = j.Seq, j.PrevHash
		} else {
			prev := entries[i-1]
			if j.Seq != prev.Seq+1 {
				return s, fmt.Errorf("%s: follows entry %d: entries are missing or out of order", at, prev.Seq)
			}
			if j.PrevHash != prev.Hash {
				return s, fmt.Errorf("%s: prev_hash is not the hash of the entry before it (entries reordered or changed)", at)
			}
		}
		c, err := canon.Marshal(j.Payload)
		if err != nil || !bytes.Equal(c, j.Payload) {
			return s, fmt.Errorf("%s: payload is not canonical JSON", at)
		}
		want, err := ChainHash(j.PrevHash, EntryBytes(j.Seq, j.Kind, j.StudyID(), j.At, j.Payload))
		if err != nil {
			return s, fmt.Errorf("%s: %v", at, err)
		}
		if want != j.Hash {
			return s, fmt.Errorf("%s: hash does not match the entry's content (the entry was changed)", at)
		}
		s.Entries++
		if j.StudyID() == studyID {
			s.StudyEntries++
		}
		s.LastSeq, s.LastHash = j.Seq, j.Hash
	}
	return s, nil
}

// ChainSummary describes the journal excerpt after its chain was re-walked.
type ChainSummary struct {
	FirstSeq      int64  `json:"first_seq"`
	LastSeq       int64  `json:"last_seq"`
	Entries       int    `json:"entries"`
	StudyEntries  int    `json:"study_entries"`
	FirstPrevHash string `json:"first_prev_hash"`
	LastHash      string `json:"last_hash"`
}
