package verifier

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stockade-dev/stockade/ipc"
)

func serveAdmin(t *testing.T, admins []uint32) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stkv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "admin.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = New(slog.New(slog.DiscardHandler), admins, "").ServeAdmin(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return path
}

func adminStatus(path string) (ipc.RoleStatus, error) {
	var st ipc.RoleStatus
	nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return st, err
	}
	c, err := ipc.NewConn(nc)
	if err != nil {
		return st, err
	}
	defer c.Close()
	if _, err := c.Handshake(ipc.ChannelAdmin, "test"); err != nil {
		return st, err
	}
	err = c.Call(1, ipc.KindStatus, ipc.Empty{}, &st, ipc.WriteTimeout)
	return st, err
}

func TestAdminSocket(t *testing.T) {
	st, err := adminStatus(serveAdmin(t, []uint32{uint32(os.Getuid())}))
	if err != nil || st.Role != "verifier" || st.PID != os.Getpid() {
		t.Fatalf("%+v %v", st, err)
	}
}

// TestAdminRefusesOtherUID: the kernel says we are not an admin, so the
// verifier refuses before Hello.
func TestAdminRefusesOtherUID(t *testing.T) {
	_, err := adminStatus(serveAdmin(t, []uint32{uint32(os.Getuid()) + 4242}))
	if !errors.Is(err, ipc.ErrDenied) {
		t.Fatalf("got %v", err)
	}
}

func TestAdminChannelOnly(t *testing.T) {
	path := serveAdmin(t, []uint32{uint32(os.Getuid())})
	nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := ipc.NewConn(nc)
	defer c.Close()
	if _, err := c.Handshake(ipc.ChannelAgent, "test"); !errors.Is(err, ipc.ErrVersionMismatch) {
		t.Fatalf("agent channel on admin.sock: %v", err)
	}
}
