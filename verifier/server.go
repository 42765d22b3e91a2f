package verifier

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/install"
	"github.com/stockade-dev/stockade/verifier/trust"
)

// Software names the verifier in Hello.
const Software = "stockade-verifier"

// Names inside the state directory.
const (
	TrustDir  = "trust"  // the trust store (verifier/trust)
	SkillsDir = "skills" // installed releases (verifier/install)
)

// Config is the verifier's configuration, from stockade-verifier serve's
// flags.
type Config struct {
	Log *slog.Logger
	// StateDir is the verifier's own directory (mode 0700, owned by its
	// uid): the trust store in StateDir/trust, installed skills in
	// StateDir/skills.
	StateDir string
	// AdminUIDs may use admin.sock (root always may); so may every peer
	// one of whose groups (primary or supplementary, as the kernel says)
	// is in AdminGIDs.
	AdminUIDs []uint32
	AdminGIDs []uint32
	// ExecutorName is stockade-exec's name: processes of a call (they
	// descend from an executor) are refused on admin.sock. "" disables
	// the check (tests).
	ExecutorName string
	// AutoActivate lets a clean update by a skill's pinned key become
	// active without an admin (trust.Options.AutoActivate).
	AutoActivate bool
}

// Server is the verifier role.
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   *trust.Store
	skills  string // StateDir/skills
	limiter *ipc.ConnLimiter
	started time.Time
	wg      sync.WaitGroup

	// mu orders changes of the store and the skills directory (held
	// exclusively) against what only reads them (resolve, doctor, list:
	// shared), so that a reader never sees a release between its files
	// and its store record.
	mu sync.RWMutex
}

// New opens the verifier's state and repairs what a crash left: the
// trust store recovers itself (trust.Open); install.Clean removes staging
// and trash directories; and an installed release the store does not hold
// (installed, then the verifier died before the store admitted it, or the
// store refused or forgot it and the verifier died before removing the
// files) is removed. After New, doctor finds nothing a crash could cause.
func New(cfg Config) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.StateDir == "" {
		return nil, errors.New("verifier: no state directory")
	}
	fi, err := os.Lstat(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("verifier: state directory: %w", err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("verifier: state directory %s must be a directory of mode 0700", cfg.StateDir)
	}
	s := &Server{
		cfg: cfg, log: cfg.Log, skills: filepath.Join(cfg.StateDir, SkillsDir),
		limiter: ipc.NewConnLimiter(8), started: time.Now(),
	}
	s.store, err = trust.Open(filepath.Join(cfg.StateDir, TrustDir), trust.Options{
		AutoActivate: cfg.AutoActivate, Logger: cfg.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("verifier: trust store: %w", err)
	}
	if err := s.repair(); err != nil {
		s.store.Close()
		return nil, err
	}
	return s, nil
}

// repair is New's crash recovery of the skills directory.
func (s *Server) repair() error {
	if err := os.Mkdir(s.skills, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("verifier: skills directory: %w", err)
	}
	removed, err := install.Clean(s.skills)
	if err != nil {
		return fmt.Errorf("verifier: cleaning the skills directory: %w", err)
	}
	for _, n := range removed {
		s.log.Info("removed an interrupted install", "dir", n)
	}
	orphans, err := s.orphans()
	if err != nil {
		return fmt.Errorf("verifier: listing installed skills: %w", err)
	}
	for _, d := range orphans {
		if err := install.Remove(s.skills, d); err != nil {
			return fmt.Errorf("verifier: removing unadmitted release %s: %w", d, err)
		}
		s.log.Info("removed an installed release the trust store does not hold", "digest", d.String())
	}
	return nil
}

// Close releases the trust store.
func (s *Server) Close() error { return s.store.Close() }

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

// isAdmin says whether the peer may use admin.sock: root, an admin uid, or
// a member of an admin group, by the kernel's word.
func (s *Server) isAdmin(c *ipc.Conn) bool {
	uid := c.Peer().UID
	if uid == 0 || slices.Contains(s.cfg.AdminUIDs, uid) {
		return true
	}
	if len(s.cfg.AdminGIDs) == 0 {
		return false
	}
	groups, err := c.PeerGroups()
	if err != nil {
		s.log.Warn("reading the peer's groups", "peer_uid", uid, "err", err)
		return false
	}
	return ipc.InGroups(groups, s.cfg.AdminGIDs)
}

func (s *Server) serveAdmin(ctx context.Context, nc *net.UnixConn) {
	c, err := ipc.NewConn(nc)
	if err != nil {
		nc.Close()
		return
	}
	defer c.Close()
	uid := c.Peer().UID
	if s.cfg.ExecutorName != "" && c.PeerDescendsFrom(s.cfg.ExecutorName) {
		s.log.Warn("refused admin: a process of a call", "peer_uid", uid)
		_ = c.SendError(0, ipc.ReasonError(ipc.ReasonDenied, "processes of a call may not administer Stockade"))
		return
	}
	if !s.isAdmin(c) {
		s.log.Warn("refused admin: not an admin uid or group", "peer_uid", uid)
		_ = c.SendError(0, ipc.ReasonError(ipc.ReasonDenied, "uid %d is not an admin", uid))
		return
	}
	if !s.limiter.Acquire(uid) {
		_ = c.SendError(0, ipc.Errorf(ipc.ClassQuotaExceeded, "too many connections"))
		return
	}
	defer s.limiter.Release(uid)
	c.SetAcceptFiles(true) // install's archive and .sig
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

// ServeLink serves one broker link (the verifier's end of a socketpair).
func (s *Server) ServeLink(ctx context.Context, f *os.File) { s.serveLink(ctx, f) }

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
	// The broker link comes from the supervisor and is the only one: wait
	// for the broker's Hello as long as it takes (a slow broker start must
	// not leave the system without its link). Admins get HelloTimeout.
	helloWait := ipc.HelloTimeout
	if ch == ipc.ChannelVerifier {
		helloWait = 0
	}
	if err := c.AcceptWithin(ch, Software, helloWait); err != nil {
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
			m.CloseFiles()
			log.Warn("closing connection: unpermitted kind", "kind", m.Kind)
			_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "%q is not a request on this channel", m.Kind))
			return
		}
		if n := len(m.Files()); n != m.Kind.FDs() {
			m.CloseFiles()
			log.Warn("closing connection: wrong descriptors", "kind", m.Kind, "fds", n)
			_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "%s carries %d descriptors, not %d", m.Kind, m.Kind.FDs(), n))
			return
		}
		if err := s.handle(ctx, c, m, log); err != nil {
			if !errors.Is(err, errClose) {
				log.Warn("closing connection", "kind", m.Kind, "err", err)
			}
			return
		}
	}
}

// errClose ends a connection after a reply was sent.
var errClose = errors.New("close")

// handle answers one permitted request. A body that does not decode ends
// the connection; a refusal is sent as a typed error and the connection
// stays open.
func (s *Server) handle(ctx context.Context, c *ipc.Conn, m *ipc.Message, log *slog.Logger) error {
	files := m.Files()
	defer m.CloseFiles()
	var (
		reply    any
		err      error
		out      []*os.File
		replyMax = admin.ReplyFrameMax
	)
	decode := func(v any) bool {
		if derr := m.Decode(v); derr != nil {
			_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "malformed %s", m.Kind))
			return false
		}
		return true
	}
	switch m.Kind {
	case ipc.KindStatus:
		var req ipc.Empty
		if !decode(&req) {
			return errClose
		}
		reply = ipc.RoleStatus{Role: "verifier", Software: Software, PID: os.Getpid(), UptimeMS: time.Since(s.started).Milliseconds()}
	case ipc.KindResolve:
		var req ipc.ResolveRequest
		if !decode(&req) {
			return errClose
		}
		replyMax = ipc.ResolveFrameMax
		var res *ipc.Resolved
		res, out, err = s.resolve(req)
		if err == nil {
			reply = res
		}
		defer closeAll(out)
	case ipc.KindInstall:
		var req admin.InstallRequest
		if !decode(&req) {
			return errClose
		}
		reply, err = s.install(ctx, files[0], files[1])
	case ipc.KindList:
		var req ipc.Empty
		if !decode(&req) {
			return errClose
		}
		reply = s.list()
	case ipc.KindShow:
		var req admin.SkillRef
		if !decode(&req) {
			return errClose
		}
		reply, err = s.show(req.ID)
	case ipc.KindPromote:
		var req admin.ReleaseRef
		if !decode(&req) {
			return errClose
		}
		reply, err = s.promote(req)
	case ipc.KindDisable, ipc.KindEnable:
		var req admin.SkillRef
		if !decode(&req) {
			return errClose
		}
		reply, err = ipc.Empty{}, s.setEnabled(req.ID, m.Kind == ipc.KindEnable)
	case ipc.KindRemove:
		var req admin.ReleaseRef
		if !decode(&req) {
			return errClose
		}
		reply, err = ipc.Empty{}, s.remove(req)
	case ipc.KindRevokeKey:
		var req admin.KeyRef
		if !decode(&req) {
			return errClose
		}
		reply, err = ipc.Empty{}, s.revokeKey(req.Fingerprint)
	case ipc.KindRevokeSkill:
		var req admin.ReleaseRef
		if !decode(&req) {
			return errClose
		}
		reply, err = ipc.Empty{}, s.revokeSkill(req)
	case ipc.KindTrustList:
		var req ipc.Empty
		if !decode(&req) {
			return errClose
		}
		reply = s.trustList()
	case ipc.KindImportRotation:
		var req admin.RotationRequest
		if !decode(&req) {
			return errClose
		}
		reply, err = s.importRotation(req.Envelope)
	case ipc.KindDoctor:
		var req ipc.Empty
		if !decode(&req) {
			return errClose
		}
		reply = s.Doctor()
	default:
		_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "%q is not served", m.Kind))
		return errClose
	}
	if err != nil {
		we := wireError(err)
		log.Info("refused", "kind", m.Kind, "reason", we.Reason, "err", err)
		return c.SendError(m.ID, we)
	}
	return c.SendFiles(m.ID, m.Kind, reply, replyMax, out)
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
