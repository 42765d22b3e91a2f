//go:build linux

package ipc

import (
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func tempFile(t *testing.T, content string) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "fd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestFilesTravelWithTheirFrame: descriptors arrive with the message they
// were sent with, not the one before or after.
func TestFilesTravelWithTheirFrame(t *testing.T) {
	a, b := conns(t)
	b.SetAcceptFiles(true)
	f1, f2 := tempFile(t, "archive"), tempFile(t, "sig")
	if err := a.Send(1, KindStatus, Empty{}, ControlFrameMax); err != nil {
		t.Fatal(err)
	}
	if err := a.SendFiles(2, KindInstall, Empty{}, ControlFrameMax, []*os.File{f1, f2}); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(3, KindStatus, Empty{}, ControlFrameMax); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		id    uint64
		files []string
	}{{1, nil}, {2, []string{"archive", "sig"}}, {3, nil}} {
		m, err := b.Recv(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range m.Files() {
			data, err := io.ReadAll(io.NewSectionReader(f, 0, 100))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(data))
		}
		m.CloseFiles()
		if m.ID != want.id || !slices.Equal(got, want.files) {
			t.Fatalf("message %d with %q, want %d with %q", m.ID, got, want.id, want.files)
		}
	}
}

// TestTooManyFiles: a sender refuses to send more than MaxFDs; a receiver
// refuses a frame that brings more (sent here by hand).
func TestTooManyFiles(t *testing.T) {
	a, b := conns(t)
	b.SetAcceptFiles(true)
	f := tempFile(t, "x")
	many := make([]*os.File, MaxFDs+1)
	for i := range many {
		many[i] = f
	}
	if err := a.SendFiles(1, KindInstall, Empty{}, ControlFrameMax, many); !errors.Is(err, ErrUnexpectedFD) {
		t.Fatalf("sent %d descriptors: %v", len(many), err)
	}
	body, _ := EncodeEnvelope(1, KindInstall, Empty{})
	fds := make([]int, MaxFDs+1)
	for i := range fds {
		fds[i] = int(f.Fd())
	}
	if _, _, err := a.nc.WriteMsgUnix(AppendFrame(nil, body), unix.UnixRights(fds...), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Recv(time.Second); !errors.Is(err, ErrUnexpectedFD) {
		t.Fatalf("received %d descriptors: %v", len(fds), err)
	}
}

// TestCallFiles: a reply's descriptors reach the caller of CallFiles; Call
// refuses a reply with descriptors.
func TestCallFiles(t *testing.T) {
	a, b := conns(t)
	a.SetAcceptFiles(true)
	f := tempFile(t, "module")
	done := make(chan struct{})
	defer func() { <-done }()
	go func() {
		defer close(done)
		for i := 0; i < 2; i++ {
			m, err := b.Recv(time.Second)
			if err != nil {
				return
			}
			b.SendFiles(m.ID, m.Kind, RoleStatus{Role: "verifier"}, ControlFrameMax, []*os.File{f})
		}
	}()
	var st RoleStatus
	got, err := a.CallFiles(1, KindStatus, Empty{}, ControlFrameMax, nil, &st, time.Second)
	if err != nil || len(got) != 1 || st.Role != "verifier" {
		t.Fatalf("%v %v %+v", got, err, st)
	}
	got[0].Close()
	if err := a.Call(2, KindStatus, Empty{}, &st, time.Second); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Call took a reply with descriptors: %v", err)
	}
}

// TestFilesRefusedByDefault: a Conn that does not accept descriptors (an
// agent's, an executor's) ends the connection when one arrives, and closes
// it: a peer cannot make the reader hold descriptors.
func TestFilesRefusedByDefault(t *testing.T) {
	a, b := conns(t)
	f := tempFile(t, "x")
	if err := a.SendFiles(1, KindStatus, Empty{}, ControlFrameMax, []*os.File{f}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Recv(time.Second); !errors.Is(err, ErrUnexpectedFD) {
		t.Fatalf("a descriptor nobody asked for: %v", err)
	}
	if len(b.fds) != 0 {
		t.Fatal("descriptors kept")
	}
}

func TestPeerGroups(t *testing.T) {
	a, _ := pair(t, unix.SOCK_STREAM)
	got, err := PeerGroups(a)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.Getgroups()
	want = append(want, os.Getgid())
	for _, g := range want {
		if !slices.Contains(got, uint32(g)) {
			t.Fatalf("groups %v lack %d", got, g)
		}
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatalf("groups %v not sorted and unique", got)
	}
	if !InGroups(got, []uint32{uint32(os.Getgid())}) || InGroups(got, []uint32{4_000_000_000}) {
		t.Fatal("InGroups")
	}
}

func TestSealedMemfd(t *testing.T) {
	data := []byte("\x00asm\x01\x00\x00\x00 module bytes")
	sum := sha256.Sum256(data)
	f, err := SealedMemfd("test", data)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got, err := ReadSealed(f, int64(len(data)), sum); err != nil || string(got) != string(data) {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := f.WriteAt([]byte("X"), 0); err == nil {
		t.Fatal("wrote to a sealed memfd")
	}
	if err := f.Truncate(1); err == nil {
		t.Fatal("shrank a sealed memfd")
	}
	if _, err := ReadSealed(f, int64(len(data))-1, sum); !errors.Is(err, ErrMalformed) {
		t.Fatalf("wrong size: %v", err)
	}
	if _, err := ReadSealed(f, int64(len(data)), sha256.Sum256(nil)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("wrong digest: %v", err)
	}
	// An unsealed memfd (or any other file) is refused: it could change
	// after the check.
	fd, _ := unix.MemfdCreate("open", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	open := os.NewFile(uintptr(fd), "open")
	defer open.Close()
	open.Write(data)
	if _, err := ReadSealed(open, int64(len(data)), sum); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unsealed memfd: %v", err)
	}
	if _, err := ReadSealed(tempFile(t, string(data)), int64(len(data)), sum); !errors.Is(err, ErrMalformed) {
		t.Fatalf("plain file: %v", err)
	}
}
