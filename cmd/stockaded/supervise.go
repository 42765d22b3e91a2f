package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/privdrop"
	"github.com/stockade-dev/stockade/ipc"
)

type supervisor struct {
	log                  *slog.Logger
	binDir               string
	configPath           string
	runtimeDir, stateDir string
	agentLn, adminLn     *net.UnixListener
	mu                   sync.Mutex
	spawnConn            *net.UnixConn // our end of the current broker's spawn channel
	handoff              *net.UnixConn // our end of the current verifier's handoff channel
	roles                map[string]*os.Process
	execs                map[int]*os.Process
	execWG               sync.WaitGroup
	pool                 chan *os.File // broker ends of executors forked ahead
	poolWake             chan struct{}
	poolOnce             sync.Once
	shuttingDown         bool

	// Multi-uid mode only (nil, "" in single-user mode).
	multi       *ids
	selfExe     string   // /proc/self/exe: what the drop trampoline runs
	uids        *uidPool // executor uids
	scratchRoot string   // where executors make their calls' directories

	autoActivate bool // the verifier may activate clean updates by the pinned key
}

// The roles' own state directories, under the state directory.
const (
	brokerDir   = "broker"
	verifierDir = "verifier"
	scratchDir  = "scratch"
	wasmDir     = "wasm-cache" // the broker's compiled Tier A code, read by executors
)

func (s *supervisor) mode() string {
	if s.multi != nil {
		return "multi-uid"
	}
	return "single-user"
}

// Restart backoff: doubles from minBackoff to maxBackoff, and starts over once
// a role has stayed up for stableAfter.
const (
	minBackoff  = 100 * time.Millisecond
	maxBackoff  = 5 * time.Second
	stableAfter = 10 * time.Second
	stopGrace   = 5 * time.Second
)

// supervise runs both roles until ctx ends, then stops everything.
func (s *supervisor) supervise(ctx context.Context) {
	// Orphans of crashed executors are reparented here and swept.
	becomeSubreaper(s.log)
	s.roles = make(map[string]*os.Process)
	var wg sync.WaitGroup
	for _, r := range []struct {
		name  string
		start func() (*exec.Cmd, func(), error)
	}{{"broker", s.startBroker}, {"verifier", s.startVerifier}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.keepRunning(ctx, r.name, r.start)
		}()
	}
	<-ctx.Done()
	s.log.Info("stopping")
	s.mu.Lock()
	s.shuttingDown = true
	procs := []*os.Process{}
	for _, p := range s.roles {
		procs = append(procs, p)
	}
	for _, p := range s.execs {
		procs = append(procs, p)
	}
	s.mu.Unlock()
	s.drainPool()
	for _, p := range procs {
		_ = p.Signal(syscall.SIGTERM)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); s.execWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopGrace):
		s.log.Warn("roles did not stop in time; killing")
		for _, p := range procs {
			_ = p.Kill()
		}
		<-done
	}
	sweepOrphans(s.log)
	s.log.Info("stopped")
}

// keepRunning starts a role and restarts it when it exits, with backoff,
// until ctx ends.
func (s *supervisor) keepRunning(ctx context.Context, name string, start func() (*exec.Cmd, func(), error)) {
	backoff := minBackoff
	for ctx.Err() == nil {
		began := time.Now()
		cmd, onExit, err := start()
		if err != nil {
			s.log.Error("cannot start role", "name", name, "err", err)
		} else {
			s.mu.Lock()
			s.roles[name] = cmd.Process
			s.mu.Unlock()
			err = cmd.Wait()
			s.mu.Lock()
			delete(s.roles, name)
			s.mu.Unlock()
			onExit()
			if ctx.Err() != nil {
				return
			}
			s.log.Error("role exited; restarting", "name", name, "err", err, "backoff", backoff)
		}
		if time.Since(began) > stableAfter {
			backoff = minBackoff
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// roleCmd prepares a role's command: an empty environment, its own process
// group (terminal signals reach only the supervisor), and death with the
// supervisor. In multi-uid mode the role is started through the drop
// trampoline, which takes it to id for good before its binary runs.
func (s *supervisor) roleCmd(bin string, files []*os.File, id *privdrop.Identity, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	if id == nil {
		cmd = exec.Command(filepath.Join(s.binDir, bin), args...)
	} else {
		groups := make([]string, len(id.Groups))
		for i, g := range id.Groups {
			groups[i] = strconv.FormatUint(uint64(g), 10)
		}
		drop := []string{dropCommand,
			"--uid", strconv.FormatUint(uint64(id.UID), 10), "--gid", strconv.FormatUint(uint64(id.GID), 10),
			"--groups", strings.Join(groups, ","), "--keep", strconv.Itoa(2 + len(files)),
			"--", filepath.Join(s.binDir, bin)}
		cmd = exec.Command(s.selfExe, append(drop, args...)...)
	}
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.ExtraFiles = files
	cmd.SysProcAttr = childAttr()
	return cmd
}

func (s *supervisor) startBroker() (*exec.Cmd, func(), error) {
	ours, theirs, err := seqpacketPair("spawn")
	if err != nil {
		return nil, nil, err
	}
	lf, err := s.agentLn.File()
	if err != nil {
		ours.Close()
		theirs.Close()
		return nil, nil, err
	}
	args := []string{"--state-dir", filepath.Join(s.stateDir, brokerDir), "--runtime-dir", s.runtimeDir, "--mode", s.mode(),
		"--wasm-cache", filepath.Join(s.stateDir, wasmDir)}
	if s.configPath != "" {
		args = append(args, "--config", s.configPath)
	}
	var id *privdrop.Identity
	if s.multi != nil {
		id = &privdrop.Identity{UID: s.multi.broker.uid, GID: s.multi.broker.gid}
		args = append(args, "--scratch-root", s.scratchRoot)
		for _, g := range s.multi.agentGIDs {
			args = append(args, "--agent-gid", strconv.FormatUint(uint64(g), 10))
		}
	}
	cmd := s.roleCmd("stockade-broker", []*os.File{lf, theirs}, id, args...)
	err = cmd.Start()
	lf.Close()
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, nil, err
	}
	s.log.Info("broker started", "pid", cmd.Process.Pid)
	s.mu.Lock()
	s.spawnConn = ours
	s.mu.Unlock()
	go s.serveSpawn(ours)
	s.relink()
	return cmd, func() {
		s.mu.Lock()
		if s.spawnConn == ours {
			s.spawnConn = nil
		}
		s.mu.Unlock()
		ours.Close()
	}, nil
}

func (s *supervisor) startVerifier() (*exec.Cmd, func(), error) {
	ours, theirs, err := seqpacketPair("handoff")
	if err != nil {
		return nil, nil, err
	}
	lf, err := s.adminLn.File()
	if err != nil {
		ours.Close()
		theirs.Close()
		return nil, nil, err
	}
	args := []string{"serve", "--state-dir", filepath.Join(s.stateDir, verifierDir), "--admin-uid", "0"}
	if uid := os.Getuid(); uid != 0 {
		args = append(args, "--admin-uid", strconv.Itoa(uid))
	}
	if s.autoActivate {
		args = append(args, "--auto-activate")
	}
	var id *privdrop.Identity
	if s.multi != nil {
		id = &privdrop.Identity{UID: s.multi.verifier.uid, GID: s.multi.verifier.gid}
		args = append(args, "--multi-uid", "--admin-gid", strconv.FormatUint(uint64(s.multi.adminGID), 10))
	}
	cmd := s.roleCmd("stockade-verifier", []*os.File{lf, theirs}, id, args...)
	err = cmd.Start()
	lf.Close()
	theirs.Close()
	if err != nil {
		ours.Close()
		return nil, nil, err
	}
	s.log.Info("verifier started", "pid", cmd.Process.Pid)
	s.mu.Lock()
	s.handoff = ours
	s.mu.Unlock()
	s.relink()
	return cmd, func() {
		s.mu.Lock()
		if s.handoff == ours {
			s.handoff = nil
		}
		s.mu.Unlock()
		ours.Close()
	}, nil
}

// relink joins the current broker and verifier with a fresh socketpair, one
// end to each, whenever either (re)starts.
func (s *supervisor) relink() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spawnConn == nil || s.handoff == nil {
		return
	}
	fds, err := socketpair(unix.SOCK_STREAM)
	if err != nil {
		s.log.Error("broker-verifier link", "err", err)
		return
	}
	a, b := os.NewFile(uintptr(fds[0]), "link-broker"), os.NewFile(uintptr(fds[1]), "link-verifier")
	defer a.Close()
	defer b.Close()
	link := ipc.SpawnReply{Link: true}.Marshal()
	if err := ipc.SendFD(s.spawnConn, link, a); err != nil {
		s.log.Error("sending link to broker", "err", err)
	}
	if err := ipc.SendFD(s.handoff, link, b); err != nil {
		s.log.Error("sending link to verifier", "err", err)
	}
}

func seqpacketPair(name string) (*net.UnixConn, *os.File, error) {
	fds, err := socketpair(unix.SOCK_SEQPACKET)
	if err != nil {
		return nil, nil, err
	}
	of := os.NewFile(uintptr(fds[0]), name)
	nc, err := net.FileConn(of)
	of.Close()
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		nc.Close()
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("%s: not a unix socket", name)
	}
	return uc, os.NewFile(uintptr(fds[1]), name), nil
}
