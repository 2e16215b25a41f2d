package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// The notebook journal's hash chain (docs/notebook.md), shared by store (which writes it) and
// receipts (which re-walk an excerpt of it without the notebook): the bytes hashed for an entry
// are the canonical JSON {"at":…,"kind":…,"payload":…,"seq":…,"study":…|null}, and
// hash = hex(SHA-256(prev_hash as 32 raw bytes || entry bytes)).

// JournalEntryBytes are the bytes hashed for one journal entry; payload must already be
// canonical JSON.
func JournalEntryBytes(seq int64, kind string, studyID int64, at string, payload []byte) []byte {
	b := make([]byte, 0, len(payload)+len(kind)+96)
	b = append(b, `{"at":`...)
	b = AppendString(b, at)
	b = append(b, `,"kind":`...)
	b = AppendString(b, kind)
	b = append(b, `,"payload":`...)
	b = append(b, payload...)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"study":`...)
	if studyID == 0 {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, studyID, 10)
	}
	return append(b, '}')
}

// ChainHash is hex(SHA-256(prev || entry)), prev given in hex.
func ChainHash(prevHex string, entry []byte) (string, error) {
	prev, err := hex.DecodeString(prevHex)
	if err != nil || len(prev) != sha256.Size {
		return "", fmt.Errorf("prev_hash %q is not a hex SHA-256", prevHex)
	}
	h := sha256.New()
	h.Write(prev)
	h.Write(entry)
	return hex.EncodeToString(h.Sum(nil)), nil
}
