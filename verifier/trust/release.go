package trust

import (
	"slices"
	"time"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// State is where a release is in its lifecycle:
//
//	admit ──► quarantined ──promote──► active ──► superseded (a newer release promoted)
//	   │                                 │  ▲
//	   └─(auto-activation)──► active     ▼  │
//	                                   disabled (Disable / Enable)
//
// and from any state, by RevokeKey or RevokeRelease, revoked: terminal.
// Only an active release may run.
type State string

const (
	StateQuarantined State = "quarantined"
	StateActive      State = "active"
	StateSuperseded  State = "superseded"
	StateDisabled    State = "disabled"
	StateRevoked     State = "revoked"
)

// Release is one signed release of a skill as the store knows it. It is a
// copy: changing it changes nothing in the store.
type Release struct {
	ID        skill.ID
	Version   string
	Sequence  uint64
	Digest    skill.Digest // the statement's SHA-256: what Promote names
	Publisher skill.Fingerprint
	State     State
	// Reasons say why the release was quarantined, in a fixed order; they
	// are kept after promotion as its history.
	Reasons []Reason
	// AuditProblems are the caller's audit findings (ReasonAuditFailed).
	AuditProblems []string
	Capabilities  skill.Capabilities
	FirstSeen     time.Time
	Changed       time.Time
}

func cloneCaps(c skill.Capabilities) skill.Capabilities {
	c.HTTP = slices.Clone(c.HTTP)
	c.Secrets = slices.Clone(c.Secrets)
	c.Channels = slices.Clone(c.Channels)
	return c
}

// escalation lists what next asks for beyond approved: hosts, secrets,
// channels and storage, each as "kind:name".
func escalation(approved, next skill.Capabilities) []string {
	var more []string
	for _, h := range next.HTTP {
		if !slices.Contains(approved.HTTP, h) {
			more = append(more, "http:"+h)
		}
	}
	for _, s := range next.Secrets {
		if !slices.Contains(approved.Secrets, s) {
			more = append(more, "secret:"+s)
		}
	}
	for _, c := range next.Channels {
		if !slices.Contains(approved.Channels, c) {
			more = append(more, "channel:"+c)
		}
	}
	if next.Storage && !approved.Storage {
		more = append(more, "storage")
	}
	return more
}
