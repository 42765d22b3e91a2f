package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/trust"
)

// How the verifier's replies are shown: releases, and the JSON shape of
// lists.

// releaseReport answers install and promote: the release, and an outcome
// from its state (active: ok; quarantined: its weightiest reason).
func releaseReport(r admin.Release) *report {
	normRelease(&r)
	rep := &report{data: r, human: func(p *printer) {
		printRelease(p, r)
		if r.Audit != nil {
			printAudit(p, *r.Audit)
		}
	}}
	rep.outcome, rep.reason = releaseOutcome(r.State, r.Reasons)
	if rep.outcome != outOK {
		rep.message = fmt.Sprintf("%s@%s is %s", r.ID, r.Version, r.State)
		if len(r.Reasons) > 0 {
			rep.message += " (" + strings.Join(r.Reasons, ", ") + ")"
		}
		if r.State == admin.StateQuarantined {
			rep.message += "; " + quarantineHint(r)
		}
	}
	return rep
}

// quarantineHint says what an admin can do about a quarantined release.
func quarantineHint(r admin.Release) string {
	switch {
	case slices.Contains(r.Reasons, string(trust.ReasonKeyMismatch)):
		return "another key owns " + r.ID + ": only a rotation signed by both keys (`stockade-verifier trust import-rotation`) can change that"
	case slices.Contains(r.Reasons, string(trust.ReasonAuditFailed)):
		return "it failed its audit and cannot be promoted; see the report"
	case slices.Contains(r.Reasons, string(trust.ReasonTampered)):
		return "its installed files changed; install the archive again to repair it"
	}
	return fmt.Sprintf("review it with `stockade-verifier show %s`, then `stockade-verifier promote %s@%s --digest %s`", r.ID, r.ID, r.Version, r.Digest)
}

func printRelease(p *printer, r admin.Release) {
	p.field("skill", r.ID+" "+r.Version)
	p.field("sequence", strconv.FormatUint(r.Sequence, 10))
	p.field("state", r.State)
	if len(r.Reasons) > 0 {
		p.field("reasons", strings.Join(r.Reasons, ", "))
	}
	for _, a := range r.AuditProblems {
		p.field("problem", a)
	}
	p.field("digest", r.Digest)
	p.field("publisher", r.Publisher)
	printCaps(p, "capabilities", r.Capabilities)
	p.field("first seen", r.FirstSeen)
	p.field("changed", r.Changed)
}

func printCaps(p *printer, label string, caps ipc.Capabilities) {
	s := "http: " + list(caps.HTTP) + "; secrets: " + list(caps.Secrets) +
		"; storage: " + strconv.FormatBool(caps.Storage) + "; channels: " + list(caps.Channels)
	p.field(label, s)
}

// The JSON output shows lists as lists: nil slices from the daemon's
// replies (msgpack keeps no difference between nil and empty) become [].

func emptyNotNil(s *[]string) {
	if *s == nil {
		*s = []string{}
	}
}

func normCaps(c *ipc.Capabilities) {
	emptyNotNil(&c.HTTP)
	emptyNotNil(&c.Secrets)
	emptyNotNil(&c.Channels)
}

func normRelease(r *admin.Release) {
	emptyNotNil(&r.Reasons)
	emptyNotNil(&r.AuditProblems)
	normCaps(&r.Capabilities)
	if r.Audit != nil {
		emptyNotNil(&r.Audit.Allowed)
		if r.Audit.Modules == nil {
			r.Audit.Modules = []admin.ModuleAudit{}
		}
	}
}

func normInfo(s *admin.SkillInfo) {
	normCaps(&s.Approved)
	if s.HighWater == nil {
		s.HighWater = []admin.HighWater{}
	}
	if s.Releases == nil {
		s.Releases = []admin.Release{}
	}
	for i := range s.Releases {
		normRelease(&s.Releases[i])
	}
	if s.Equivocations == nil {
		s.Equivocations = []admin.Equivocation{}
	}
}

func normKey(k *admin.Key) { emptyNotNil(&k.Skills) }

func normDoctor(d *admin.DoctorReport) {
	if d.Releases == nil {
		d.Releases = []admin.DoctorRelease{}
	}
	if d.Problems == nil {
		d.Problems = []admin.Problem{}
	}
}
