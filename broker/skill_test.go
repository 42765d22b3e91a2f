//go:build linux

package broker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/broker/hostcall"
	"github.com/stockade-dev/stockade/ipc"
)

// hostileExecutor runs play as the executor end of a Tier A call (after
// Hello) and returns the broker's end.
func hostileExecutor(t *testing.T, play func(c *ipc.Conn)) *ipc.Conn {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *ipc.Conn {
		nc, err := net.FileConn(os.NewFile(uintptr(fd), "x"))
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		c, err := ipc.NewConn(nc.(*net.UnixConn))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	b, e := conn(fds[0]), conn(fds[1])
	go func() {
		if _, err := e.Recv(5 * time.Second); err != nil { // the exec request
			return
		}
		play(e)
	}()
	return b
}

// TestRunWasmHostileExecutor: the broker does not take an executor's word:
// a host request outside the grants or past the host-call budget ends the
// call, and an outcome that does not add up is refused.
func TestRunWasmHostileExecutor(t *testing.T) {
	sh, err := newSkillHost(&Config{}, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{log: slog.New(slog.DiscardHandler), cfg: &Config{OutputFrameMax: 4 << 20}, skills: sh}
	spec := &ipc.ExecSpec{CallID: "c", Tier: "A", TimeoutMS: 5000, MaxOutput: 1 << 20,
		Wasm: &ipc.WasmSpec{SkillID: "acme.x", Fuel: 1000, MaxHostCalls: 3, Export: "run"}}
	grant := hostcall.Grant{Secrets: []string{"token"}}
	host := func(c *ipc.Conn, n int, req ipc.HostRequest) {
		for i := range n {
			if err := c.Send(ipc.HostRequestIDBase+uint64(i), ipc.KindHost, req, ipc.ControlFrameMax); err != nil {
				return
			}
			if _, err := c.Recv(5 * time.Second); err != nil {
				return
			}
		}
	}
	outcome := func(c *ipc.Conn, out ipc.Outcome) { _ = c.Send(1, ipc.KindExec, out, 1<<20) }
	for _, tc := range []struct {
		name string
		play func(c *ipc.Conn)
		want ipc.ErrorClass
	}{
		{"ungranted secret", func(c *ipc.Conn) { host(c, 1, ipc.HostRequest{Op: "secret", Name: "other"}) }, ipc.ClassCapabilityDenied},
		{"ungranted kv", func(c *ipc.Conn) { host(c, 1, ipc.HostRequest{Op: "kv_get", Key: []byte("k")}) }, ipc.ClassCapabilityDenied},
		{"unknown op", func(c *ipc.Conn) { host(c, 1, ipc.HostRequest{Op: "shell"}) }, ipc.ClassCapabilityDenied},
		{"host-call flood", func(c *ipc.Conn) { host(c, 10, ipc.HostRequest{Op: "secret", Name: "token"}) }, ipc.ClassQuotaExceeded},
		{"fuel over the budget", func(c *ipc.Conn) {
			outcome(c, ipc.Outcome{Status: ipc.StatusOK, Wasm: &ipc.WasmReceipt{FuelUsed: 1 << 40}})
		}, ""},
		{"host calls under the count", func(c *ipc.Conn) {
			host(c, 2, ipc.HostRequest{Op: "secret", Name: "token"})
			outcome(c, ipc.Outcome{Status: ipc.StatusOK, Wasm: &ipc.WasmReceipt{HostCalls: 1}})
		}, ""},
		{"odd status", func(c *ipc.Conn) {
			outcome(c, ipc.Outcome{Status: ipc.StatusSignaled, Wasm: &ipc.WasmReceipt{}})
		}, ""},
		{"no receipt", func(c *ipc.Conn) { outcome(c, ipc.Outcome{Status: ipc.StatusOK}) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hostileExecutor(t, tc.play)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			out, err := s.runWasmOn(ctx, s.log, c, 1, spec, nil, "acme.x", grant, 5*time.Second)
			if err == nil {
				t.Fatalf("accepted: %+v", out)
			}
			if tc.want != "" {
				var e *ipc.Error
				if !errors.As(err, &e) || e.Class != tc.want {
					t.Fatalf("%v, want %s", err, tc.want)
				}
			}
		})
	}
	// The control: an honest outcome passes, with the receipt's numbers.
	c := hostileExecutor(t, func(c *ipc.Conn) {
		host(c, 1, ipc.HostRequest{Op: "secret", Name: "token"})
		outcome(c, ipc.Outcome{Status: ipc.StatusOK, Stdout: []byte("{}"), Wasm: &ipc.WasmReceipt{FuelUsed: 10, HostCalls: 1}})
	})
	out, err := s.runWasmOn(t.Context(), s.log, c, 1, spec, nil, "acme.x", grant, 5*time.Second)
	if err != nil || out.Wasm.FuelUsed != 10 || out.Tier != "A" {
		t.Fatalf("%+v %v", out, err)
	}
}
