package main

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"

	"github.com/stockade-dev/stockade/verifier"
	"github.com/stockade-dev/stockade/verifier/skill"
)

// TestGoldenOnline drives a real verifier (`stockade-verifier serve`,
// started the way stockaded starts it: serve_test.go's harness, listener
// as fd 3, handoff socketpair as fd 4, its own state directory) with the
// real CLI binary through one skill's life: install into quarantine,
// promote (wrong digest first), updates, rollback, equivocation, another
// key, tampering, a failed audit, disable and enable, remove, rotation,
// revocation, doctor, and a caller who is not an admin. Every step's
// stdout, stderr and exit code is compared with
// testdata/cli/online-NN-<step>.golden (regenerate with
// go test ./cmd/stockade-verifier -run TestGolden -update).
func TestGoldenOnline(t *testing.T) {
	h := newServeHarness(t)
	h.start()
	w := newWorkspace(t)
	env := []string{adminSocketEnv + "=" + h.sock}
	masks := []mask{
		maskTime, maskPID, maskUptime,
		{regexp.MustCompile(regexp.QuoteMeta(filepath.Dir(h.sock))), "$$SOCKDIR"},
		{regexp.MustCompile(regexp.QuoteMeta(h.state)), "$$STATE"},
	}

	// The releases: hello 1.0.0 (sequence 1) by the publisher key, and
	// variants of it.
	w.variant("update.skill", helloSrc, "1.0.1", 2, "", publisherKey)
	w.variant("rollback.skill", helloSrc, "0.9.0", 1, "An older greeting.\n", publisherKey)
	w.variant("equivocation.skill", helloSrc, "1.0.1", 2, "Another greeting, same sequence.\n", publisherKey)
	w.variant("stranger.skill", helloSrc, "1.1.0", 3, "", otherKey)
	w.build("bad-audit.skill", badAuditSrc, publisherKey)
	w.copyArchive("hello.skill", "tampered.skill")
	tampered := w.read("tampered.skill")
	tampered[len(tampered)/3] ^= 0x20
	w.write("tampered.skill", tampered, 0o644)
	rotation, err := skill.SignRotation(publisherKey, newKey2, []skill.ID{"stockade.hello"})
	if err != nil {
		t.Fatal(err)
	}
	w.write("rotation.sig", rotation, 0o644)
	digest := func(name string) string {
		sk, err := openArchive(w.path(name), "")
		if err != nil {
			t.Fatal(err)
		}
		return sk.StatementDigest.String()
	}
	d1 := digest("hello.skill")
	otherFP := string(skill.FingerprintOf(otherKey.Public().(ed25519.PublicKey)))

	// The default socket path: admin.sock in $XDG_RUNTIME_DIR/stockade
	// (a link to the harness's socket).
	if err := os.MkdirAll(w.path("run/stockade"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(h.sock, w.path("run/stockade/admin.sock")); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		name string
		env  []string // nil: the socket from the environment
		args []string
		code outcome
		pre  func()
	}{
		{name: "status", args: []string{"status"}, code: outOK},
		{name: "status-default-socket", env: []string{}, args: []string{"status", "--json"}, code: outOK},
		{name: "status-flag-socket", env: []string{}, args: []string{"--socket", h.sock, "status"}, code: outOK},
		{name: "list-empty", args: []string{"list"}, code: outOK},
		{name: "install-new", args: []string{"install", "hello.skill"}, code: outUntrusted},
		{name: "promote-wrong-digest", args: []string{"promote", "stockade.hello@1.0.0", "--digest", digest("update.skill")}, code: outWrongDigest},
		{name: "promote-not-a-digest", args: []string{"promote", "stockade.hello@1.0.0", "--digest", "deadbeef"}, code: outUsage},
		{name: "promote-no-digest", args: []string{"promote", "stockade.hello@1.0.0"}, code: outUsage},
		{name: "promote", args: []string{"promote", "stockade.hello@1.0.0", "--digest", d1}, code: outOK},
		{name: "install-again", args: []string{"install", "hello.skill"}, code: outOK},
		{name: "install-update", args: []string{"install", "update.skill"}, code: outUntrusted},
		{name: "install-rollback", args: []string{"install", "rollback.skill"}, code: outRollback},
		{name: "install-equivocation", args: []string{"install", "equivocation.skill", "--json"}, code: outRollback},
		{name: "install-key-mismatch", args: []string{"install", "stranger.skill"}, code: outKeyMismatch},
		{name: "install-tampered", args: []string{"install", "tampered.skill", "--sig", "hello.skill.sig"}, code: outInvalid},
		{name: "install-audit-failed", args: []string{"install", "bad-audit.skill"}, code: outAuditFailed},
		{name: "install-missing", args: []string{"install", "nowhere.skill"}, code: outNotFound},
		{name: "list", args: []string{"list"}, code: outOK},
		{name: "list-json", args: []string{"list", "--json"}, code: outOK},
		{name: "show", args: []string{"show", "stockade.hello"}, code: outOK},
		{name: "show-json", args: []string{"show", "stockade.hello", "--json"}, code: outOK},
		{name: "show-unknown", args: []string{"show", "nobody.nothing"}, code: outNotFound},
		{name: "show-bad-id", args: []string{"show", "Not/An/ID"}, code: outUsage},
		{name: "trust-list", args: []string{"trust", "list"}, code: outOK},
		{name: "disable", args: []string{"disable", "stockade.hello"}, code: outOK},
		{name: "enable", args: []string{"enable", "stockade.hello"}, code: outOK},
		{name: "enable-again", args: []string{"enable", "stockade.hello"}, code: outConflict},
		{name: "remove", args: []string{"remove", "stockade.hello@1.0.1"}, code: outOK},
		{name: "remove-active", args: []string{"remove", "stockade.hello@1.0.0", "--digest", d1}, code: outConflict},
		{name: "import-rotation", args: []string{"trust", "import-rotation", "rotation.sig"}, code: outOK},
		{name: "import-rotation-again", args: []string{"trust", "import-rotation", "rotation.sig"}, code: outUntrusted},
		{name: "trust-list-rotated", args: []string{"trust", "list", "--json"}, code: outOK},
		{name: "revoke-skill", args: []string{"revoke", "skill", "stockade.hello@" + d1}, code: outOK},
		{name: "install-revoked-release", args: []string{"install", "hello.skill"}, code: outRevoked},
		{name: "revoke-key", args: []string{"revoke", "key", otherFP}, code: outOK},
		{name: "revoke-key-bad", args: []string{"revoke", "key", "ed25519:nope"}, code: outUsage},
		{name: "install-revoked-key", args: []string{"install", "stranger.skill"}, code: outRevoked},
		{name: "doctor", args: []string{"doctor"}, code: outOK},
		{name: "doctor-tampered", args: []string{"doctor"}, code: outDamaged, pre: func() {
			// Change an installed file behind the verifier's back.
			p := filepath.Join(h.state, verifier.SkillsDir, digest("bad-audit.skill")[len("sha256:"):], "skill.toml")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, append(b, "# changed\n"...), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "unavailable", env: []string{}, args: []string{"--socket", w.path("no.sock"), "list"}, code: outUnavailable},
	}
	for i, st := range steps {
		if st.pre != nil {
			st.pre()
		}
		e := env
		if st.env != nil {
			e = st.env
		}
		r := w.run(e, st.args...)
		if outcome(r.code) != st.code {
			t.Errorf("%s: exit %d (%s); want %d (%s)\nstdout:\n%s\nstderr:\n%s", st.name, r.code, outcome(r.code), st.code, st.code, r.stdout, r.stderr)
		}
		w.check(goldenName(i, st.name), r, st.args, masks...)
	}

	// A caller who is not an admin: uid 65534, allowed to connect (the
	// socket's mode) and refused by the verifier.
	if os.Getuid() != 0 {
		t.Log("skipping the denied step: running the CLI as another uid needs root")
		return
	}
	if err := os.Chmod(filepath.Dir(h.sock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.sock, 0o666); err != nil {
		t.Fatal(err)
	}
	args := []string{"list"}
	r := w.runAs(&syscall.Credential{Uid: 65534, Gid: 65534}, env, args...)
	if outcome(r.code) != outDenied {
		t.Errorf("denied: exit %d (%s); want denied\nstderr:\n%s", r.code, outcome(r.code), r.stderr)
	}
	w.check(goldenName(len(steps), "denied"), r, args, masks...)
}

func goldenName(i int, name string) string {
	return "online-" + string(rune('0'+i/10)) + string(rune('0'+i%10)) + "-" + name
}
