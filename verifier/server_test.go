//go:build linux

package verifier

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/skill"
)

const helloID = "stockade.hello"

func TestStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	st, err := e.admin().Status()
	if err != nil || st.Role != "verifier" || st.PID != os.Getpid() {
		t.Fatalf("%+v %v", st, err)
	}
}

// TestAdminRefusesOtherUID: the kernel says we are not an admin (and not
// root), so the verifier refuses before Hello.
func TestAdminRefusesOtherUID(t *testing.T) {
	t.Parallel()
	if os.Getuid() == 0 {
		t.Skip("root is always an admin; TestAdminPeers covers other uids")
	}
	e := newEnv(t, Config{AdminUIDs: []uint32{uint32(os.Getuid()) + 4242}})
	_, err := admin.Dial(e.sock)
	reasonIs(t, err, ipc.ReasonDenied)
}

func TestAdminChannelOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: e.sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := ipc.NewConn(nc)
	defer c.Close()
	if _, err := c.Handshake(ipc.ChannelAgent, "test"); !errors.Is(err, ipc.ErrVersionMismatch) {
		t.Fatalf("agent channel on admin.sock: %v", err)
	}
}

// TestInstallQuarantines: a first release is quarantined new_publisher and
// new_skill, with its audit report, and cannot be resolved.
func TestInstallQuarantines(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	b := build(t, variant{})
	r, err := e.install(c, b)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != admin.StateQuarantined || !slices.Equal(r.Reasons, []string{"new_publisher", "new_skill"}) ||
		r.Digest != b.digest || r.Publisher != fp(keyA) || r.ID != helloID || r.Version != "1.0.0" || r.Sequence != 1 {
		t.Fatalf("%+v", r)
	}
	if r.Audit == nil || !r.Audit.OK || len(r.Audit.Modules) != 1 || len(r.Audit.Modules[0].Checks) < 10 {
		t.Fatalf("audit %+v", r.Audit)
	}
	if _, err := e.resolve(helloID, ""); err == nil {
		t.Fatal("a quarantined release resolved")
	} else {
		reasonIs(t, err, ipc.ReasonNotActive)
	}
	list, err := c.List()
	if err != nil || len(list) != 1 || list[0].Digest != b.digest || list[0].Audit != nil {
		t.Fatalf("%+v %v", list, err)
	}
	// Installing the same release again changes nothing.
	if r2, err := e.install(c, b); err != nil || r2.State != admin.StateQuarantined || r2.Digest != b.digest {
		t.Fatalf("%+v %v", r2, err)
	}
	if _, err := e.resolve("stockade.nothing", ""); err == nil {
		t.Fatal("an unknown skill resolved")
	} else {
		reasonIs(t, err, ipc.ReasonNotFound)
	}
}

// TestPromoteAndResolve: promote needs the exact digest; the active release
// resolves with its manifest and module bytes, which hash right.
func TestPromoteAndResolve(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	b := build(t, variant{})
	if _, err := e.install(c, b); err != nil {
		t.Fatal(err)
	}
	other := build(t, variant{set: map[string]string{"description": `"Another."`}})
	_, err := c.Promote(helloID, "1.0.0", other.digest)
	reasonIs(t, err, ipc.ReasonWrongDigest)
	_, err = c.Promote(helloID, "1.0.0", "sha256:nothex")
	reasonIs(t, err, ipc.ReasonBadRequest)
	r, err := c.Promote(helloID, "1.0.0", b.digest)
	if err != nil || r.State != admin.StateActive {
		t.Fatalf("%+v %v", r, err)
	}
	res, err := e.resolve(helloID, "")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := b.sk.File("modules/hello.wasm")
	if res.Digest != b.digest || res.Publisher != fp(keyA) || res.Version != "1.0.0" ||
		len(res.Modules) != 1 || res.Modules[0].Path != "modules/hello.wasm" ||
		!bytes.Equal(res.modules[0], want.Data) || res.Modules[0].SHA256 != want.SHA256.String() {
		t.Fatalf("%+v", res.Resolved)
	}
	if sum := sha256.Sum256(res.modules[0]); skill.Digest(sum) != want.SHA256 {
		t.Fatal("module bytes do not hash to the signed digest")
	}
	m := res.Manifest
	if len(m.Tools) != 1 || m.Tools[0].Name != "hello" || m.Tools[0].Export != "hello" ||
		m.Tools[0].InputSchema == "" || !slices.Equal(m.Capabilities.HTTP, []string{"api.example.com"}) ||
		m.Limits.Fuel != 1_000_000 || m.Limits.TimeoutMS != 2000 || res.Modules[0].MemoryLimitPages == 0 {
		t.Fatalf("%+v", m)
	}
	if _, err := e.resolve(helloID, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	_, err = e.resolve(helloID, "2.0.0")
	reasonIs(t, err, ipc.ReasonNotActive)
}

// TestTamperedModule: a module file changed on disk is caught at resolve
// time; the release is quarantined (tampered) in the store and its audit
// log; doctor reports it; installing the archive again repairs it.
func TestTamperedModule(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	b := build(t, variant{})
	e.mustActivate(c, b)
	if _, err := e.resolve(helloID, ""); err != nil {
		t.Fatal(err)
	}
	if d, err := c.Doctor(); err != nil || !d.OK {
		t.Fatalf("%+v %v", d, err)
	}
	path := e.installedFile(b.digest, "modules/hello.wasm")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = e.resolve(helloID, "")
	reasonIs(t, err, ipc.ReasonTampered)
	list, _ := c.List()
	if len(list) != 1 || list[0].State != admin.StateQuarantined || !slices.Contains(list[0].Reasons, "tampered") {
		t.Fatalf("%+v", list)
	}
	_, err = e.resolve(helloID, "")
	reasonIs(t, err, ipc.ReasonNotActive)
	d, err := c.Doctor()
	if err != nil || d.OK || len(d.Problems) != 1 || d.Problems[0].Kind != admin.ProblemTampered ||
		d.Releases[0].Files != admin.FilesTampered {
		t.Fatalf("%+v %v", d, err)
	}
	// Promote re-checks the files: still tampered.
	_, err = c.Promote(helloID, "1.0.0", b.digest)
	reasonIs(t, err, ipc.ReasonTampered)
	// The archive repairs the installed copy; promote again.
	if _, err := e.install(c, b); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Promote(helloID, "1.0.0", b.digest); err != nil {
		t.Fatal(err)
	}
	if _, err := e.resolve(helloID, ""); err != nil {
		t.Fatal(err)
	}
	if d, err := c.Doctor(); err != nil || !d.OK {
		t.Fatalf("%+v %v", d, err)
	}
}

// TestTamperedExtraFile: a file added to an installed release is tampering
// too.
func TestTamperedExtraFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	b := build(t, variant{})
	e.mustActivate(c, b)
	if err := os.WriteFile(e.installedFile(b.digest, "modules/evil.wasm"), []byte("\x00asm"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := e.resolve(helloID, "")
	reasonIs(t, err, ipc.ReasonTampered)
}

// TestKeyMismatch: a second key for a pinned skill is quarantined
// key_mismatch, and promote refuses it.
func TestKeyMismatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	e.mustActivate(c, build(t, variant{}))
	b2 := build(t, variant{key: keyB, set: map[string]string{"version": `"1.1.0"`, "sequence": "2"}})
	r, err := e.install(c, b2)
	if err != nil || r.State != admin.StateQuarantined || !slices.Contains(r.Reasons, "key_mismatch") {
		t.Fatalf("%+v %v", r, err)
	}
	_, err = c.Promote(helloID, "1.1.0", b2.digest)
	reasonIs(t, err, ipc.ReasonKeyMismatch)
	if res, err := e.resolve(helloID, ""); err != nil || res.Version != "1.0.0" {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestRollbackEquivocation: a lower sequence is refused rollback; the
// high-water sequence with other content is refused equivocation and kept
// as evidence; neither leaves files behind.
func TestRollbackEquivocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	e.mustActivate(c, build(t, variant{set: map[string]string{"version": `"1.1.0"`, "sequence": "2"}}))
	_, err := e.install(c, build(t, variant{}))
	reasonIs(t, err, ipc.ReasonRollback)
	evil := build(t, variant{set: map[string]string{"version": `"1.1.0"`, "sequence": "2", "description": `"Other."`}})
	_, err = e.install(c, evil)
	reasonIs(t, err, ipc.ReasonEquivocation)
	info, err := c.Show(helloID)
	if err != nil || len(info.Equivocations) != 1 || info.Equivocations[0].Refused != evil.digest ||
		info.Owner != fp(keyA) || len(info.Releases) != 1 {
		t.Fatalf("%+v %v", info, err)
	}
	if d, err := c.Doctor(); err != nil || !d.OK {
		t.Fatalf("refused releases left files: %+v %v", d, err)
	}
}

// TestRevoke: revoking the key or the release stops the next resolve.
func TestRevoke(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"key", "skill"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, Config{})
			c := e.admin()
			b := build(t, variant{})
			e.mustActivate(c, b)
			if _, err := e.resolve(helloID, ""); err != nil {
				t.Fatal(err)
			}
			var err error
			if by == "key" {
				err = c.RevokeKey(fp(keyA))
			} else {
				err = c.RevokeSkill(helloID, b.digest)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.resolve(helloID, "")
			reasonIs(t, err, ipc.ReasonRevoked)
			_, err = c.Promote(helloID, "1.0.0", b.digest)
			reasonIs(t, err, ipc.ReasonRevoked)
			next := build(t, variant{set: map[string]string{"version": `"1.1.0"`, "sequence": "2"}})
			_, err = e.install(c, next)
			if by == "key" {
				reasonIs(t, err, ipc.ReasonRevoked) // refused before the ZIP is parsed
			} else if err != nil {
				t.Fatal(err) // a new release of a good key is fine
			}
			keys, err := c.TrustList()
			if err != nil || len(keys) != 1 || keys[0].Revoked != (by == "key") || !slices.Equal(keys[0].Skills, []string{helloID}) {
				t.Fatalf("%+v %v", keys, err)
			}
			if d, err := c.Doctor(); err != nil || !d.OK {
				t.Fatalf("%+v %v", d, err)
			}
		})
	}
}

func TestRevokeSkillOfAnotherID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	b := build(t, variant{})
	if _, err := e.install(c, b); err != nil {
		t.Fatal(err)
	}
	reasonIs(t, c.RevokeSkill("stockade.other", b.digest), ipc.ReasonBadRequest)
	reasonIs(t, c.RevokeKey("not a fingerprint"), ipc.ReasonBadRequest)
}

func TestDisableEnable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	e.mustActivate(c, build(t, variant{}))
	if err := c.Disable(helloID); err != nil {
		t.Fatal(err)
	}
	_, err := e.resolve(helloID, "")
	reasonIs(t, err, ipc.ReasonDisabled)
	reasonIs(t, c.Disable(helloID), ipc.ReasonNotActive)
	if err := c.Enable(helloID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.resolve(helloID, ""); err != nil {
		t.Fatal(err)
	}
	reasonIs(t, c.Enable(helloID), ipc.ReasonBadState)
	reasonIs(t, c.Enable("stockade.nothing"), ipc.ReasonNotFound)
}

func TestRemove(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	b1 := build(t, variant{})
	e.mustActivate(c, b1)
	reasonIs(t, c.Remove(helloID, "1.0.0", ""), ipc.ReasonBadState)
	b2 := build(t, variant{set: map[string]string{"version": `"1.1.0"`, "sequence": "2"}})
	if _, err := e.install(c, b2); err != nil {
		t.Fatal(err)
	}
	reasonIs(t, c.Remove(helloID, "1.1.0", b1.digest), ipc.ReasonWrongDigest)
	if err := c.Remove(helloID, "1.1.0", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.installedFile(b2.digest, "skill.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("files of a removed release: %v", err)
	}
	reasonIs(t, c.Remove(helloID, "1.1.0", ""), ipc.ReasonNotFound)
	if d, err := c.Doctor(); err != nil || !d.OK {
		t.Fatalf("%+v %v", d, err)
	}
}

// TestAuditFailed: a module importing a host function its capabilities do
// not allow is quarantined audit_failed, and cannot be promoted.
func TestAuditFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	ok := build(t, variant{src: notesDir})
	if r, err := e.install(c, ok); err != nil || !r.Audit.OK || slices.Contains(r.Reasons, "audit_failed") {
		t.Fatalf("%+v %v", r, err)
	}
	bad := build(t, variant{src: notesDir, set: map[string]string{"storage": "false", "id": `"stockade.nostore"`}})
	r, err := e.install(c, bad)
	if err != nil || r.Audit.OK || !slices.Contains(r.Reasons, "audit_failed") ||
		!slices.Contains(r.AuditProblems, "modules/notes.wasm: imports.allowed") {
		t.Fatalf("%+v %v", r, err)
	}
	_, err = c.Promote("stockade.nostore", "1.0.0", bad.digest)
	reasonIs(t, err, ipc.ReasonAuditFailed)
}

// TestRotation: a rotation signed by both keys moves the skill to the new
// key, whose releases are then updates, not key mismatches; a rotation
// signed by one key, from a revoked key, or by a key that does not own the
// skill is refused.
func TestRotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	e.mustActivate(c, build(t, variant{}))

	// One signature (the new key's) over a rotation statement.
	payload, err := (&skill.Rotation{Old: skill.Fingerprint(fp(keyA)), New: skill.Fingerprint(fp(keyB)), All: true}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	one, _ := skill.Sign(skill.RotationPayloadType, payload, keyB)
	oneEnv, _ := one.Marshal()
	_, err = c.ImportRotation(oneEnv)
	reasonIs(t, err, ipc.ReasonInvalid)
	// Both signatures, but from a key that owns nothing.
	keyC := testKey("publisher C")
	stranger, err := skill.SignRotation(keyC, keyB, []skill.ID{helloID})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ImportRotation(stranger)
	reasonIs(t, err, ipc.ReasonUntrusted)
	// A skill statement is not a rotation.
	_, err = c.ImportRotation([]byte(`{"payloadType":"x"}`))
	reasonIs(t, err, ipc.ReasonMalformed)

	env, err := skill.SignRotation(keyA, keyB, []skill.ID{helloID})
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.ImportRotation(env)
	if err != nil || k.Fingerprint != fp(keyB) || !slices.Equal(k.Skills, []string{helloID}) {
		t.Fatalf("%+v %v", k, err)
	}
	// The old key's release still runs until the new key's replaces it.
	if _, err := e.resolve(helloID, ""); err != nil {
		t.Fatal(err)
	}
	b2 := build(t, variant{key: keyB, set: map[string]string{"version": `"1.1.0"`, "sequence": "2"}})
	r, err := e.install(c, b2)
	if err != nil || slices.Contains(r.Reasons, "key_mismatch") || !slices.Contains(r.Reasons, "update") {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := c.Promote(helloID, "1.1.0", b2.digest); err != nil {
		t.Fatal(err)
	}
	if res, err := e.resolve(helloID, ""); err != nil || res.Publisher != fp(keyB) {
		t.Fatalf("%+v %v", res, err)
	}
	// The old key's next release is now the mismatch.
	b3 := build(t, variant{set: map[string]string{"version": `"1.2.0"`, "sequence": "3"}})
	if r, err := e.install(c, b3); err != nil || !slices.Contains(r.Reasons, "key_mismatch") {
		t.Fatalf("%+v %v", r, err)
	}
	// The rotation carried the high-water mark: no rollback by the new key.
	_, err = e.install(c, build(t, variant{key: keyB}))
	reasonIs(t, err, ipc.ReasonRollback)
	// Back from a revoked key: refused.
	if err := c.RevokeKey(fp(keyA)); err != nil {
		t.Fatal(err)
	}
	back, _ := skill.SignRotation(keyB, keyA, nil)
	_, err = c.ImportRotation(back)
	reasonIs(t, err, ipc.ReasonRevoked)
}

// TestDoctor: clean after installs; then it names a missing release, an
// orphan and a leftover, and a restart repairs what a crash could leave.
func TestDoctor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	b := build(t, variant{})
	e.mustActivate(c, b)
	q := build(t, variant{set: map[string]string{"version": `"1.1.0"`, "sequence": "2"}})
	if _, err := e.install(c, q); err != nil {
		t.Fatal(err)
	}
	d, err := c.Doctor()
	if err != nil || !d.OK || len(d.Releases) != 2 || d.AuditRecords == 0 {
		t.Fatalf("%+v %v", d, err)
	}
	skills := filepath.Join(e.state, SkillsDir)
	hexQ := q.digest[len("sha256:"):]
	// What a crash leaves: an installed release the store does not hold
	// (made here by moving one aside), and a staging directory.
	orphan := filepath.Join(skills, hexQ)
	aside := filepath.Join(e.state, "aside")
	if err := os.Rename(orphan, aside); err != nil {
		t.Fatal(err)
	}
	d, _ = c.Doctor()
	if d.OK || len(d.Problems) != 1 || d.Problems[0].Kind != admin.ProblemMissing {
		t.Fatalf("%+v", d)
	}
	if err := c.Remove(helloID, "1.1.0", q.digest); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(aside, orphan); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(skills, ".staging-crashed"), 0o700); err != nil {
		t.Fatal(err)
	}
	d, _ = c.Doctor()
	kinds := []string{}
	for _, p := range d.Problems {
		kinds = append(kinds, p.Kind)
	}
	slices.Sort(kinds)
	if d.OK || !slices.Equal(kinds, []string{admin.ProblemLeftover, admin.ProblemOrphan}) {
		t.Fatalf("%+v", d)
	}
	e.stop()
	e2 := startEnv(t, e.state, Config{})
	if d, err := e2.admin().Doctor(); err != nil || !d.OK {
		t.Fatalf("after restart: %+v %v", d, err)
	}
	if _, err := e2.resolve(helloID, ""); err != nil {
		t.Fatal(err)
	}
}

// TestInstallDescriptors: install reads regular files only, by descriptor;
// a request with the wrong number of descriptors ends the connection.
func TestInstallDescriptors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	b := build(t, variant{})
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	sf, _ := os.Open(b.sig)
	defer sf.Close()
	_, err = c.Install(pr, sf)
	reasonIs(t, err, ipc.ReasonBadRequest)
	// A tampered archive with the right signature: invalid.
	data, _ := os.ReadFile(b.archive)
	data[len(data)/2] ^= 1
	bad := filepath.Join(t.TempDir(), "bad.skill")
	os.WriteFile(bad, data, 0o600)
	af, _ := os.Open(bad)
	defer af.Close()
	_, err = c.Install(af, sf)
	reasonIs(t, err, ipc.ReasonInvalid)
	// The archive and the signature swapped: malformed.
	af2, _ := os.Open(b.archive)
	defer af2.Close()
	_, err = c.Install(sf, af2)
	reasonIs(t, err, ipc.ReasonMalformed)

	// One descriptor where install needs two.
	nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: e.sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := ipc.NewConn(nc)
	defer raw.Close()
	if _, err := raw.Handshake(ipc.ChannelAdmin, "test"); err != nil {
		t.Fatal(err)
	}
	_, err = raw.CallFiles(1, ipc.KindInstall, admin.InstallRequest{}, ipc.ControlFrameMax, []*os.File{af2}, &admin.Release{}, ipc.WriteTimeout)
	if !errors.Is(err, ipc.ErrProtocol) {
		t.Fatalf("one descriptor: %v", err)
	}
	// Descriptors with a request that takes none.
	nc2, _ := net.DialUnix("unix", nil, &net.UnixAddr{Name: e.sock, Net: "unix"})
	raw2, _ := ipc.NewConn(nc2)
	defer raw2.Close()
	raw2.Handshake(ipc.ChannelAdmin, "test")
	_, err = raw2.CallFiles(1, ipc.KindList, ipc.Empty{}, ipc.ControlFrameMax, []*os.File{af2}, &admin.ReleaseList{}, ipc.WriteTimeout)
	if !errors.Is(err, ipc.ErrProtocol) {
		t.Fatalf("descriptor with list: %v", err)
	}
}

// TestBrokerLinkIsNotAdmin: the broker's channel carries status and
// resolve, nothing that changes state.
func TestBrokerLinkIsNotAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	var r admin.Release
	err := e.link.Call(99, ipc.KindPromote, admin.ReleaseRef{ID: helloID, Version: "1.0.0", Digest: "sha256:00"}, &r, ipc.WriteTimeout)
	if !errors.Is(err, ipc.ErrProtocol) {
		t.Fatalf("promote on the broker link: %v", err)
	}
}

// TestAutoActivate: with auto-activation on, a clean update by the pinned
// key runs at once; one asking for more capabilities still waits.
func TestAutoActivate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{AutoActivate: true})
	c := e.admin()
	e.mustActivate(c, build(t, variant{}))
	r, err := e.install(c, build(t, variant{set: map[string]string{"version": `"1.1.0"`, "sequence": "2"}}))
	if err != nil || r.State != admin.StateActive {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = e.install(c, build(t, variant{set: map[string]string{"version": `"1.2.0"`, "sequence": "3", "http": `["api.example.com", "evil.example.com"]`}}))
	if err != nil || r.State != admin.StateQuarantined || !slices.Contains(r.Reasons, "new_capabilities") {
		t.Fatalf("%+v %v", r, err)
	}
	if res, err := e.resolve(helloID, ""); err != nil || res.Version != "1.1.0" {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestResolveDuringChanges: brokers resolving while an admin installs,
// promotes and removes releases always get a whole active release or a
// refusal saying why; a release superseded and removed under a resolve is
// never taken for a tampered one.
func TestResolveDuringChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Config{})
	c := e.admin()
	e.mustActivate(c, build(t, variant{}))
	const releases = 6
	bs := make([]built, releases)
	for i := range bs {
		bs[i] = build(t, variant{set: map[string]string{"version": fmt.Sprintf(`"1.%d.0"`, i+1), "sequence": fmt.Sprint(i + 2)}})
	}
	stop := make(chan struct{})
	errc := make(chan error, 4)
	for range 4 {
		link := e.newLink()
		go func() {
			var id uint64
			for {
				select {
				case <-stop:
					errc <- nil
					return
				default:
				}
				id++
				res, err := resolveOn(link, id, helloID, "")
				if err != nil {
					errc <- err
					return
				}
				if len(res.modules) != 1 || len(res.Modules) != 1 {
					errc <- fmt.Errorf("resolved %+v", res.Resolved)
					return
				}
			}
		}()
	}
	prev := ""
	for _, b := range bs {
		e.mustActivate(c, b)
		if prev != "" {
			if err := c.Remove(helloID, prev, ""); err != nil {
				t.Fatal(err)
			}
		}
		prev = b.sk.Statement.Version.String()
	}
	close(stop)
	for range 4 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	if d, err := c.Doctor(); err != nil || !d.OK {
		t.Fatalf("%+v %v", d, err)
	}
}
