package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"

	"github.com/stockade-dev/stockade/ipc"
)

// Spawner asks the supervisor for executors over the inherited spawn channel
// (see ipc/spawn.go) and receives verifier links on it.
type Spawner struct {
	log    *slog.Logger
	conn   *net.UnixConn
	onLink func(*os.File)

	mu      sync.Mutex
	seq     uint32
	pending map[uint32]chan spawnResult
	err     error // set once the channel is gone
	done    chan struct{}
}

type spawnResult struct {
	code uint32
	f    *os.File
}

// ErrSpawnChannel means the channel to the supervisor is gone.
var ErrSpawnChannel = errors.New("spawn channel closed")

// NewSpawner starts reading conn. onLink receives every verifier link the
// supervisor sends.
func NewSpawner(log *slog.Logger, conn *net.UnixConn, onLink func(*os.File)) *Spawner {
	s := &Spawner{log: log, conn: conn, onLink: onLink, pending: make(map[uint32]chan spawnResult), done: make(chan struct{})}
	go s.read()
	return s
}

func (s *Spawner) read() {
	buf := make([]byte, ipc.SpawnReplySize+1)
	for {
		n, f, err := ipc.RecvFD(s.conn, buf, "spawned")
		if err == nil && n == 0 {
			err = ErrSpawnChannel
		}
		var r ipc.SpawnReply
		if err == nil {
			r, err = ipc.ParseSpawnReply(buf[:n])
		}
		if err != nil {
			if f != nil {
				f.Close()
			}
			s.fail(fmt.Errorf("%w: %v", ErrSpawnChannel, err))
			return
		}
		if r.Link {
			if f != nil {
				s.onLink(f)
			}
			continue
		}
		s.mu.Lock()
		ch := s.pending[r.Seq]
		delete(s.pending, r.Seq)
		s.mu.Unlock()
		if ch == nil {
			if f != nil {
				f.Close()
			}
			s.log.Warn("spawn reply for no request", "seq", r.Seq)
			continue
		}
		ch <- spawnResult{code: r.Code, f: f}
	}
}

func (s *Spawner) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
	for seq, ch := range s.pending {
		close(ch)
		delete(s.pending, seq)
	}
	close(s.done)
}

// Done is closed when the spawn channel fails. Without executors the broker is
// useless: its main exits and the supervisor restarts it.
func (s *Spawner) Done() <-chan struct{} { return s.done }

// Err says why the channel failed, once Done is closed.
func (s *Spawner) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Spawn asks for one executor and returns the broker's end of its socket.
func (s *Spawner) Spawn(ctx context.Context) (*os.File, error) {
	ch := make(chan spawnResult, 1)
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return nil, s.err
	}
	s.seq++
	seq := s.seq
	s.pending[seq] = ch
	_, _, err := s.conn.WriteMsgUnix(ipc.SpawnRequest{Seq: seq}.Marshal(), nil, nil)
	if err != nil {
		delete(s.pending, seq)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpawnChannel, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, ErrSpawnChannel
		}
		if r.code != ipc.SpawnOK || r.f == nil {
			if r.f != nil {
				r.f.Close()
			}
			return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "no executor available")
		}
		return r.f, nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.pending, seq)
		s.mu.Unlock()
		// A reply that arrives later finds no waiter and is closed by read;
		// one that arrived meanwhile is closed here.
		select {
		case r := <-ch:
			if r.f != nil {
				r.f.Close()
			}
		default:
		}
		return nil, ctx.Err()
	}
}
