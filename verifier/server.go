package verifier

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/ipc"
)

// Software names the verifier in Hello.
const Software = "stockade-verifier"

// Server is the verifier role.
type Server struct {
	log    *slog.Logger
	admins []uint32
	// executorName is stockade-exec's name: processes of a call (they
	// descend from an executor) are refused on admin.sock.
	executorName string
	limiter      *ipc.ConnLimiter
	started      time.Time
	wg           sync.WaitGroup
}

// New returns a verifier that lets admins (by uid) use admin.sock, refusing
// processes that descend from one named executorName ("" disables that
// check).
func New(log *slog.Logger, admins []uint32, executorName string) *Server {
	return &Server{log: log, admins: admins, executorName: executorName, limiter: ipc.NewConnLimiter(8), started: time.Now()}
}

// ServeAdmin accepts admins on ln until ctx ends.
func (s *Server) ServeAdmin(ctx context.Context, ln *net.UnixListener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer s.wg.Wait()
	for {
		nc, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return ctx.Err()
			}
			s.log.Warn("accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveAdmin(ctx, nc)
		}()
	}
}

func (s *Server) serveAdmin(ctx context.Context, nc *net.UnixConn) {
	c, err := ipc.NewConn(nc)
	if err != nil {
		nc.Close()
		return
	}
	defer c.Close()
	uid := c.Peer().UID
	if s.executorName != "" && c.PeerDescendsFrom(s.executorName) {
		s.log.Warn("refused admin: a process of a call", "peer_uid", uid)
		_ = c.SendError(0, ipc.Errorf(ipc.ClassDenied, "processes of a call may not administer Stockade"))
		return
	}
	if !slices.Contains(s.admins, uid) {
		s.log.Warn("refused admin: uid not allowed", "peer_uid", uid)
		_ = c.SendError(0, ipc.Errorf(ipc.ClassDenied, "uid %d is not an admin", uid))
		return
	}
	if !s.limiter.Acquire(uid) {
		_ = c.SendError(0, ipc.Errorf(ipc.ClassQuotaExceeded, "too many connections"))
		return
	}
	defer s.limiter.Release(uid)
	s.serve(ctx, c, ipc.ChannelAdmin)
}

// ServeLinks reads broker links from the supervisor's handoff channel and
// serves each; a new link replaces the old one when the broker restarts.
func (s *Server) ServeLinks(ctx context.Context, handoff *net.UnixConn) error {
	stop := context.AfterFunc(ctx, func() { handoff.Close() })
	defer stop()
	buf := make([]byte, ipc.SpawnReplySize+1)
	for {
		n, f, err := ipc.RecvFD(handoff, buf, "broker-link")
		if err == nil && n == 0 {
			err = io.EOF
		}
		if err == nil {
			var r ipc.SpawnReply
			if r, err = ipc.ParseSpawnReply(buf[:n]); err == nil && (!r.Link || f == nil) {
				err = errors.New("handoff packet is not a link")
			}
		}
		if err != nil {
			if f != nil {
				f.Close()
			}
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveLink(ctx, f)
		}()
	}
}

func (s *Server) serveLink(ctx context.Context, f *os.File) {
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		s.log.Error("broker link", "err", err)
		return
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		nc.Close()
		return
	}
	c, err := ipc.NewConn(uc)
	if err != nil {
		uc.Close()
		return
	}
	defer c.Close()
	// The supervisor made the pair: its uid (root or ours) is the peer.
	if p := c.Peer().UID; p != 0 && p != uint32(os.Getuid()) {
		s.log.Error("broker link from an unexpected uid", "peer_uid", p)
		return
	}
	s.log.Info("broker linked")
	s.serve(ctx, c, ipc.ChannelVerifier)
}

// serve runs Hello and then answers requests until the peer leaves or errs.
func (s *Server) serve(ctx context.Context, c *ipc.Conn, ch ipc.Channel) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	log := s.log.With("peer_uid", c.Peer().UID, "channel", ch)
	if err := c.Accept(ch, Software); err != nil {
		log.Warn("hello", "err", err)
		return
	}
	idle := time.Duration(0) // the broker link lives as long as the broker
	if ch == ipc.ChannelAdmin {
		idle = ipc.IdleTimeout
	}
	for {
		m, err := c.Recv(idle)
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				log.Warn("closing connection", "err", err)
			}
			return
		}
		if !ch.Permits(m.Kind) {
			log.Warn("closing connection: unpermitted kind", "kind", m.Kind)
			_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "%q is not a request on this channel", m.Kind))
			return
		}
		var req ipc.Empty
		if err := m.Decode(&req); err != nil {
			_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "malformed %s", m.Kind))
			return
		}
		st := ipc.RoleStatus{Role: "verifier", Software: Software, PID: os.Getpid(), UptimeMS: time.Since(s.started).Milliseconds()}
		if err := c.Send(m.ID, m.Kind, st, ipc.ControlFrameMax); err != nil {
			return
		}
	}
}
