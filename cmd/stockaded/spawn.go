package main

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
)

// serveSpawn answers the broker's spawn requests on conn. This is the only
// input the supervisor parses: packets of exactly ipc.SpawnRequestSize bytes.
// Anything else closes the channel, which makes the broker exit; it is then
// restarted.
func (s *supervisor) serveSpawn(conn *net.UnixConn) {
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
		reply := ipc.SpawnReply{Seq: req.Seq, Code: ipc.SpawnOK}
		theirs, err := s.takeExecutor()
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
			return
		}
	}
}

// poolSize is how many executors wait, forked ahead of demand, so that a
// call does not pay for an executor's start. An idle executor holds no call
// and no privilege beyond its own uid; it dies with the supervisor.
const poolSize = 2

// takeExecutor hands out a waiting executor, or forks one when none waits,
// and has the pool refilled.
func (s *supervisor) takeExecutor() (*os.File, error) {
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
		return s.spawnExecutor()
	}
}

// fillPool keeps the pool full until shutdown; it forks only after a call
// has taken an executor, so an idle system holds at most poolSize of them.
func (s *supervisor) fillPool() {
	for range s.poolWake {
		for len(s.pool) < cap(s.pool) {
			f, err := s.spawnExecutor()
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
// fd 3 and returns the other end for the broker.
func (s *supervisor) spawnExecutor() (*os.File, error) {
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
	cmd := s.roleCmd("stockade-exec", []*os.File{forExec})
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
	}()
	return forBroker, nil
}
