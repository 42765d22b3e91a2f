package trust

import (
	"slices"
	"testing"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// TestLifecycle walks one skill through first install, promotion, an
// update, a stranger's key, rollback and equivocation.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, Options{})
	v1 := build(t, release{})
	const id = "stockade.hello"

	// First install: nobody owns the id and the key owns nothing.
	r := mustAdmit(t, s, v1)
	if r.State != StateQuarantined || !equalReasons(r.Reasons, []Reason{ReasonNewPublisher, ReasonNewSkill}) {
		t.Fatalf("first install: %s %v", r.State, r.Reasons)
	}
	if r.Publisher != fingerprint(ownerKey) || r.Digest != v1.StatementDigest {
		t.Fatalf("release names %s %s", r.Publisher, r.Digest)
	}
	_, err := s.Active(id)
	wantReason(t, err, ReasonNotActive)

	// Admitting it again changes nothing.
	if again := mustAdmit(t, s, v1); again.State != StateQuarantined || len(s.List()) != 1 {
		t.Fatalf("admit again: %s, %d releases", again.State, len(s.List()))
	}

	// Promote must name the reviewed digest: another release's is refused.
	other := build(t, release{desc: "Another build."})
	err = s.Promote(id, "1.0.0", other.StatementDigest)
	wantReason(t, err, ReasonWrongDigest)
	err = s.Promote(id, "1.0.0", skill.Digest{})
	wantReason(t, err, ReasonWrongDigest)
	err = s.Promote(id, "9.9.9", v1.StatementDigest)
	wantReason(t, err, ReasonNotFound)
	wantState(t, s, v1, StateQuarantined)

	mustPromote(t, s, v1)
	act, err := s.Active(id)
	if err != nil || act.Digest != v1.StatementDigest {
		t.Fatalf("Active = %v, %v", act.Digest, err)
	}
	err = s.Promote(id, "1.0.0", v1.StatementDigest)
	wantReason(t, err, ReasonBadState)

	// An update by the owner with the same capabilities: quarantined
	// "update" while auto-activation is off.
	v2 := build(t, release{version: "1.1.0", sequence: "2"})
	mustAdmit(t, s, v2)
	wantState(t, s, v2, StateQuarantined, ReasonUpdate)

	// A stranger's key for the id: key_mismatch, and it can never be
	// promoted (that takes a rotation).
	evil := build(t, release{key: strangerKey, version: "1.2.0", sequence: "3"})
	r = mustAdmit(t, s, evil)
	if !equalReasons(r.Reasons, []Reason{ReasonNewPublisher, ReasonKeyMismatch}) {
		t.Fatalf("stranger: %v", r.Reasons)
	}
	err = s.Promote(id, "1.2.0", evil.StatementDigest)
	wantReason(t, err, ReasonKeyMismatch)
	wantState(t, s, evil, StateQuarantined)
	if act, _ := s.Active(id); act.Digest != v1.StatementDigest {
		t.Fatal("the stranger's release became active")
	}
	// A stranger's high sequence does not block the owner.
	strangerHigh := build(t, release{key: strangerKey, version: "5.0.0", sequence: "50"})
	mustAdmit(t, s, strangerHigh)

	mustPromote(t, s, v2)
	wantState(t, s, v1, StateSuperseded)
	wantState(t, s, v2, StateActive)

	// Rollback: a lower sequence than the owner's high-water mark.
	old := build(t, release{version: "0.9.0", sequence: "1", desc: "Old."})
	_, err = s.Admit(old, nil)
	wantReason(t, err, ReasonRollback)

	// Equivocation: sequence 2 again with another statement. Refused,
	// recorded in the state and the log.
	twin := build(t, release{version: "1.1.0", sequence: "2", desc: "Twin."})
	_, err = s.Admit(twin, nil)
	wantReason(t, err, ReasonEquivocation)
	if eq := s.st.Skills[id].Equivocations; len(eq) != 1 || eq[0].Refused != twin.StatementDigest.String() {
		t.Fatalf("equivocation not recorded: %+v", eq)
	}
	if !logHas(t, s, eventAdmit, decisionRefused, ReasonEquivocation) {
		t.Fatal("equivocation not in the audit log")
	}
	for _, r := range s.List() {
		if r.Digest == twin.StatementDigest || r.Digest == old.StatementDigest {
			t.Fatal("a refused release is in the store")
		}
	}

	// Superseded releases may be promoted again, explicitly.
	mustPromote(t, s, v1)
	wantState(t, s, v2, StateSuperseded)
	if err := s.AuditVerify(); err != nil {
		t.Fatal(err)
	}
}

// logHas reports whether the audit log has a record of event with
// decision and reason.
func logHas(t *testing.T, s *Store, event, decision string, reason Reason) bool {
	t.Helper()
	for _, r := range readLog(t, s.dir).records {
		if r.Event == event && r.Decision == decision && slices.Contains(r.Reasons, reason) {
			return true
		}
	}
	return false
}

func TestQuarantineReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		auto     bool
		update   release
		problems []string
		state    State
		reasons  []Reason
	}{
		{"update, auto off", false, release{version: "1.1.0", sequence: "2"}, nil, StateQuarantined, []Reason{ReasonUpdate}},
		{"update, auto on", true, release{version: "1.1.0", sequence: "2"}, nil, StateActive, []Reason{}},
		{"new host", true, release{version: "1.1.0", sequence: "2", http: `["api.example.com", "evil.example.net"]`}, nil, StateQuarantined, []Reason{ReasonNewCapabilities}},
		{"fewer hosts", true, release{version: "1.1.0", sequence: "2", http: `[]`}, nil, StateActive, []Reason{}},
		{"failed audit", true, release{version: "1.1.0", sequence: "2"}, []string{"import env.exec not in the host ABI"}, StateQuarantined, []Reason{ReasonAuditFailed}},
		{"stranger, auto on", true, release{key: strangerKey, version: "1.1.0", sequence: "2"}, nil, StateQuarantined, []Reason{ReasonNewPublisher, ReasonKeyMismatch}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t, Options{AutoActivate: tt.auto})
			v1 := build(t, release{})
			mustAdmit(t, s, v1)
			mustPromote(t, s, v1)
			up := build(t, tt.update)
			r := mustAdmit(t, s, up, tt.problems...)
			if r.State != tt.state || !equalReasons(r.Reasons, tt.reasons) {
				t.Fatalf("got %s %v, want %s %v", r.State, r.Reasons, tt.state, tt.reasons)
			}
			act, err := s.Active("stockade.hello")
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]skill.Digest{true: up.StatementDigest, false: v1.StatementDigest}[tt.state == StateActive]; act.Digest != want {
				t.Fatalf("active is %s", act.Digest)
			}
			if tt.problems != nil && !slices.Equal(r.AuditProblems, tt.problems) {
				t.Fatalf("audit problems %q", r.AuditProblems)
			}
		})
	}
}

func TestDisableEnableRemove(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, Options{AutoActivate: true})
	const id = "stockade.hello"
	v1 := build(t, release{})
	mustAdmit(t, s, v1)
	wantReason(t, s.Disable(id), ReasonNotActive)
	mustPromote(t, s, v1)
	if err := s.Disable(id); err != nil {
		t.Fatal(err)
	}
	_, err := s.Active(id)
	wantReason(t, err, ReasonDisabled)
	// No auto-activation while disabled.
	v2 := build(t, release{version: "1.1.0", sequence: "2"})
	wantState(t, s, v1, StateDisabled)
	if r := mustAdmit(t, s, v2); r.State != StateQuarantined || !equalReasons(r.Reasons, []Reason{ReasonUpdate}) {
		t.Fatalf("update of a disabled skill: %s %v", r.State, r.Reasons)
	}
	wantReason(t, s.Remove(id, "1.0.0", v1.StatementDigest), ReasonBadState)
	if err := s.Enable(id); err != nil {
		t.Fatal(err)
	}
	wantReason(t, s.Enable(id), ReasonBadState)
	if _, err := s.Active(id); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(id, "1.1.0", v2.StatementDigest); err != nil {
		t.Fatal(err)
	}
	if n := len(s.List()); n != 1 {
		t.Fatalf("%d releases after remove", n)
	}
	// The high-water mark stays: the removed statement may come back, a
	// twin of it may not.
	mustAdmit(t, s, v2)
	_, err = s.Admit(build(t, release{version: "1.1.0", sequence: "2", desc: "Twin."}), nil)
	wantReason(t, err, ReasonEquivocation)
	wantReason(t, s.Disable("not an id"), ReasonInvalid)
	wantReason(t, s.Disable("stockade.other"), ReasonNotFound)
}

func TestRevocation(t *testing.T) {
	t.Parallel()
	const id = "stockade.hello"
	t.Run("key", func(t *testing.T) {
		t.Parallel()
		s, _ := newStore(t, Options{AutoActivate: true})
		v1 := build(t, release{})
		v2 := build(t, release{version: "1.1.0", sequence: "2", http: `["new.example.com"]`})
		mustAdmit(t, s, v1)
		mustPromote(t, s, v1)
		mustAdmit(t, s, v2) // quarantined: new host
		if err := s.RevokeKey(fingerprint(ownerKey)); err != nil {
			t.Fatal(err)
		}
		_, err := s.Active(id)
		wantReason(t, err, ReasonKeyRevoked)
		wantState(t, s, v1, StateRevoked)
		wantState(t, s, v2, StateRevoked)
		wantReason(t, s.Accept(fingerprint(ownerKey)), ReasonKeyRevoked)
		if err := s.Accept(fingerprint(strangerKey)); err != nil {
			t.Fatal(err)
		}
		_, err = s.Admit(build(t, release{version: "2.0.0", sequence: "9"}), nil)
		wantReason(t, err, ReasonKeyRevoked)
		wantReason(t, s.Promote(id, "1.0.0", v1.StatementDigest), ReasonRevoked)
		wantReason(t, s.Enable(id), ReasonBadState)
		wantReason(t, s.RevokeKey("not a fingerprint"), ReasonInvalid)
	})
	t.Run("release", func(t *testing.T) {
		t.Parallel()
		s, _ := newStore(t, Options{AutoActivate: true})
		v1 := build(t, release{})
		v2 := build(t, release{version: "1.1.0", sequence: "2"})
		// Revoked before the store ever saw it.
		if err := s.RevokeRelease(v2.StatementDigest); err != nil {
			t.Fatal(err)
		}
		mustAdmit(t, s, v1)
		mustPromote(t, s, v1)
		_, err := s.Admit(v2, nil)
		wantReason(t, err, ReasonRevoked)
		if err := s.RevokeRelease(v1.StatementDigest); err != nil {
			t.Fatal(err)
		}
		_, err = s.Active(id)
		wantReason(t, err, ReasonRevoked)
		wantReason(t, s.Promote(id, "1.0.0", v1.StatementDigest), ReasonRevoked)
		wantReason(t, s.Remove(id, "1.0.0", v1.StatementDigest), ReasonBadState)
		// The key is still good: a new release may replace the revoked one.
		v3 := build(t, release{version: "1.2.0", sequence: "3"})
		if r := mustAdmit(t, s, v3); r.State != StateActive {
			t.Fatalf("v3: %s %v", r.State, r.Reasons)
		}
		wantState(t, s, v1, StateRevoked)
	})
}

// TestKnownPublisherNewSkill: a key that owns one id signs another; the new
// id is its own (new_skill), and promoting it pins it.
func TestKnownPublisherNewSkill(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, Options{AutoActivate: true})
	v1 := build(t, release{})
	mustAdmit(t, s, v1)
	mustPromote(t, s, v1)
	other := build(t, release{id: "stockade.other"})
	if r := mustAdmit(t, s, other); r.State != StateQuarantined || !equalReasons(r.Reasons, []Reason{ReasonNewSkill}) {
		t.Fatalf("new skill: %s %v", r.State, r.Reasons)
	}
	// Another key cannot take the id before it is promoted either: both
	// are quarantined, and the first promoted wins.
	claim := build(t, release{id: "stockade.other", key: strangerKey, sequence: "7"})
	mustAdmit(t, s, claim)
	mustPromote(t, s, other)
	wantReason(t, s.Promote("stockade.other", "1.0.0", claim.StatementDigest), ReasonKeyMismatch)
	if act, err := s.Active("stockade.other"); err != nil || act.Publisher != fingerprint(ownerKey) {
		t.Fatalf("Active = %v, %v", act.Publisher, err)
	}
}
