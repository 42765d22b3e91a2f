package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/ipc"
)

// TestDefaultPolicy: with the embedded default set, plain commands in Tier C
// run, and a shell (even on a tool that allows interpreters) is denied by the
// policy that says so.
func TestDefaultPolicy(t *testing.T) {
	s := startSystem(t, `policy_dir = ""`+"\n"+testConfig)
	out, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"/bin/echo", "ok"}})
	if err != nil || string(out.Stdout) != "ok\n" {
		t.Fatalf("plain command: %+v %v", out, err)
	}
	_, err = s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"/bin/sh", "-c", "echo no"}})
	var e *ipc.Error
	if !errorsAs(err, &e) || e.Class != ipc.ClassDenied || !slices.Contains(e.Policies, "default.no-interpreters") {
		t.Fatalf("shell under the default policy: %v (%+v)", err, e)
	}
	// Tier B is not what the default set permits.
	s2 := startSystem(t, `policy_dir = ""`+"\n[run]\ntier = \"B\"\n"+toolsConfig)
	_, err = s2.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"/bin/echo", "ok"}})
	wantClass(t, err, ipc.ClassDenied)
}

func TestRunBudget(t *testing.T) {
	s := startSystem(t, "[budget]\nmax_calls_per_run = 2\n"+testConfig)
	for i := 0; i < 2; i++ {
		if _, err := s.call(&ipc.CallRequest{Tool: "process.run", RunID: "r1", Args: []string{"true"}}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	_, err := s.call(&ipc.CallRequest{Tool: "process.run", RunID: "r1", Args: []string{"true"}})
	wantClass(t, err, ipc.ClassBudgetExceeded)
	if _, err := s.call(&ipc.CallRequest{Tool: "process.run", RunID: "r2", Args: []string{"true"}}); err != nil {
		t.Fatalf("another run: %v", err)
	}
	// A denied call is not charged.
	s3 := startSystem(t, "[budget]\nmax_calls_per_run = 1\n"+testConfig)
	_, err = s3.call(&ipc.CallRequest{Tool: "nope", RunID: "r"})
	wantClass(t, err, ipc.ClassInvalidInput)
	if _, err := s3.call(&ipc.CallRequest{Tool: "process.run", RunID: "r", Args: []string{"true"}}); err != nil {
		t.Fatalf("first permitted call of the run: %v", err)
	}
}

// TestPolicyReload: SIGHUP swaps in a new set; a set that does not validate
// keeps the old one in force.
func TestPolicyReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "p.cedar")
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("@id(\"allow\")\npermit (principal in Group::\"local\", action, resource);\n")
	s := startSystem(t, "policy_dir = \""+dir+"\"\n"+testConfig)
	if _, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	brokerPID := s.status().Broker.PID
	hup := func() {
		if err := syscall.Kill(brokerPID, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	// The admin command does the same through agent.sock.
	reloadCmd := func() {
		cmd := execCommand(filepath.Join(binDir, "stockade-broker"), "reload", "--socket", s.socket)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("stockade-broker reload: %v %s", err, out)
		}
	}
	write("@id(\"allow\")\npermit (principal in Group::\"local\", action, resource);\n" +
		"@id(\"no-true\")\nforbid (principal, action, resource) when { context.program like \"*/true\" };\n")
	hup()
	if !s.waitLog("policies reloaded") {
		t.Fatal("reload not logged")
	}
	_, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"true"}})
	var e *ipc.Error
	if !errorsAs(err, &e) || e.Class != ipc.ClassDenied || !slices.Equal(e.Policies, []string{"no-true"}) {
		t.Fatalf("after reload: %v %+v", err, e)
	}
	write("permit (principal, action, resource) when { context.no_such_field };\n")
	reloadCmd()
	if !s.waitLog("policy reload failed") {
		t.Fatal("failed reload not logged")
	}
	time.Sleep(50 * time.Millisecond)
	_, err = s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"true"}})
	wantClass(t, err, ipc.ClassDenied) // the previous set, with its forbid, still holds
	if st := s.status(); st.Broker.PID != brokerPID {
		t.Fatal("the broker restarted")
	}
}

// TestPrincipalFromKernel: a call cannot name its principal; a message that
// tries is not a call at all.
func TestPrincipalFromKernel(t *testing.T) {
	s := startSystem(t, fmt.Sprintf("agent_uids = [%d]\n[[agent]]\nname = \"alice\"\nuid = 4242\ngroups = [\"local\"]\n", os.Getuid())+testConfig)
	type forged struct {
		Tool      string   `msgpack:"tool"`
		Args      []string `msgpack:"args"`
		Principal string   `msgpack:"principal"`
		UID       uint32   `msgpack:"uid"`
	}
	nc := rawHello(t, s)
	defer nc.Close()
	b, _ := ipc.EncodeEnvelope(1, ipc.KindCall, forged{Tool: "process.run", Args: []string{"true"}, Principal: "alice", UID: 4242})
	if _, err := nc.Write(ipc.AppendFrame(nil, b)); err != nil {
		t.Fatal(err)
	}
	body, err := ipc.ReadFrame(nc, ipc.ControlFrameMax)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ipc.DecodeEnvelope(body)
	if err != nil || m.Kind != ipc.KindError || m.Err().Class != ipc.ClassProtocol {
		t.Fatalf("forged principal: %+v %v", m, err)
	}
}

func TestPrincipalBudgets(t *testing.T) {
	t.Run("concurrent", func(t *testing.T) {
		s := startSystem(t, "[budget]\nmax_concurrent_per_principal = 1\n"+testConfig)
		ws := t.TempDir()
		done := make(chan error, 1)
		go func() {
			_, err := s.call(&ipc.CallRequest{Tool: "process.run", Workspace: ws, Args: []string{"/bin/sh", "-c", "echo up > ready; sleep 5"}})
			done <- err
		}()
		waitFile(t, filepath.Join(ws, "ready"))
		_, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"true"}})
		wantClass(t, err, ipc.ClassBudgetExceeded)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if _, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"true"}}); err != nil {
			t.Fatalf("after the first ended: %v", err)
		}
	})
	t.Run("rate", func(t *testing.T) {
		s := startSystem(t, "[budget]\nrate_per_minute = 1\nrate_burst = 2\n"+testConfig)
		for i := 0; i < 2; i++ {
			if _, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"true"}}); err != nil {
				t.Fatalf("call %d within the burst: %v", i+1, err)
			}
		}
		_, err := s.call(&ipc.CallRequest{Tool: "process.run", Args: []string{"true"}})
		wantClass(t, err, ipc.ClassBudgetExceeded)
	})
	t.Run("usage", func(t *testing.T) {
		s := startSystem(t, "[budget]\nmax_output_bytes_per_run = 100\nmax_cpu_seconds_per_run = 1\n"+testConfig)
		out, err := s.call(&ipc.CallRequest{Tool: "process.run", RunID: "out", Args: []string{"/bin/sh", "-c", "head -c 150 /dev/zero"}})
		if err != nil || len(out.Stdout) != 150 {
			t.Fatalf("first call: %v", err)
		}
		_, err = s.call(&ipc.CallRequest{Tool: "process.run", RunID: "out", Args: []string{"true"}})
		wantClass(t, err, ipc.ClassBudgetExceeded)
		// CPU is charged from the executor's measurement.
		if _, err := s.call(&ipc.CallRequest{Tool: "process.run", RunID: "cpu", Args: []string{"/bin/sh", "-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done"}}); err != nil {
			t.Fatal(err)
		}
		_, err = s.call(&ipc.CallRequest{Tool: "process.run", RunID: "cpu", Args: []string{"true"}})
		wantClass(t, err, ipc.ClassBudgetExceeded)
		if _, err := s.call(&ipc.CallRequest{Tool: "process.run", RunID: "other", Args: []string{"true"}}); err != nil {
			t.Fatalf("another run: %v", err)
		}
	})
}
