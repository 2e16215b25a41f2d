// Package fleet runs one registered throughput plan on several machines: one study per host
// (this machine is "local"), the hosts in parallel, one leg at a time on each; every member study
// journals a study.fleet note that links it to the fleet; a host that drops out fails its own
// study only. Compare puts the same cell of every host side by side. docs/fleet.md.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"sparkbench/app/overview"
	"sparkbench/app/study"
	"sparkbench/app/study/studyrun"
	"sparkbench/app/workbench"
	"sparkbench/runner"
	"sparkbench/runner/fsread"
	"sparkbench/runner/jsonlex"
	"sparkbench/runner/llamacpp"
	"sparkbench/runner/remote"
	"sparkbench/store"
)

// Schema is the fleet file's schema line.
const Schema = "sparkbench.fleet/v1"

// NoteKind is the journal entry that makes a study a fleet member.
const NoteKind = study.NoteFleet

// File is a fleet plan: a throughput plan file and the hosts it runs on.
type File struct {
	Schema string   `json:"schema"`
	Name   string   `json:"name"`
	Plan   string   `json:"plan"`  // a throughput plan (docs/plans.md), relative to this file
	Hosts  []string `json:"hosts"` // names from the hosts file; "local" is this machine
}

// MaxFileBytes bounds a fleet file (a few hundred bytes; this refuses a wrong file).
const MaxFileBytes = 4 << 20

// Load reads and checks a fleet file against the hosts list; every problem is named. The file
// must be a regular file (a named pipe or a device is refused, never waited on) of at most
// MaxFileBytes, holding one JSON object (a refusal of the JSON says file:line:col).
func Load(path string, hosts *remote.HostsFile) (*File, error) {
	b, err := fsread.ReadFile(path, MaxFileBytes, "a fleet file")
	if err != nil {
		return nil, err
	}
	return Parse(path, b, hosts)
}

// Parse decodes and checks a fleet file's contents (name: its path, for messages and for the
// plan's folder) against the hosts list.
func Parse(path string, b []byte, hosts *remote.HostsFile) (*File, error) {
	var f File
	if err := jsonlex.DecodeFile(path, b, &f, "a fleet file", "docs/fleet.md"); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(f.Plan) && f.Plan != "" {
		f.Plan = filepath.Join(filepath.Dir(path), f.Plan)
	}
	if err := f.check(hosts); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// New is the fleet of one plan file on hosts (names from the hosts file; "local" is this
// machine), named name: `study run PLAN --on HOST,…` without a fleet file.
func New(name, plan string, hosts []string, hf *remote.HostsFile) (*File, error) {
	f := &File{Schema: Schema, Name: name, Plan: plan, Hosts: hosts}
	if err := f.check(hf); err != nil {
		return nil, err
	}
	return f, nil
}

// check names every problem of a fleet against the hosts list.
func (f *File) check(hosts *remote.HostsFile) error {
	var probs []string
	if f.Schema != Schema {
		probs = append(probs, fmt.Sprintf("schema: %q, want %q", f.Schema, Schema))
	}
	if strings.TrimSpace(f.Name) == "" {
		probs = append(probs, "name: empty")
	}
	if f.Plan == "" {
		probs = append(probs, "plan: empty")
	}
	if len(f.Hosts) == 0 {
		probs = append(probs, "hosts: empty")
	}
	seen := map[string]bool{}
	for _, h := range f.Hosts {
		if seen[h] {
			probs = append(probs, "hosts: "+h+" listed twice")
		}
		seen[h] = true
		if h == remote.Local {
			continue
		}
		if hosts == nil {
			probs = append(probs, "hosts: "+h+": no hosts file given")
		} else if _, err := hosts.Find(h); err != nil {
			probs = append(probs, err.Error())
		}
	}
	if len(probs) > 0 {
		return errors.New(strings.Join(probs, "; "))
	}
	return nil
}

// Member is one host's study of a fleet and how its run ended.
type Member struct {
	Host    string        `json:"host"`
	StudyID int64         `json:"study_id"`
	Status  string        `json:"status"`
	Err     string        `json:"error,omitempty"`
	Clock   *remote.Clock `json:"clock,omitempty"`
	// BandwidthFrom is "host" when the member's ceilings use its host's bandwidth label, "plan"
	// when a remote member keeps the plan's entered figure (the desktop's), "" otherwise.
	BandwidthFrom string            `json:"bandwidth_from,omitempty"`
	Summary       *study.RunSummary `json:"-"`
}

// Request runs a fleet.
type Request struct {
	File     *File
	Hosts    *remote.HostsFile
	LlamaDir string // this machine's build ("": the usual search)
	DataDir  string
	OnEvent  func(host string, ev study.Event) // called from each host's goroutine
	// Now names the fleet (its ID is the name and the start time); nil: time.Now.
	Now func() time.Time
}

// Run registers the plan once per host (the plan's name gets " @ HOST"; models as absolute
// paths) and runs the hosts in parallel, each host's legs one after another. The error is for the fleet as a whole (a plan that
// does not load or register); each host's failure is in its Member.
func Run(ctx context.Context, nb *store.Notebook, req Request) (string, []Member, error) {
	data, err := fsread.ReadFile(req.File.Plan, study.MaxPlanBytes, "a plan")
	if err != nil {
		return "", nil, fmt.Errorf("read plan: %w", err)
	}
	now := time.Now
	if req.Now != nil {
		now = req.Now
	}
	fleetID := req.File.Name + " " + now().UTC().Format(time.RFC3339)
	members := make([]Member, len(req.File.Hosts))
	for i, h := range req.File.Hosts {
		p, err := workbench.LoadPlan(req.File.Plan, data)
		if err != nil {
			return "", nil, err
		}
		base, _, _ := p.SHA256()
		absModels(p, filepath.Dir(req.File.Plan))
		p.Name += " @ " + h
		hostBW, bwFrom := hostBandwidth(req.Hosts, h), ""
		switch {
		case hostBW > 0: // the host's own figure, not the plan's (the desktop's)
			p.Bandwidth, bwFrom = &study.Bandwidth{GBs: hostBW}, "host"
		case h != remote.Local && p.Bandwidth != nil && p.Bandwidth.GBs > 0:
			bwFrom = "plan" // the plan's figure stands for a host without its own
		}
		reg, err := workbench.RegisterThroughput(ctx, nb, workbench.ThroughputRegisterRequest{Plan: p, LlamaDir: req.LlamaDir, DataDir: req.DataDir})
		if err != nil {
			return fleetID, members[:i], fmt.Errorf("register the plan for %s: %w", h, err)
		}
		members[i] = Member{Host: h, StudyID: reg.Registration.StudyID}
		members[i].BandwidthFrom = bwFrom
		note := map[string]any{"fleet": fleetID, "host": h, "hosts": req.File.Hosts, "base_plan_sha256": base}
		if bwFrom != "" {
			note["bandwidth_from"] = bwFrom
		}
		if err := (store.StudyRecorder{N: nb}).Note(ctx, members[i].StudyID, NoteKind, note); err != nil {
			return fleetID, members[:i+1], err
		}
	}
	// The hosts run in parallel, one study at a time on each (a host is listed once): each
	// member's legs run one after another on its own box, and the notebook serialises the
	// writes. (The cells once taken for lost when members ran in parallel were legs the CV
	// gate flagged: three hosts sharing one loaded test machine.)
	var wg sync.WaitGroup
	for i := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runMember(ctx, nb, req, &members[i])
		}()
	}
	wg.Wait()
	return fleetID, members, nil
}

// hostBandwidth is the bandwidth label of a remote host (0: none, or this machine).
func hostBandwidth(hf *remote.HostsFile, name string) float64 {
	if name == remote.Local || hf == nil {
		return 0
	}
	h, err := hf.Find(name)
	if err != nil {
		return 0
	}
	g, _ := h.BandwidthGBs()
	return g
}

func absModels(p *study.Plan, dir string) {
	for i := range p.Models {
		if m := p.Models[i].Path; m != "" && !filepath.IsAbs(m) {
			p.Models[i].Path = filepath.Join(dir, m)
		}
	}
}

func runMember(ctx context.Context, nb *store.Notebook, req Request, m *Member) {
	on := func(ev study.Event) {
		if req.OnEvent != nil {
			req.OnEvent(m.Host, ev)
		}
	}
	var sum study.RunSummary
	var err error
	if m.Host == remote.Local {
		sum, err = workbench.RunThroughput(ctx, nb, workbench.ThroughputRunRequest{ID: m.StudyID, LlamaDir: req.LlamaDir, OnEvent: on})
	} else {
		sum, err = runOnHost(ctx, nb, req, m, on)
	}
	m.Summary, m.Status = &sum, string(sum.Status)
	if err != nil {
		m.Err = err.Error()
		if m.Status == "" {
			m.Status = "failed"
		}
		// the study is not complete: said in the notebook, so its status tells
		_ = nb.SetStudyStatus(context.Background(), m.StudyID, string(study.StatusIncomplete))
	}
}

// runOnHost runs the member's study through the host's ssh connection: the engine's hooks get
// the host's llama-bench, model hashes computed on the host, its fingerprint and help text,
// and a queue whose legs run over ssh -tt.
func runOnHost(ctx context.Context, nb *store.Notebook, req Request, m *Member, on func(study.Event)) (study.RunSummary, error) {
	h, err := req.Hosts.Find(m.Host)
	if err != nil {
		return study.RunSummary{}, err
	}
	s, err := remote.Connect(ctx, h, remote.Options{Config: req.Hosts.SSHConfig})
	if err != nil {
		return study.RunSummary{}, err
	}
	defer s.Close()
	c := s.Info.Clock
	m.Clock = &c
	rec := store.StudyRecorder{N: nb}
	if err := rec.Note(ctx, m.StudyID, study.NoteHost, map[string]any{"host": h.Name, "ssh": h.SSH, "llama_dir": h.LlamaDir,
		"clock_skew_ns": int64(c.Skew), "clock_uncertainty_ns": int64(c.Uncertainty), "clock_far_off": c.FarOff(),
		"timestamps": "desktop"}); err != nil {
		return study.RunSummary{}, err
	}
	e := &studyrun.Engine{Rec: rec, Bench: s.Bench(), OnEvent: on, RemoteModels: true,
		Hash: func(p string) (string, error) {
			hp, err := s.ResolveModel(ctx, p, "")
			if err != nil {
				return "", err
			}
			sha, _, err := s.HashFile(ctx, hp)
			return sha, err
		},
		Probe: func(context.Context) (study.Environment, error) {
			return studyrun.EnvironmentOf(s.Info.Fingerprint, s.Bench()), nil
		},
		BenchFlags: func(ctx context.Context, _ string) (map[string]bool, error) {
			out, err := s.Conn.Output(ctx, llamacpp.MetaTimeout, remote.ExecCommandOrEmpty([]string{s.Bench(), "--help"}))
			if err != nil {
				return nil, err
			}
			return llamacpp.ParseHelpFlags(string(out)), nil
		},
		MeasureBandwidth: func(context.Context) (studyrun.BandwidthMeasurement, error) {
			return studyrun.BandwidthMeasurement{}, fmt.Errorf("the bandwidth probe runs on this machine only: give host %s its bandwidth as a label (sparkbench host add %s … --label %s=GBS, or labels in the hosts file)", m.Host, m.Host, remote.BandwidthLabel)
		},
		Start: func(ctx context.Context, spec runner.QueueSpec) studyrun.QueueRun {
			return runner.StartQueue(ctx, spec, s.LegOption())
		},
	}
	sum, err := e.Run(ctx, m.StudyID)
	_ = overview.Summarize(context.WithoutCancel(ctx), nb, m.StudyID) // as workbench.RunThroughput: the overview's summary
	return sum, err
}

// Hosts lists the hosts of members, sorted.
func Hosts(ms []Member) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Host)
	}
	sort.Strings(out)
	return out
}
