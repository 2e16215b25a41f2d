package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// legEntry is what Verify reads of a leg.started or leg.finished entry.
type legEntry struct {
	seq     int64
	study   int64
	payload map[string]json.RawMessage
}

// checkLegRecords holds each legs row to its leg.started entry (study, label, kind, machine,
// build, artefact, argv, environment, conditions, start, fingerprint; since issue 30 its
// detail and temperature before) and its leg.finished entry (state, class, reason, exit code,
// signal, end, provenance; since issue 30 peak RSS and temperature after). A leg without
// leg.finished must still be running; a leg imported from a file has no leg.started and holds
// the importer's defaults there.
func (n *Notebook) checkLegRecords(ctx context.Context, rep *VerifyReport) (map[int64]startedRefs, *BrokenEntry, error) {
	legFP := map[int64]startedRefs{} // leg → what its leg.started recorded of its machine, build and model (since issue 30)
	started, finished := map[int64]legEntry{}, map[int64]legEntry{}
	jr, err := n.rdb.QueryContext(ctx, "SELECT seq, kind, COALESCE(study_id, 0), payload FROM journal WHERE kind IN (?, ?) AND seq <= ? ORDER BY seq",
		KindLegStarted, KindLegFinished, rep.HeadSeq)
	if err != nil {
		return nil, nil, err
	}
	for jr.Next() {
		var e legEntry
		var kind, payload string
		if err := jr.Scan(&e.seq, &kind, &e.study, &payload); err != nil {
			jr.Close()
			return nil, nil, err
		}
		if json.Unmarshal([]byte(payload), &e.payload) != nil {
			continue // Verify's chain walk checked that every payload is canonical JSON
		}
		var leg int64
		if raw, ok := e.payload["leg"]; ok {
			leg, _ = strconv.ParseInt(string(raw), 10, 64)
		}
		if kind == KindLegStarted {
			if _, dup := started[leg]; !dup {
				started[leg] = e
			}
		} else if _, dup := finished[leg]; !dup {
			finished[leg] = e
		}
	}
	jr.Close()
	if err := jr.Err(); err != nil {
		return nil, nil, err
	}
	rows, err := n.rdb.QueryContext(ctx, `SELECT id, study_id, label, kind, machine_id, build_id, artefact_id, argv_json, env_json,
		conditions_json, state, class, reason, exit_code, signal, started_at, ended_at, fingerprint, temp_before_c, temp_after_c,
		peak_rss_bytes, provenance_json, detail_json FROM legs ORDER BY id`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	names := []string{"id", "study_id", "label", "kind", "machine_id", "build_id", "artefact_id", "argv_json", "env_json",
		"conditions_json", "state", "class", "reason", "exit_code", "signal", "started_at", "ended_at", "fingerprint", "temp_before_c",
		"temp_after_c", "peak_rss_bytes", "provenance_json", "detail_json"}
	vals := make([]any, len(names))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var olderDetail, olderEnd int64
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		id, _ := vals[0].(int64)
		judge := func() *BrokenEntry {
			col := map[string]any{}
			for i, nm := range names {
				col[nm] = vals[i]
			}
			id, _ := col["id"].(int64)
			st, hasStart := started[id]
			fin, hasEnd := finished[id]
			check := func(e legEntry, kind string, fs []field) *BrokenEntry {
				for _, f := range fs {
					raw, present := payloadAt(e.payload, f.key)
					if d := sameValue(f, col[f.col], raw, present, ""); d != "" {
						return rowDamage(e.seq, kind, "legs", id, f.col, d)
					}
				}
				return nil
			}
			// What both entries record: the later one is the leg's last word on it.
			common := []field{{"study_id", "study", 'i', ""}, {"label", "label", 't', ""}, {"kind", "kind", 't', ""},
				{"started_at", "started_at", 't', ""}, {"argv_json", "argv", 'j', "[]"}, {"env_json", "env", 'j', "{}"},
				{"fingerprint", "fingerprint", 't', ""}}
			switch {
			case hasStart:
				fs := append(append([]field{}, common...), field{"machine_id", "machine", 'i', ""}, field{"build_id", "build", 'i', ""},
					field{"artefact_id", "artefact", 'i', ""}, field{"conditions_json", "conditions", 'j', "[]"})
				var fp startedRefs
				_ = json.Unmarshal(st.payload["machine_fingerprint"], &fp.machineFP)
				_ = json.Unmarshal(st.payload["build_fingerprint"], &fp.buildFP)
				_ = json.Unmarshal(st.payload["artefact_sha256"], &fp.artefactSHA)
				if raw, ok := st.payload["build_dir"]; ok {
					fp.buildDir = new(string)
					_ = json.Unmarshal(raw, fp.buildDir)
				}
				legFP[id] = fp
				if _, ok := st.payload["detail"]; ok {
					fs = append(fs, field{"detail_json", "detail", 'j', "{}"}, field{"temp_before_c", "temp_before_c", 'f', ""})
				} else {
					olderDetail++
				}
				if b := check(st, KindLegStarted, fs); b != nil {
					return b
				}
			case hasEnd: // a leg imported from a file: the importer's defaults where leg.started would be
				for _, c := range []struct {
					name string
					want any
				}{{"machine_id", nil}, {"build_id", nil}, {"artefact_id", nil}, {"conditions_json", "[]"}, {"detail_json", "{}"}, {"temp_before_c", nil}} {
					got := col[c.name]
					if s, ok := colText(got); ok {
						got = s
					}
					if got != c.want {
						return rowDamage(fin.seq, KindLegFinished, "legs", id, c.name, fmt.Sprintf("%v, but a leg imported from a file (no leg.started entry) holds %v there", got, c.want))
					}
				}
			default:
				return rowDamage(0, KindLegStarted, "legs", id, "id", "no leg.started or leg.finished entry records this leg (the row was written outside the store, or its id changed)")
			}
			if !hasEnd {
				if s, _ := colText(col["state"]); s != LegRunning {
					return rowDamage(st.seq, KindLegStarted, "legs", id, "state", fmt.Sprintf("%q, but no leg.finished entry records its end (only a running leg has none)", s))
				}
				for _, c := range []string{"ended_at", "exit_code", "temp_after_c", "peak_rss_bytes"} {
					if col[c] != nil {
						return rowDamage(st.seq, KindLegStarted, "legs", id, c, fmt.Sprintf("%v while the leg is running (no leg.finished entry)", col[c]))
					}
				}
				for _, c := range []string{"class", "reason", "signal"} {
					if s, _ := colText(col[c]); s != "" {
						return rowDamage(st.seq, KindLegStarted, "legs", id, c, fmt.Sprintf("%q while the leg is running (no leg.finished entry)", s))
					}
				}
				rep.RecordsChecked++
				return nil
			}
			fs := append(append([]field{}, common...), field{"state", "state", 't', ""}, field{"class", "class", 't', ""},
				field{"reason", "reason", 't', ""}, field{"exit_code", "exit_code", 'i', ""}, field{"signal", "signal", 't', ""},
				field{"ended_at", "ended_at", 't', ""}, field{"provenance_json", "provenance", 'j', ""})
			if _, ok := fin.payload["peak_rss_bytes"]; ok {
				fs = append(fs, field{"peak_rss_bytes", "peak_rss_bytes", 'i', ""}, field{"temp_after_c", "temp_after_c", 'f', ""})
			} else {
				olderEnd++
			}
			if b := check(fin, KindLegFinished, fs); b != nil {
				return b
			}
			rep.RecordsChecked++
			return nil
		}
		if b := judge(); b != nil {
			// A leg started or finished after the chain was walked (another process records
			// while this one verifies) is judged by the next verify, not now.
			late, err := n.legRecordedAfter(ctx, id, rep.HeadSeq)
			if err != nil {
				return nil, nil, err
			}
			if !late {
				return nil, b, nil
			}
			delete(legFP, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if olderDetail > 0 {
		rep.OlderRule = append(rep.OlderRule, OlderRuleCount{"legs.detail_json, legs.temp_before_c", olderDetail, ""})
	}
	if olderEnd > 0 {
		rep.OlderRule = append(rep.OlderRule, OlderRuleCount{"legs.peak_rss_bytes, legs.temp_after_c", olderEnd, ""})
	}
	return legFP, nil, nil
}

// legRecordedAfter reports whether a leg.started or leg.finished entry of leg was journaled
// after entry head (the last one Verify walked).
func (n *Notebook) legRecordedAfter(ctx context.Context, leg, head int64) (bool, error) {
	var k int
	err := n.rdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM journal WHERE seq > ? AND kind IN (?, ?) AND json_extract(payload, '$.leg') = ?",
		head, KindLegStarted, KindLegFinished, leg).Scan(&k)
	return k > 0, err
}
