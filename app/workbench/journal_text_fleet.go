package workbench

import (
	"fmt"
	"math"
	"time"

	"sparkbench/app/study"
	"sparkbench/store"
)

// The entries of studies that came from elsewhere: a receipt bundle imported (study.imported),
// a fleet's member (study.fleet) and a study run on a bench host over ssh (study.host).
func init() {
	journalSentences[store.KindStudyImported] = studyImported
	journalSentences[study.NoteFleet] = fleetMember
	journalSentences[study.NoteHost] = studyOnHost
}

// studyImported is the entry that closes a bundle's import: where it came from and how much of
// the origin's journal it carries.
func studyImported(m jmap) string {
	o := m.obj("origin")
	s := fmt.Sprintf("imported from the receipt bundle %s (sha256 %s): %s study %d %q there, %s",
		or(m.str("source"), "?"), shortHash(m.str("bundle_sha256")), or(m.str("kind"), "a"), o.int("study"), o.str("name"), or(o.str("status"), "status unknown"))
	ex := m.obj("excerpt")
	s += fmt.Sprintf("; %d journal entries (origin entries %d to %d)", ex.int("entries"), ex.int("first_seq"), ex.int("last_seq"))
	if h := o.obj("head"); h != nil {
		s += fmt.Sprintf(", origin head entry %d %s", h.int("seq"), shortHash(h.str("hash")))
	}
	if n := len(m.obj("legs")); n > 0 {
		s += fmt.Sprintf(", %d leg(s)", n)
	}
	return s
}

// fleetMember is a study registered as one host's member of a fleet run.
func fleetMember(m jmap) string {
	s := fmt.Sprintf("member of fleet %q on host %s (one of %d hosts), base plan sha256 %s",
		m.str("fleet"), m.str("host"), len(m.list("hosts")), shortHash(m.str("base_plan_sha256")))
	switch m.str("bandwidth_from") {
	case "host":
		s += "; bandwidth: the host's own figure"
	case "plan":
		s += "; bandwidth: the plan's figure (the host has none of its own)"
	}
	return s
}

// studyOnHost is a study's legs run on a bench host over ssh, with the host's clock as the
// desktop measured it.
func studyOnHost(m jmap) string {
	s := fmt.Sprintf("legs run on bench host %s (ssh %s, llama.cpp in %s)", m.str("host"), or(m.str("ssh"), "?"), or(m.str("llama_dir"), "?"))
	skew, hasSkew := m.num("clock_skew_ns")
	unc, _ := m.num("clock_uncertainty_ns")
	if hasSkew {
		way := "ahead of"
		if skew < 0 {
			way = "behind"
		}
		s += fmt.Sprintf("; its clock %s %s the desktop (± %s)", time.Duration(math.Abs(skew)).Round(time.Microsecond), way, time.Duration(unc).Round(time.Microsecond))
		if far, _ := m["clock_far_off"].(bool); far {
			s += ", far off"
		}
	}
	if t := m.str("timestamps"); t != "" {
		s += "; timestamps taken on the " + t
	}
	return s
}
