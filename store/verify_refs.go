package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// What verify holds a study's row and the records a leg names (machine, build, model) to: the
// studies row against the entries that recorded its name, kind, description and status; the
// machines and builds rows against their fingerprints and what each leg.started recorded.

// checkStudies: a study's name, kind and description are what its study.created entry says,
// and its status is the last status journaled for it (study.status, plan.registered or
// study.created, whichever holds one last). A study created before statuses were journaled has
// none until its status changes, and its status is not held until then (docs/notebook.md).
func (n *Notebook) checkStudies(ctx context.Context, rep *VerifyReport) (*BrokenEntry, error) {
	rows, err := n.rdb.QueryContext(ctx, `SELECT s.id, s.name, s.kind, s.description, s.status, COALESCE(j.seq, 0), COALESCE(j.payload, ''),
		COALESCE(st.seq, 0), COALESCE(st.payload, ''), COALESCE(st.kind, '')
		FROM studies s LEFT JOIN journal j ON j.seq = (SELECT MIN(seq) FROM journal WHERE kind = ? AND study_id = s.id)
		LEFT JOIN journal st ON st.seq = (SELECT MAX(seq) FROM journal WHERE study_id = s.id AND kind IN (?, ?, ?)
			AND json_type(payload, '$.status') IS NOT NULL) ORDER BY s.id`,
		KindStudyCreated, KindStudyCreated, KindStudyStatus, KindPlanRegistered)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fields := []field{{"name", "name", 't', ""}, {"kind", "kind", 't', ""}, {"description", "description", 't', ""}}
	statusField := field{"status", "status", 't', ""}
	for rows.Next() {
		var id, seq, stSeq int64
		var name, kind, desc, status, payload, stPayload, stKind string
		if err := rows.Scan(&id, &name, &kind, &desc, &status, &seq, &payload, &stSeq, &stPayload, &stKind); err != nil {
			return nil, err
		}
		if seq > rep.HeadSeq {
			continue // created after the chain was walked
		}
		if seq == 0 {
			return rowDamage(0, KindStudyCreated, "studies", id, "id", "no study.created entry records this study (the row was written outside the store, or its id changed)"), nil
		}
		var p map[string]json.RawMessage
		if err := json.Unmarshal([]byte(payload), &p); err != nil {
			return rowDamage(seq, KindStudyCreated, "studies", id, "id", "its entry's payload does not read: "+err.Error()), nil
		}
		for i, v := range []any{name, kind, desc} {
			raw, present := payloadAt(p, fields[i].key)
			if d := sameValue(fields[i], v, raw, present, ""); d != "" {
				return rowDamage(seq, KindStudyCreated, "studies", id, fields[i].col, d), nil
			}
		}
		// The status is the one the last entry that holds one set: study.status, plan.registered
		// or study.created (entries of older versions hold none: then it is not held). One
		// journaled after the chain was walked is not judged.
		if stSeq > 0 && stSeq <= rep.HeadSeq {
			var sp struct {
				Status json.RawMessage `json:"status"`
			}
			if err := json.Unmarshal([]byte(stPayload), &sp); err != nil {
				return rowDamage(stSeq, KindStudyStatus, "studies", id, "status", "its entry's payload does not read: "+err.Error()), nil
			}
			if d := sameValue(statusField, status, sp.Status, true, ""); d != "" {
				return rowDamage(stSeq, stKind, "studies", id, "status", d), nil
			}
		}
		rep.RecordsChecked++
	}
	return nil, rows.Err()
}

// checkMachinesBuilds: a machine's or build's columns still hash to its fingerprint (the
// store computes it from them, UpsertMachine and UpsertBuild), every leg's machine, build and
// artefact exist, and, for legs started since issue 30, the leg.started entry recorded the
// machine's and build's fingerprints, so the fingerprint itself is held to the chain.
// (A build's folder, dir, is not in its fingerprint: see docs/notebook.md.)
func (n *Notebook) checkMachinesBuilds(ctx context.Context, rep *VerifyReport, legFP map[int64]startedRefs) (*BrokenEntry, error) {
	rows, err := n.rdb.QueryContext(ctx, `SELECT id, fingerprint, hostname, cpu_model, COALESCE(cores, 0), COALESCE(ram_bytes, 0), os, kernel, gpu,
		driver, COALESCE(mem_bandwidth_gbs, 0), info_json FROM machines ORDER BY id`)
	if err != nil {
		return nil, err
	}
	machines := map[int64]string{}
	for rows.Next() {
		var id, cores, ram int64
		var fp, host, cpu, os, kernel, gpu, driver, info string
		var bw float64
		if err := rows.Scan(&id, &fp, &host, &cpu, &cores, &ram, &os, &kernel, &gpu, &driver, &bw, &info); err != nil {
			rows.Close()
			return nil, err
		}
		b, err := CanonicalJSON(map[string]any{"hostname": host, "cpu": cpu, "cores": cores, "ram": ram, "os": os, "kernel": kernel,
			"gpu": gpu, "driver": driver, "bandwidth": bw, "info": json.RawMessage(info)})
		if err != nil || SHA256Hex(b) != fp {
			rows.Close()
			return rowDamage(0, "", "machines", id, "fingerprint", "the machine's columns (host name … info_json) no longer hash to its fingerprint: one of them, or the fingerprint, was changed"), nil
		}
		machines[id] = fp
		rep.RecordsChecked++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = n.rdb.QueryContext(ctx, "SELECT id, fingerprint, version_line, build_number, commit_id, backends, binaries_json, dir FROM builds ORDER BY id")
	if err != nil {
		return nil, err
	}
	builds, buildDirs := map[int64]string{}, map[int64]string{}
	for rows.Next() {
		var id int64
		var number sql.NullInt64
		var fp, version, commit, backends, bins, dir string
		if err := rows.Scan(&id, &fp, &version, &number, &commit, &backends, &bins, &dir); err != nil {
			rows.Close()
			return nil, err
		}
		var binaries map[string]string
		_ = json.Unmarshal([]byte(bins), &binaries)
		if binaries == nil {
			binaries = map[string]string{}
		}
		c, err := CanonicalJSON(map[string]any{"version": version, "number": number.Int64, "commit": commit, "backends": backends, "binaries": binaries})
		if err != nil || SHA256Hex(c) != fp || !number.Valid {
			rows.Close()
			return rowDamage(0, "", "builds", id, "fingerprint", "the build's columns (version line, number, commit, backends, binaries) no longer hash to its fingerprint: one of them, or the fingerprint, was changed"), nil
		}
		builds[id], buildDirs[id] = fp, dir
		rep.RecordsChecked++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = n.rdb.QueryContext(ctx, `SELECT l.id, COALESCE(l.machine_id, 0), COALESCE(l.build_id, 0), COALESCE(l.artefact_id, 0),
		l.artefact_id IS NULL OR a.id IS NOT NULL, COALESCE(a.sha256, '') FROM legs l LEFT JOIN artefacts a ON a.id = l.artefact_id ORDER BY l.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id, m, b, a int64
		var artefactExists bool
		var artefactSHA string
		if err := rows.Scan(&id, &m, &b, &a, &artefactExists, &artefactSHA); err != nil {
			return nil, err
		}
		fps := legFP[id]
		if bad := legRefs(id, m, b, a, artefactExists, artefactSHA, fps, machines, builds, buildDirs); bad != nil {
			late, err := n.legRecordedAfter(ctx, id, rep.HeadSeq)
			if err != nil {
				return nil, err
			}
			if !late { // a leg started after the chain was walked may name a machine recorded since
				return bad, nil
			}
		}
	}
	return nil, rows.Err()
}

// startedRefs is what a leg.started entry recorded of the leg's machine, build and model: the
// machine's and the build's fingerprints, the model's SHA-256 (each "" when not recorded) and
// the build's folder (nil when not recorded: entries before it was).
type startedRefs struct {
	machineFP, buildFP, artefactSHA string
	buildDir                        *string
}

// legRefs: a leg's machine, build and artefact exist and are what its leg.started recorded.
func legRefs(id, m, b, a int64, artefactExists bool, artefactSHA string, fps startedRefs, machines, builds, buildDirs map[int64]string) *BrokenEntry {
	switch _, ok := machines[m]; {
	case m != 0 && !ok:
		return rowDamage(0, "", "legs", id, "machine_id", fmt.Sprintf("machine %d does not exist", m))
	case fps.machineFP != "" && machines[m] != fps.machineFP:
		return rowDamage(0, KindLegStarted, "machines", m, "fingerprint", fmt.Sprintf("%s, but leg %d's leg.started entry recorded its machine as %s", machines[m], id, fps.machineFP))
	}
	switch _, ok := builds[b]; {
	case b != 0 && !ok:
		return rowDamage(0, "", "legs", id, "build_id", fmt.Sprintf("build %d does not exist", b))
	case fps.buildFP != "" && builds[b] != fps.buildFP:
		return rowDamage(0, KindLegStarted, "builds", b, "fingerprint", fmt.Sprintf("%s, but leg %d's leg.started entry recorded its build as %s", builds[b], id, fps.buildFP))
	case b != 0 && fps.buildDir != nil && buildDirs[b] != *fps.buildDir:
		return rowDamage(0, KindLegStarted, "builds", b, "dir", fmt.Sprintf("%q, but leg %d's leg.started entry recorded the build's folder as %q", buildDirs[b], id, *fps.buildDir))
	}
	if a != 0 && !artefactExists {
		return rowDamage(0, "", "legs", id, "artefact_id", fmt.Sprintf("artefact %d does not exist", a))
	}
	if fps.artefactSHA != "" && artefactSHA != fps.artefactSHA {
		return rowDamage(0, KindLegStarted, "artefacts", a, "sha256", fmt.Sprintf("%q, but leg %d's leg.started entry recorded the model's SHA-256 as %s", artefactSHA, id, fps.artefactSHA))
	}
	return nil
}
