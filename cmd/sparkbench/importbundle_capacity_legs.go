package main

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sparkbench/app/capacity"
	"sparkbench/app/receipt"
	"sparkbench/store"
)

// A capacity bundle's server lifetimes as legs of the importing notebook: each leg the
// excerpt's leg.started and leg.finished entries record (label, argv, start, end, class), its
// server log as the transcript (as bundled: redacted where the bundle was written), its peak
// RSS from its rss record, and its request records as the capacity recorder stores them
// (store.CapacityRequest, times on the pass's clock origin from run.json), which must hash to
// the origin's samples_sha256 again. A leg's files are those in the folder its leg.started
// names (detail.files), where the bundle holds them: a lifetime measured again by a resumed run
// has each attempt's files in its own folder (capacity.LifetimeDirs), and the bundle carries
// them all. A bundle written before that names one folder per lifetime (bundle.json's).

type legStartedEntry struct {
	Leg         int64             `json:"leg"`
	Label       string            `json:"label"`
	Kind        string            `json:"kind"`
	StartedAt   string            `json:"started_at"`
	Argv        []string          `json:"argv"`
	Env         map[string]string `json:"env"`
	Conditions  []string          `json:"conditions"`
	Fingerprint string            `json:"fingerprint"`
	Detail      struct {
		Files string `json:"files"` // the run-folder relative folder of the leg's files
		// PassOrigin is the clock the leg's request rows are timed on (unset in legs recorded
		// before it was: run.json's pass_origins then).
		PassOrigin *time.Time `json:"pass_origin"`
	} `json:"detail"`
}

type legFinishedEntry struct {
	Leg           int64  `json:"leg"`
	State         string `json:"state"`
	Class         string `json:"class"`
	Reason        string `json:"reason"`
	ExitCode      *int   `json:"exit_code"`
	Signal        string `json:"signal"`
	EndedAt       string `json:"ended_at"`
	RequestRows   int64  `json:"request_rows"`
	TelemetryRows int64  `json:"telemetry_rows"`
	SamplesSHA256 string `json:"samples_sha256"`
}

// capacityLegs are the study's server legs, in the order they started.
func capacityLegs(files receipt.Files, ci *receipt.CapacityIndex, journal []receipt.JournalLine, studyID int64) ([]store.BundleLeg, error) {
	plan, err := capacity.Decode(receipt.FilePlan, files[ci.Plan])
	if err != nil {
		return nil, err
	}
	plan.Defaults()
	var run capacity.RunReport
	if ci.Manifest != "" {
		if err := json.Unmarshal(files[ci.Manifest], &run); err != nil {
			return nil, fmt.Errorf("%s: %w", ci.Manifest, err)
		}
	}
	started := map[int64]legStartedEntry{}
	var legs []store.BundleLeg
	for _, j := range journal {
		if j.StudyID() != studyID {
			continue
		}
		switch j.Kind {
		case store.KindLegStarted:
			var s legStartedEntry
			if err := json.Unmarshal(j.Payload, &s); err != nil {
				return nil, fmt.Errorf("%s: entry %d: %w", receipt.FileJournal, j.Seq, err)
			}
			started[s.Leg] = s
		case store.KindLegFinished:
			var f legFinishedEntry
			if err := json.Unmarshal(j.Payload, &f); err != nil {
				return nil, fmt.Errorf("%s: entry %d: %w", receipt.FileJournal, j.Seq, err)
			}
			s, ok := started[f.Leg]
			if !ok {
				return nil, fmt.Errorf("%s: entry %d finishes leg %d, which the excerpt does not start", receipt.FileJournal, j.Seq, f.Leg)
			}
			l, err := capacityLeg(files, ci, plan, &run, s, f)
			if err != nil {
				return nil, fmt.Errorf("leg %d (%s): %w", s.Leg, s.Label, err)
			}
			legs = append(legs, l)
		}
	}
	sort.Slice(legs, func(a, b int) bool { return legs[a].OriginID < legs[b].OriginID })
	return legs, nil
}

func capacityLeg(files receipt.Files, ci *receipt.CapacityIndex, plan *capacity.Plan, run *capacity.RunReport, s legStartedEntry, f legFinishedEntry) (store.BundleLeg, error) {
	key, _, _ := strings.Cut(s.Label, " (") // "PASS/CANDIDATE/pP (attempt N)"
	l := store.BundleLeg{OriginID: s.Leg, Dir: key, Label: s.Label, Kind: s.Kind, Detail: json.RawMessage(`{}`), State: f.State,
		Class: f.Class, Reason: f.Reason, ExitCode: f.ExitCode, Signal: f.Signal, Argv: s.Argv, Env: s.Env, Conditions: s.Conditions,
		StartedAt: s.StartedAt, EndedAt: f.EndedAt, Fingerprint: s.Fingerprint}
	// The leg's own files: those in the folder its leg.started names when the bundle holds
	// that folder (never another attempt's), else bundle.json's for the lifetime.
	dir := filepath.ToSlash(s.Detail.Files)
	if dir == "" || receipt.CheckName(dir) != nil || !bundleHolds(files, dir) {
		dir = ""
	}
	own := func(name string, m map[string]string) string {
		if dir == "" {
			return m[key]
		}
		if rel := path.Join(dir, name); hasFile(files, rel) {
			return rel
		}
		return ""
	}
	if rel := own(capacity.RunServerLogFile, ci.ServerLogs); rel != "" {
		l.Transcript = files[rel]
	}
	if rel := own(capacity.RunRSSFile, ci.RSS); rel != "" {
		if kib, _, err := capacity.ReadRSS(rel, files[rel]); err == nil {
			l.PeakRSS = kib * 1024
		}
	}
	if f.RequestRows == 0 {
		return l, nil
	}
	k, err := capacity.ParseLifetimeKey(key)
	if err != nil {
		return l, err
	}
	origin, ok := run.PassOrigins[k.Pass]
	if o := s.Detail.PassOrigin; o != nil {
		origin, ok = *o, true
	}
	rel := own(capacity.RunRequestsFile, ci.Requests)
	if !ok || rel == "" { // the origin recorded rows this bundle cannot make again
		return l, fmt.Errorf("lifetime %s: the origin recorded %d request rows, but the bundle has no clock origin for pass %s or no requests file for it: its rows cannot be made again, so the study is not imported", key, f.RequestRows, k.Pass)
	}
	rf, err := capacity.ReadRequests(rel, files[rel])
	if err != nil {
		return l, err
	}
	cand, ok := plan.Candidate(k.Candidate)
	if !ok {
		return l, fmt.Errorf("lifetime %s: candidate %q is not in the bundle's plan", key, k.Candidate)
	}
	lr := capacity.LegRequests{Key: k, Arm: cand.Arm, Origin: origin, NPredict: plan.NPredict, Records: rf.Records}
	for _, rec := range rf.Records {
		r, err := store.CapacityRequest(lr, rec)
		if err != nil {
			return l, err
		}
		l.Requests = append(l.Requests, r)
	}
	if f.TelemetryRows == 0 { // a sampled lifetime's samples are not imported as rows (yet)
		l.SamplesSHA256 = f.SamplesSHA256
	}
	return l, nil
}

// bundleHolds says whether the bundle holds a file in the folder dir.
func bundleHolds(files receipt.Files, dir string) bool {
	for rel := range files {
		if strings.HasPrefix(rel, dir+"/") {
			return true
		}
	}
	return false
}

func hasFile(files receipt.Files, rel string) bool {
	_, ok := files[rel]
	return ok
}
