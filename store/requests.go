package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// RequestRecord is one llama-server request as the load generator measured it. Times are the
// client's clock; a zero time is "not observed" (stored NULL).
type RequestRecord struct {
	Candidate string // e.g. "Q4 + 512-token micro-batch"
	Arm       string // concurrency studies: the arm (e.g. KV-cache type)
	Slots     int    // server --parallel P
	Clients   int    // client concurrency C
	Pass      string // forward / reverse
	Phase     string // warmup, measured or quality
	Index     int    // request number within the cell
	Client    int    // which client sent it

	TSend  time.Time // request bytes written
	TFirst time.Time // first SSE event carrying generated content
	TLast  time.Time // last token event
	TEnd   time.Time // final event (stop)

	HTTPStatus      int
	NPredict        int // requested
	TokensPredicted int // server-reported
	TokensEvaluated int
	StopType        string

	// The server's own timings.
	PromptMs           float64
	PredictedMs        float64
	PredictedPerSecond float64

	Error string
	Extra json.RawMessage // anything else, stored canonically
}

type pendingRequest struct {
	legID, studyID, seq int64
	r                   RequestRecord
}

func nsOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func insertRequests(tx *sql.Tx, rows []pendingRequest) error {
	if len(rows) == 0 {
		return nil
	}
	stmt, err := tx.Prepare("INSERT INTO request_samples (" + requestCols + ") VALUES (?" + strings.Repeat(", ?", strings.Count(requestCols, ",")) + ")")
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, p := range rows {
		r := &p.r
		var extra any
		if len(r.Extra) > 0 {
			b, err := CanonicalJSON(r.Extra)
			if err != nil {
				return fmt.Errorf("leg %d request %d: extra: %w", p.legID, p.seq, err)
			}
			extra = string(b)
		}
		if _, err := stmt.Exec(p.legID, p.studyID, p.seq, r.Candidate, r.Arm, r.Slots, r.Clients, r.Pass, r.Phase,
			r.Index, r.Client, r.TSend.UnixNano(), nsOrNil(r.TFirst), nsOrNil(r.TLast), nsOrNil(r.TEnd),
			r.HTTPStatus, r.NPredict, r.TokensPredicted, r.TokensEvaluated, r.StopType,
			r.PromptMs, r.PredictedMs, r.PredictedPerSecond, r.Error, extra); err != nil {
			return fmt.Errorf("insert request of leg %d: %w", p.legID, err)
		}
	}
	return nil
}
