//go:build linux

package broker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
)

// fakeVerifier serves the verifier end of a link: Hello, then each resolve
// answered by answer.
func fakeVerifier(t *testing.T, answer func(c *ipc.Conn, m *ipc.Message)) *verifierLink {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "broker"), os.NewFile(uintptr(fds[1]), "verifier")
	nc, err := net.FileConn(theirs)
	theirs.Close()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ipc.NewConn(nc.(*net.UnixConn))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer srv.Close()
		if srv.Accept(ipc.ChannelVerifier, "fake-verifier") != nil {
			return
		}
		for {
			m, err := srv.Recv(0)
			if err != nil {
				return
			}
			answer(srv, m)
		}
	}()
	v := &verifierLink{log: slog.New(slog.DiscardHandler)}
	v.replace(ours)
	t.Cleanup(func() {
		v.mu.Lock()
		if v.conn != nil {
			v.conn.Close()
		}
		v.mu.Unlock()
		<-done
	})
	return v
}

var testModule = []byte("\x00asm\x01\x00\x00\x00 a module")

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func resolvedFor(data []byte) ipc.Resolved {
	return ipc.Resolved{
		ID: "acme.web", Version: "1.0.0", Sequence: 1, Digest: digestOf([]byte("statement")),
		Publisher: "ed25519:SHA256:x",
		Manifest:  ipc.SkillManifest{Tools: []ipc.SkillTool{{Name: "fetch", Module: "modules/web.wasm", Export: "fetch"}}},
		Modules:   []ipc.ResolvedModule{{Path: "modules/web.wasm", SHA256: digestOf(data), Size: int64(len(data)), MemoryLimitPages: 1024}},
	}
}

// TestResolve: the modules' bytes arrive in sealed memfds, checked against
// their size and digest; the verifier's typed refusals reach the caller and
// leave the link usable; a memfd that is not sealed, or whose bytes differ
// from the reply, is refused.
func TestResolve(t *testing.T) {
	unsealed := func(data []byte) *os.File {
		fd, err := unix.MemfdCreate("x", unix.MFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(fd), "x")
		f.Write(data)
		return f
	}
	sealed := func(data []byte) *os.File {
		f, err := ipc.SealedMemfd("x", data)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, c := range []struct {
		name  string
		reply func(c *ipc.Conn, m *ipc.Message)
		check func(t *testing.T, r *ResolvedSkill, err error)
	}{
		{"good", func(c *ipc.Conn, m *ipc.Message) {
			f := sealed(testModule)
			defer f.Close()
			c.SendFiles(m.ID, m.Kind, resolvedFor(testModule), ipc.ResolveFrameMax, []*os.File{f})
		}, func(t *testing.T, r *ResolvedSkill, err error) {
			if err != nil {
				t.Fatal(err)
			}
			mod, ok := r.Module("modules/web.wasm")
			if !ok || mod.File == nil || r.Manifest.Tools[0].Name != "fetch" {
				t.Fatalf("%+v", r)
			}
			if data, err := mod.Read(); err != nil || string(data) != string(testModule) {
				t.Fatalf("module bytes %q %v", data, err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}},
		{"refused", func(c *ipc.Conn, m *ipc.Message) {
			c.SendError(m.ID, ipc.ReasonError(ipc.ReasonRevoked, "its key is revoked"))
		}, func(t *testing.T, r *ResolvedSkill, err error) {
			if !errors.Is(err, ipc.ReasonRevoked) || !errors.Is(err, ipc.ErrDenied) {
				t.Fatalf("%v", err)
			}
		}},
		{"unsealed", func(c *ipc.Conn, m *ipc.Message) {
			f := unsealed(testModule)
			defer f.Close()
			c.SendFiles(m.ID, m.Kind, resolvedFor(testModule), ipc.ResolveFrameMax, []*os.File{f})
		}, func(t *testing.T, r *ResolvedSkill, err error) {
			if !errors.Is(err, ipc.ErrMalformed) {
				t.Fatalf("%v", err)
			}
		}},
		{"other bytes", func(c *ipc.Conn, m *ipc.Message) {
			other := append([]byte(nil), testModule...)
			other[len(other)-1] ^= 1
			f := sealed(other)
			defer f.Close()
			c.SendFiles(m.ID, m.Kind, resolvedFor(testModule), ipc.ResolveFrameMax, []*os.File{f})
		}, func(t *testing.T, r *ResolvedSkill, err error) {
			// Sealed and of the right size: the bytes are checked when read.
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if _, err := r.Modules[0].Read(); !errors.Is(err, ipc.ErrMalformed) {
				t.Fatalf("%v", err)
			}
		}},
		{"no descriptor", func(c *ipc.Conn, m *ipc.Message) {
			c.Send(m.ID, m.Kind, resolvedFor(testModule), ipc.ResolveFrameMax)
		}, func(t *testing.T, r *ResolvedSkill, err error) {
			if !errors.Is(err, ipc.ErrMalformed) {
				t.Fatalf("%v", err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := fakeVerifier(t, c.reply)
			r, err := v.Resolve(context.Background(), "acme.web", "")
			c.check(t, r, err)
			// The link answers again after a refusal of either kind.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err2 := v.Resolve(ctx, "acme.web", "")
			if (err == nil) != (err2 == nil) {
				t.Fatalf("second resolve: %v, first: %v", err2, err)
			}
		})
	}
}

func TestResolveWithoutVerifier(t *testing.T) {
	v := &verifierLink{log: slog.New(slog.DiscardHandler)}
	if _, err := v.Resolve(context.Background(), "acme.web", ""); !errors.Is(err, errNoVerifier) {
		t.Fatalf("%v", err)
	}
}

// TestResolveLateReply: a resolve that gives up before the verifier answers
// leaves the link in step: the late reply is discarded and the next
// resolve gets its own answer (before, a timeout dropped the link for good).
func TestResolveLateReply(t *testing.T) {
	release := make(chan struct{})
	n := 0
	v := fakeVerifier(t, func(c *ipc.Conn, m *ipc.Message) {
		n++
		if n == 1 {
			<-release // the first answer comes after the caller gave up
		}
		f, err := ipc.SealedMemfd("x", testModule)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		_ = c.SendFiles(m.ID, ipc.KindResolve, resolvedFor(testModule), ipc.ControlFrameMax, []*os.File{f})
	})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	_, err := v.Resolve(ctx, "acme.web", "")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first resolve: %v, want a deadline", err)
	}
	close(release)
	r, err := v.Resolve(t.Context(), "acme.web", "")
	if err != nil {
		t.Fatalf("resolve after a late reply: %v", err)
	}
	r.Close()
}
