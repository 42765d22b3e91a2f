//go:build linux

package ipc

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// pair returns two connected Conns.
func pair(t *testing.T, typ int) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "pair")
		defer f.Close()
		nc, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

func conns(t *testing.T) (*Conn, *Conn) {
	a, b := pair(t, unix.SOCK_STREAM)
	ca, err := NewConn(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := NewConn(b)
	if err != nil {
		t.Fatal(err)
	}
	return ca, cb
}

func TestPeerCred(t *testing.T) {
	a, _ := conns(t)
	if a.Peer().UID != uint32(os.Getuid()) || a.Peer().PID != int32(os.Getpid()) {
		t.Fatalf("peer %+v, want uid %d pid %d", a.Peer(), os.Getuid(), os.Getpid())
	}
}

func TestHandshake(t *testing.T) {
	cli, srv := conns(t)
	errc := make(chan error, 1)
	go func() { errc <- srv.Accept(ChannelAgent, "srv") }()
	h, err := cli.Handshake(ChannelAgent, "cli")
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if h.Software != "srv" || h.Channel != ChannelAgent {
		t.Fatalf("hello %+v", h)
	}
}

func TestHandshakeMismatch(t *testing.T) {
	tests := []struct {
		name  string
		hello Hello
		class ErrorClass
	}{
		{"wrong channel", Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelAdmin}, ClassVersionMismatch},
		{"wrong version", Hello{Proto: ProtocolName, Version: 99, Channel: ChannelAgent}, ClassVersionMismatch},
		{"wrong proto", Hello{Proto: "other", Version: ProtocolVersion, Channel: ChannelAgent}, ClassVersionMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, srv := conns(t)
			errc := make(chan error, 1)
			go func() { errc <- srv.Accept(ChannelAgent, "srv") }()
			var h Hello
			err := cli.Call(0, KindHello, tt.hello, &h, HelloTimeout)
			var e *Error
			if !errors.As(err, &e) || e.Class != tt.class {
				t.Fatalf("client got %v, want class %s", err, tt.class)
			}
			if err := <-errc; !errors.Is(err, &Error{Class: tt.class}) {
				t.Fatalf("server returned %v", err)
			}
		})
	}
}

func TestHandshakeNotHello(t *testing.T) {
	cli, srv := conns(t)
	errc := make(chan error, 1)
	go func() { errc <- srv.Accept(ChannelAgent, "srv") }()
	var out ToolList
	err := cli.Call(1, KindListTools, Empty{}, &out, HelloTimeout)
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("client got %v", err)
	}
	if err := <-errc; err == nil {
		t.Fatal("server accepted a request before hello")
	}
}

func TestPermits(t *testing.T) {
	if !ChannelAgent.Permits(KindCall) || ChannelAgent.Permits(KindExec) || ChannelAdmin.Permits(KindCall) || ChannelExec.Permits(KindCall) {
		t.Fatal("permit table")
	}
}

func TestConnLimiter(t *testing.T) {
	l := NewConnLimiter(2)
	if !l.Acquire(5) || !l.Acquire(5) || l.Acquire(5) {
		t.Fatal("cap of 2 not enforced")
	}
	if !l.Acquire(6) {
		t.Fatal("another uid refused")
	}
	l.Release(5)
	if !l.Acquire(5) {
		t.Fatal("slot not given back")
	}
}

func TestSpawnPackets(t *testing.T) {
	r := SpawnRequest{Seq: 0x01020304}
	got, err := ParseSpawnRequest(r.Marshal())
	if err != nil || got != r {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range [][]byte{nil, []byte("SPWN"), []byte("SPWN12345"), []byte("XPWN1234"), []byte("LINK1234")} {
		if _, err := ParseSpawnRequest(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	for _, rep := range []SpawnReply{{Seq: 9, Code: SpawnUnavailable}, {Link: true}} {
		got, err := ParseSpawnReply(rep.Marshal())
		if err != nil || got != rep {
			t.Fatalf("%+v %v", got, err)
		}
	}
	if _, err := ParseSpawnReply([]byte("NOPE00000000")); err == nil {
		t.Fatal("bad magic accepted")
	}
}

func TestFDPassing(t *testing.T) {
	a, b := pair(t, unix.SOCK_SEQPACKET)
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := SendFD(a, []byte("LINK00000000"), f); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, got, err := RecvFD(b, buf, "x")
	if err != nil || n != 12 || got == nil {
		t.Fatalf("n=%d f=%v err=%v", n, got, err)
	}
	defer got.Close()
	// More than one descriptor is refused and all are closed.
	oob := unix.UnixRights(int(f.Fd()), int(f.Fd()))
	if _, _, err := a.WriteMsgUnix([]byte("x"), oob, nil); err != nil {
		t.Fatal(err)
	}
	if _, g, err := RecvFD(b, buf, "x"); !errors.Is(err, ErrUnexpectedFD) || g != nil {
		t.Fatalf("two fds: %v", err)
	}
}

func TestDescendsFrom(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Base(exe)
	cmd := exec.Command("/bin/sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	child := int32(cmd.Process.Pid)
	if !DescendsFrom(child, self) {
		t.Error("a child of this binary does not descend from it")
	}
	if !DescendsFrom(int32(os.Getpid()), self) {
		t.Error("this process does not descend from its own binary")
	}
	if DescendsFrom(child, "no-such-binary") || DescendsFrom(int32(os.Getpid()), "sleep") {
		t.Error("descends from a binary nobody runs")
	}
	if !DescendsFrom(1<<30, "no-such-binary") {
		t.Error("a process that is gone must count as descending (fail closed)")
	}
	// Through a connection: the peer of a socketpair is this process.
	a, _ := conns(t)
	if !a.PeerDescendsFrom(self) || a.PeerDescendsFrom("no-such-binary") {
		t.Error("PeerDescendsFrom")
	}
}
