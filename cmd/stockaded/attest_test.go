package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/broker/attest"
	"github.com/stockade-dev/stockade/client"
	"github.com/stockade-dev/stockade/ipc"
)

// TestAttestations: every decided call, permitted or denied, comes back with
// a record signed by the key status names; the log verifies offline, also
// across a broker killed with SIGKILL and restarted.
func TestAttestations(t *testing.T) {
	s := startSystem(t, testConfig)
	st := s.status()
	pub, err := attest.ParsePublicKey(st.AttestationKey)
	if err != nil {
		t.Fatalf("status attestation key %q: %v", st.AttestationKey, err)
	}
	out, err := s.call(&ipc.CallRequest{Tool: "process.run", RunID: "r1", Args: []string{"/bin/echo", "attested"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Attestation == nil {
		t.Fatal("no attestation in the outcome")
	}
	signed, err := attest.VerifyRecord(out.Attestation.Record, out.Attestation.Signature, pub)
	if err != nil {
		t.Fatal(err)
	}
	r := signed.Record
	if r.CallID != out.CallID || r.RunID != "r1" || r.Decision != attest.Allow || r.Result.Status != ipc.StatusOK ||
		r.Stdout != attest.DigestBytes([]byte("attested\n")) || r.Artifact.Digest.IsZero() || r.Receipt.Tier != out.Sandbox.Tier {
		t.Fatalf("record does not match the call: %+v", r)
	}
	// A tampered record does not verify.
	bad := append([]byte(nil), out.Attestation.Record...)
	bad[len(bad)/2] ^= 1
	if _, err := attest.VerifyRecord(bad, out.Attestation.Signature, pub); err == nil {
		t.Fatal("a tampered record verified")
	}
	// A denied call is attested too.
	_, err = s.call(&ipc.CallRequest{Tool: "nope"})
	var e *ipc.Error
	if !errorsAs(err, &e) || e.Attestation == nil {
		t.Fatalf("denied call: %v", err)
	}
	denied, err := attest.VerifyRecord(e.Attestation.Record, e.Attestation.Signature, pub)
	if err != nil || denied.Record.Decision != attest.Deny || denied.Record.Result.Error != ipc.ClassInvalidInput {
		t.Fatalf("denied record: %+v %v", denied.Record, err)
	}
	// Kill the broker; calls resume and the log still verifies as one chain.
	if err := syscall.Kill(st.Broker.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(15 * time.Second)
	for {
		c, err := client.Dial(s.socket, 0)
		if err == nil {
			st2, err := c.Status()
			c.Close()
			if err == nil && st2.Broker.PID != st.Broker.PID {
				if st2.AttestationKey != st.AttestationKey {
					t.Fatal("the attestation key changed across a restart")
				}
				break
			}
		}
		if time.Now().After(end) {
			t.Fatal("broker not restarted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	files, err := attest.LogFiles(filepath.Join(s.state, "broker", attest.LogDirName))
	if err != nil || len(files) == 0 {
		t.Fatalf("log files: %v %v", files, err)
	}
	n, err := attest.Verify(files, pub)
	if err != nil || n < 3 {
		t.Fatalf("log: %d records, %v", n, err)
	}
	// The offline CLI agrees, with the key status printed.
	cmd := exec.Command(filepath.Join(binDir, "stockade"), append([]string{"attest", "verify", "--pubkey", st.AttestationKey}, files...)...)
	o, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("stockade attest verify: %v\n%s", err, o)
	}
	// show filters by run and prints JSON lines.
	o, err = exec.Command(filepath.Join(binDir, "stockade"), append([]string{"attest", "show", "--json", "--run", "r1"}, files...)...).Output()
	if err != nil {
		t.Fatalf("stockade attest show: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(o)), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], out.CallID) || !strings.Contains(lines[0], `"r1"`) {
		t.Fatalf("show --run r1 printed %d lines:\n%s", len(lines), o)
	}
	// A flipped byte in the log is found by the CLI, which exits non-zero.
	tampered := filepath.Join(t.TempDir(), filepath.Base(files[0]))
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-10] ^= 0x40
	if err := os.WriteFile(tampered, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err := exec.Command(filepath.Join(binDir, "stockade"), "attest", "verify", "--pubkey", st.AttestationKey, tampered).CombinedOutput(); err == nil {
		t.Fatalf("a tampered log verified:\n%s", o)
	}
	o, err = exec.Command(filepath.Join(binDir, "stockade-broker"), "pubkey", "--state-dir", filepath.Join(s.state, "broker")).Output()
	if err != nil || !strings.HasPrefix(string(o), st.AttestationKey) {
		t.Fatalf("stockade-broker pubkey: %q %v", o, err)
	}
}
