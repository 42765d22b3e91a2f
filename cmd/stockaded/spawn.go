package main

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/privdrop"
	"github.com/stockade-dev/stockade/ipc"
)

// serveSpawn answers the broker's spawn requests on conn. This is the only
// input the supervisor parses: packets of exactly ipc.SpawnRequestSize bytes.
// Anything else closes the channel, which makes the broker exit; it is then
// restarted.
func (s *supervisor) serveSpawn(conn *net.UnixConn) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // requests still waiting for a uid give up
	buf := make([]byte, ipc.SpawnRequestSize+1)
	for {
		n, f, err := ipc.RecvFD(conn, buf, "unexpected")
		if err != nil || n == 0 {
			// The broker exited, or sent a packet too long or with
			// descriptors: close the channel either way, so that a broker
			// still alive notices, exits and is restarted.
			if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Error("bad spawn packet; closing the broker's channel", "err", err)
			}
			conn.Close()
			return
		}
		req, perr := ipc.ParseSpawnRequest(buf[:n])
		if f != nil || perr != nil {
			if f != nil {
				f.Close()
			}
			s.log.Error("bad spawn request; closing the broker's channel", "err", perr)
			conn.Close()
			return
		}
		// Each request is answered on its own: one waiting for a free
		// executor uid does not hold up the others.
		go s.answerSpawn(ctx, conn, req)
	}
}

// maxSpawnWait bounds how long a spawn request waits for a free executor
// uid; the broker gives up sooner, at its call's deadline, and closes an
// executor that arrives late.
const maxSpawnWait = 10 * time.Minute

func (s *supervisor) answerSpawn(ctx context.Context, conn *net.UnixConn, req ipc.SpawnRequest) {
	ctx, cancel := context.WithTimeout(ctx, maxSpawnWait)
	defer cancel()
	reply := ipc.SpawnReply{Seq: req.Seq, Code: ipc.SpawnOK}
	theirs, err := s.takeExecutor(ctx)
	if err != nil {
		s.log.Error("cannot start executor", "err", err)
		reply.Code = ipc.SpawnUnavailable
	}
	s.mu.Lock()
	err = ipc.SendFD(conn, reply.Marshal(), theirs)
	s.mu.Unlock()
	if theirs != nil {
		theirs.Close()
	}
	if err != nil {
		conn.Close()
	}
}

// poolSize is how many executors wait, forked ahead of demand, so that a
// call does not pay for an executor's start. An idle executor holds no call
// and no privilege beyond its own uid; it dies with the supervisor.
const poolSize = 2

// takeExecutor hands out a waiting executor, or forks one when none waits,
// and has the pool refilled.
func (s *supervisor) takeExecutor(ctx context.Context) (*os.File, error) {
	s.poolOnce.Do(func() {
		s.pool = make(chan *os.File, poolSize)
		s.poolWake = make(chan struct{}, 1)
		go s.fillPool()
	})
	defer func() {
		select {
		case s.poolWake <- struct{}{}:
		default:
		}
	}()
	select {
	case f := <-s.pool:
		return f, nil
	default:
	}
	var uid uint32
	if s.uids != nil {
		var err error
		if uid, err = s.uids.acquire(ctx); err != nil {
			return nil, err
		}
	}
	return s.spawnExecutor(uid)
}

// fillPool keeps the pool full until shutdown; it forks only after a call
// has taken an executor, so an idle system holds at most poolSize of them.
func (s *supervisor) fillPool() {
	for range s.poolWake {
		for len(s.pool) < cap(s.pool) {
			var uid uint32
			if s.uids != nil {
				var ok bool
				if uid, ok = s.uids.tryAcquire(); !ok {
					break // every uid is busy: calls wait for one
				}
			}
			f, err := s.spawnExecutor(uid)
			if err != nil {
				break // shutting down, or cannot fork: calls fork on demand
			}
			s.pool <- f
		}
	}
}

// drainPool closes the broker ends of waiting executors: they read EOF and
// exit.
func (s *supervisor) drainPool() {
	if s.pool == nil {
		return
	}
	for {
		select {
		case f := <-s.pool:
			f.Close()
		default:
			return
		}
	}
}

// spawnExecutor forks one stockade-exec with one end of a new socketpair as
// fd 3 and returns the other end for the broker. In multi-uid mode the
// executor runs as uid (taken from the pool by the caller, and given back
// here, cleaned, once the executor is gone); uid is 0 in single-user mode.
func (s *supervisor) spawnExecutor(uid uint32) (_ *os.File, err error) {
	if uid != 0 {
		defer func() {
			if err != nil {
				s.uids.release(uid)
			}
		}()
	}
	fds, err := socketpair(unix.SOCK_STREAM)
	if err != nil {
		return nil, err
	}
	forBroker, forExec := os.NewFile(uintptr(fds[0]), "exec-broker"), os.NewFile(uintptr(fds[1]), "exec")
	s.mu.Lock()
	if s.shuttingDown {
		s.mu.Unlock()
		forBroker.Close()
		forExec.Close()
		return nil, os.ErrClosed
	}
	var id *privdrop.Identity
	var args []string
	if uid != 0 {
		id = &privdrop.Identity{UID: uid, GID: uid}
		args = []string{"--scratch-root", s.scratchRoot}
	}
	cmd := s.roleCmd("stockade-exec", []*os.File{forExec}, id, args...)
	err = cmd.Start()
	forExec.Close()
	if err != nil {
		s.mu.Unlock()
		forBroker.Close()
		return nil, err
	}
	pid := cmd.Process.Pid
	s.execs[pid] = cmd.Process
	s.execWG.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.execWG.Done()
		err := cmd.Wait()
		s.mu.Lock()
		delete(s.execs, pid)
		s.mu.Unlock()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && !ws.Exited() {
			s.log.Warn("executor killed", "pid", pid, "err", err)
		}
		if uid != 0 {
			s.uids.release(uid)
		}
	}()
	return forBroker, nil
}
