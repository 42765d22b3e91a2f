package trust

import (
	"slices"
	"testing"

	"github.com/stockade-dev/stockade/verifier/skill"
)

func rotation(t *testing.T, old, nu string, ids ...skill.ID) *skill.Rotation {
	t.Helper()
	keys := map[string][]byte{"owner": ownerKey, "stranger": strangerKey}
	env, err := skill.SignRotation(keys[old], keys[nu], ids)
	if err != nil {
		t.Fatal(err)
	}
	r, err := skill.OpenRotation(env)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRotate: a rotation pins the id to the new key, keeps the old key's
// active release running (across a reopen: state.json must accept an active
// release of a former owner), makes the new key's releases updates and the
// old key's mismatches, and carries the high-water mark.
func TestRotate(t *testing.T) {
	s, dir := newStore(t, Options{})
	v1 := build(t, release{})
	mustAdmit(t, s, v1)
	mustPromote(t, s, v1)

	_, err := s.Rotate(rotation(t, "stranger", "owner", "stockade.hello"))
	wantReason(t, err, ReasonUntrusted)
	_, err = s.Rotate(rotation(t, "owner", "stranger", "stockade.other"))
	wantReason(t, err, ReasonNotFound)
	moved, err := s.Rotate(rotation(t, "owner", "stranger"))
	if err != nil || !slices.Equal(moved, []string{"stockade.hello"}) {
		t.Fatalf("%v %v", moved, err)
	}
	s.Close()
	s = openStore(t, dir, Options{})
	if r, err := s.Active("stockade.hello"); err != nil || r.Digest != v1.StatementDigest {
		t.Fatalf("%+v %v", r, err)
	}
	v, err := s.Skill("stockade.hello")
	if err != nil || v.Owner != fingerprint(strangerKey) || !slices.Equal(v.FormerOwners, []skill.Fingerprint{fingerprint(ownerKey)}) {
		t.Fatalf("%+v %v", v, err)
	}
	// The new key inherits the mark: its own sequence 1 is the old key's
	// statement again, with other content.
	_, err = s.Admit(build(t, release{key: strangerKey, desc: "again"}), nil)
	wantReason(t, err, ReasonEquivocation)
	v2 := build(t, release{key: strangerKey, version: "1.1.0", sequence: "2"})
	if r := mustAdmit(t, s, v2); !equalReasons(r.Reasons, []Reason{ReasonUpdate}) {
		t.Fatalf("%+v", r)
	}
	v3 := build(t, release{version: "1.2.0", sequence: "3"})
	if r := mustAdmit(t, s, v3); !slices.Contains(r.Reasons, ReasonKeyMismatch) {
		t.Fatalf("%+v", r)
	}
	mustPromote(t, s, v2)
	wantState(t, s, v1, StateSuperseded)
	// Back to the old key, then the old key revoked: no rotation from it.
	if err := s.RevokeKey(fingerprint(ownerKey)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Rotate(rotation(t, "stranger", "owner"))
	wantReason(t, err, ReasonKeyRevoked)
	_, err = s.Rotate(rotation(t, "owner", "stranger"))
	wantReason(t, err, ReasonKeyRevoked)
	keys := s.Keys()
	if len(keys) != 2 || !keys[0].Revoked && !keys[1].Revoked {
		t.Fatalf("%+v", keys)
	}
	if err := s.AuditVerify(); err != nil {
		t.Fatal(err)
	}
}

// TestQuarantine: a tampered active release stops running, is recorded, and
// can be promoted again; a revoked one stays revoked.
func TestQuarantine(t *testing.T) {
	s, dir := newStore(t, Options{})
	v1 := build(t, release{})
	mustAdmit(t, s, v1)
	mustPromote(t, s, v1)
	r, err := s.Quarantine("stockade.hello", v1.StatementDigest, ReasonTampered, "modules/hello.wasm changed")
	if err != nil || r.State != StateQuarantined || !slices.Contains(r.Reasons, ReasonTampered) {
		t.Fatalf("%+v %v", r, err)
	}
	_, err = s.Active("stockade.hello")
	wantReason(t, err, ReasonNotActive)
	s.Close()
	s = openStore(t, dir, Options{})
	mustPromote(t, s, v1)
	if _, err := s.Active("stockade.hello"); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeRelease(v1.StatementDigest); err != nil {
		t.Fatal(err)
	}
	_, err = s.Quarantine("stockade.hello", v1.StatementDigest, ReasonTampered, "x")
	wantReason(t, err, ReasonRevoked)
	_, err = s.Quarantine("stockade.hello", skill.Digest{}, ReasonTampered, "x")
	wantReason(t, err, ReasonNotFound)
}

func TestPromoteRefusesFailedAudit(t *testing.T) {
	s, _ := newStore(t, Options{})
	v1 := build(t, release{})
	mustAdmit(t, s, v1, "modules/hello.wasm: imports.allowed")
	err := s.Promote("stockade.hello", "1.0.0", v1.StatementDigest)
	wantReason(t, err, ReasonAuditFailed)
}
