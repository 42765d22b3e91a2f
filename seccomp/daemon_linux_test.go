package seccomp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const daemonConns = 6

// daemonRequest is what the test sends the daemon-like child, one JSON line
// per connection; some connections also carry a descriptor (SCM_RIGHTS).
type daemonRequest struct {
	ID   int
	Data string
}

type daemonReply struct {
	ID       int
	Digest   string // of Data
	FDDigest string // of what the received descriptor held, if any
	Signed   bool
}

// childDaemon is a small Go server doing what the broker and the verifier
// do once started: it binds its socket, installs the profile, then serves
// connections, checking peer credentials, receiving descriptors, keeping
// files in a state directory, signing, logging, with goroutines, timers
// and garbage collection.
func childDaemon(spec childSpec) error {
	// Start-up, before the filter.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := os.MkdirAll(spec.State, 0o700); err != nil {
		return err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: spec.Socket, Net: "unix"})
	if err != nil {
		return err
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	if err := installSpec(spec); err != nil {
		return err
	}
	fmt.Println("@@ready")

	// Background work: a ticker, and garbage.
	tickCtx, cancelTick := context.WithCancel(ctx)
	defer cancelTick()
	ticks := make(chan int, 1)
	go func() {
		t := time.NewTicker(3 * time.Millisecond)
		defer t.Stop()
		n := 0
		for {
			select {
			case <-tickCtx.Done():
				ticks <- n
				return
			case <-t.C:
				n++
				_ = make([]byte, 64<<10)
			}
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan error, daemonConns)
	for range daemonConns {
		conn, err := ln.AcceptUnix()
		if err != nil {
			return err
		}
		wg.Go(func() {
			defer conn.Close()
			if err := serveDaemonConn(conn, spec.State, key, log); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	runtime.GC()
	debug.FreeOSMemory()
	// Long enough for the runtime's periodic work (sysmon, the scavenger,
	// GOMAXPROCS updates) to happen under the filter.
	time.Sleep(1100 * time.Millisecond)
	cancelTick()
	n := <-ticks
	entries, err := os.ReadDir(spec.State)
	if err != nil {
		return err
	}
	ln.Close()
	report(map[string]int{"ticks": n, "files": len(entries), "goroutines": runtime.NumGoroutine()})
	return nil
}

func serveDaemonConn(conn *net.UnixConn, state string, key ed25519.PrivateKey, log *slog.Logger) error {
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil || int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("peer credentials: %v %v", cred, credErr)
	}

	// One JSON line; the descriptor, if any, comes with its first bytes.
	var msg []byte
	var oob []byte
	for !bytes.Contains(msg, []byte("\n")) {
		buf, cbuf := make([]byte, 64<<10), make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, cbuf)
		if err != nil {
			return err
		}
		msg = append(msg, buf[:n]...)
		oob = append(oob, cbuf[:oobn]...)
	}
	var req daemonRequest
	if err := json.Unmarshal(msg, &req); err != nil {
		return err
	}
	reply := daemonReply{ID: req.ID}
	if len(oob) > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob)
		if err != nil || len(msgs) != 1 {
			return fmt.Errorf("control message: %v", err)
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			return fmt.Errorf("rights: %v", err)
		}
		f := os.NewFile(uintptr(fds[0]), "received")
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		reply.FDDigest = hex.EncodeToString(h.Sum(nil))
	}

	// The state directory: write a temporary file, sync, rename into
	// place, read back, list, and clean up a subdirectory.
	path := filepath.Join(state, fmt.Sprintf("item-%d", req.ID))
	tmp, err := os.CreateTemp(state, "tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(req.Data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return err
	}
	sub := filepath.Join(state, fmt.Sprintf("dir-%d", req.ID), "a", "b")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(sub, "f"), data, 0o600); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(state, fmt.Sprintf("dir-%d", req.ID))); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(state, "log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(logf.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	fmt.Fprintf(logf, "%d %s\n", req.ID, time.Now().Format(time.RFC3339Nano))
	logf.Close()

	sum := sha256.Sum256(data)
	reply.Digest = hex.EncodeToString(sum[:])
	sig := ed25519.Sign(key, sum[:])
	reply.Signed = ed25519.Verify(key.Public().(ed25519.PublicKey), sum[:], sig)
	log.Info("served", "call_id", req.ID, "decision", "allow")
	time.Sleep(time.Duration(req.ID) * time.Millisecond)

	js, err := json.Marshal(reply)
	if err != nil {
		return err
	}
	if _, err := conn.Write(append(js, '\n')); err != nil {
		return err
	}
	// Send the stored file back with io.Copy (sendfile or splice).
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(conn, f)
	return err
}

// TestDaemonProfilesRunGoServer installs the broker and verifier profiles
// in a child serving a Unix socket the way those daemons do, and talks to
// it: it must serve every connection and exit cleanly, not die of SIGSYS.
func TestDaemonProfilesRunGoServer(t *testing.T) {
	skipUnlessSeccomp(t)
	for _, profile := range []string{"broker", "verifier"} {
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			sock := filepath.Join(dir, "d.sock")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := childCommand(ctx, t, "TestDaemonProfilesRunGoServer", childSpec{
				Role: "daemon", Profile: profile, Socket: sock, State: filepath.Join(dir, "state"),
			})
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(stdout)
			if !lines.Scan() || lines.Text() != "@@ready" {
				cmd.Wait()
				t.Fatalf("child not ready: %q, %v\nstderr:\n%s", lines.Text(), cmd.ProcessState, stderr.Bytes())
			}
			var wg sync.WaitGroup
			for id := range daemonConns {
				wg.Go(func() {
					if err := talkToDaemon(sock, id, dir); err != nil {
						t.Errorf("connection %d: %v", id, err)
					}
				})
			}
			wg.Wait()
			var rest bytes.Buffer
			for lines.Scan() {
				rest.WriteString(lines.Text() + "\n")
			}
			err = cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				t.Fatalf("the daemon died of %v under %s\nstderr:\n%s", ws.Signal(), profile, stderr.Bytes())
			}
			if err != nil {
				t.Fatalf("daemon: %v\nstdout:\n%s\nstderr:\n%s", err, rest.Bytes(), stderr.Bytes())
			}
			var res map[string]int
			if err := parseResult(rest.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s daemon: %v", profile, res)
			if res["files"] != daemonConns+1 || res["ticks"] == 0 {
				t.Errorf("daemon state: %v", res)
			}
		})
	}
}

func talkToDaemon(sock string, id int, dir string) error {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := daemonRequest{ID: id, Data: strings.Repeat(fmt.Sprintf("payload %d ", id), 1000*(id+1))}
	js, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var oob []byte
	wantFD := ""
	if id%2 == 0 { // hand over a descriptor, as the supervisor does
		content := fmt.Sprintf("descriptor %d", id)
		f, err := os.CreateTemp(dir, "fd-*")
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.WriteString(content); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		oob = unix.UnixRights(int(f.Fd()))
		sum := sha256.Sum256([]byte(content))
		wantFD = hex.EncodeToString(sum[:])
	}
	if _, _, err := conn.WriteMsgUnix(append(js, '\n'), oob, nil); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading the reply: %w", err)
	}
	var reply daemonReply
	if err := json.Unmarshal(line, &reply); err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(req.Data))
	if reply.ID != id || reply.Digest != hex.EncodeToString(sum[:]) || reply.FDDigest != wantFD || !reply.Signed {
		return fmt.Errorf("reply %+v", reply)
	}
	back, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if string(back) != req.Data {
		return fmt.Errorf("file sent back: %d bytes, want %d", len(back), len(req.Data))
	}
	return nil
}

// TestDaemonProfilesKillOnViolation installs a daemon profile in a child
// that then makes a call the profile does not allow: the kernel must kill
// it with SIGSYS on the spot.
func TestDaemonProfilesKillOnViolation(t *testing.T) {
	skipUnlessSeccomp(t)
	for _, tc := range []struct{ profile, attempt string }{
		{"broker", "exec"},
		{"broker", "ptrace"},
		{"broker", "mount"},
		{"broker", "socket-netlink"},
		{"verifier", "exec"},
		{"verifier", "socket-inet"},
		{"verifier", "socket-unix"},
		{"verifier", "connect"},
	} {
		t.Run(tc.profile+"/"+tc.attempt, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := childCommand(ctx, t, "TestDaemonProfilesKillOnViolation", childSpec{Role: "violate", Profile: tc.profile, Attempt: tc.attempt})
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("child survived (%v):\n%s", err, out)
			}
			ws := exit.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
				t.Fatalf("child ended with %v, want death by SIGSYS:\n%s", exit, out)
			}
			if !strings.Contains(string(out), "@@installed") || strings.Contains(string(out), "@@survived") {
				t.Fatalf("child did not die at the attempt:\n%s", out)
			}
		})
	}
}
