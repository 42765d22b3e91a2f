package broker

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stockade-dev/stockade/broker/attest"
	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/policy"
)

// The broker's modes.
const (
	ModeSingleUser = "single-user"
	ModeMultiUID   = "multi-uid"
)

// Software names the broker in Hello.
const Software = "stockade-broker"

// Options wire a Server to its environment.
type Options struct {
	Log    *slog.Logger
	Config *Config
	// Mode is ModeSingleUser or ModeMultiUID.
	Mode string
	// StateDir holds per-call scratch workspaces.
	StateDir string
	// Protected are Stockade's own directories (runtime, binaries, policy,
	// configuration): no workspace may overlap them or StateDir.
	Protected []string
	// Spawn is the supervisor's spawn channel.
	Spawn *net.UnixConn
	// ExecutorName is the executor's process name (see Server.executorName).
	ExecutorName string
	// Bwrap is the start-up probe's result.
	Bwrap Bwrap
	// Host is what the host gives native calls (ProbeHost).
	Host ipc.HostSandbox
	// Attest is the attestation log every decided call is appended to.
	Attest *attest.Log
	// AttestPublicKey is the attestation public key (hex), for status.
	AttestPublicKey string
	// Multi-uid mode only:
	// AgentGIDs: root and members of these groups may call the broker.
	AgentGIDs []uint32
	// ScratchRoot is where executors make their calls' directories.
	ScratchRoot string
	// WasmCache is the compiled-code cache the broker fills and executors
	// read (Tier A); "" for none.
	WasmCache string
}

// Server is the broker.
type Server struct {
	log      *slog.Logger
	cfg      *Config
	mode     string
	stateDir string
	// protected: directories no workspace may overlap (resolved).
	protected []string
	tools     map[string]*ToolConfig
	agents    []uint32
	agentGIDs []uint32
	skills    *skillHost
	scratch   string // multi-uid: the executors' scratch root
	limiter   *ipc.ConnLimiter
	spawner   *Spawner
	verifier  *verifierLink
	// executorName is stockade-exec's name: agents descending from a
	// process of that name are processes of a call and are refused.
	executorName string
	bwrap        Bwrap
	host         ipc.HostSandbox
	attest       *attest.Log
	attestPubKey string
	policy       *policy.Engine
	budget       *budgets
	started      time.Time
	calls        atomic.Uint64
	wg           sync.WaitGroup
}

// New builds a Server, loads its policies and starts reading the spawn
// channel.
func New(o Options) (*Server, error) {
	engine, err := policy.NewEngine(o.Config.PolicyDir)
	if err != nil {
		return nil, err
	}
	s := &Server{
		log: o.Log, cfg: o.Config, mode: o.Mode, stateDir: o.StateDir,
		agentGIDs: o.AgentGIDs, scratch: o.ScratchRoot,
		protected:    resolveAll(append([]string{o.StateDir, o.Config.PolicyDir}, o.Protected...)),
		tools:        make(map[string]*ToolConfig),
		limiter:      ipc.NewConnLimiter(o.Config.MaxConnsPerUID),
		started:      time.Now(),
		executorName: o.ExecutorName,
		bwrap:        o.Bwrap,
		host:         o.Host,
		attest:       o.Attest,
		attestPubKey: o.AttestPublicKey,
		policy:       engine,
		budget:       newBudgets(o.Config.Budget),
	}
	for i := range o.Config.Tools {
		s.tools[o.Config.Tools[i].Name] = &o.Config.Tools[i]
	}
	s.agents = append([]uint32(nil), o.Config.AgentUIDs...)
	for _, a := range o.Config.Agents {
		s.agents = append(s.agents, a.UID)
	}
	if len(s.agents) == 0 && o.Mode != ModeMultiUID {
		s.agents = []uint32{uint32(os.Getuid())}
	}
	if o.Mode == ModeMultiUID && (o.ScratchRoot == "" || !filepath.IsAbs(o.ScratchRoot)) {
		return nil, errors.New("multi-uid mode needs an absolute scratch root")
	}
	if s.skills, err = newSkillHost(o.Config, o.StateDir, o.WasmCache); err != nil {
		return nil, err
	}
	s.verifier = &verifierLink{log: o.Log}
	s.spawner = NewSpawner(o.Log, o.Spawn, s.verifier.replace)
	return s, nil
}

// mayCall says whether the peer may use agent.sock: a configured agent uid;
// in multi-uid mode also root and members of the agent groups (primary or
// supplementary, as the kernel reports them at connect time).
func (s *Server) mayCall(c *ipc.Conn) bool {
	uid := c.Peer().UID
	if slices.Contains(s.agents, uid) {
		return true
	}
	if s.mode != ModeMultiUID {
		return false
	}
	if uid == 0 {
		return true
	}
	groups, err := c.PeerGroups()
	if err != nil {
		s.log.Warn("peer groups", "peer_uid", uid, "err", err)
		return false
	}
	return ipc.InGroups(groups, s.agentGIDs)
}

// Serve accepts agents on ln until ctx ends or the spawn channel fails, then
// waits for the connections in flight.
func (s *Server) Serve(ctx context.Context, ln *net.UnixListener) error {
	go func() {
		select {
		case <-ctx.Done():
		case <-s.spawner.Done():
		}
		ln.Close()
	}()
	defer s.wg.Wait()
	for {
		nc, err := ln.AcceptUnix()
		if err != nil {
			select {
			case <-s.spawner.Done():
				return s.spawner.Err()
			default:
			}
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			s.log.Warn("accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveAgent(ctx, nc)
		}()
	}
}

func (s *Server) serveAgent(ctx context.Context, nc *net.UnixConn) {
	c, err := ipc.NewConn(nc)
	if err != nil {
		s.log.Warn("peer credentials", "err", err)
		nc.Close()
		return
	}
	defer c.Close()
	peer := c.Peer()
	log := s.log.With("peer_uid", peer.UID, "peer_pid", peer.PID)
	if s.executorName != "" && c.PeerDescendsFrom(s.executorName) {
		log.Warn("refused agent: a process of a call")
		_ = c.SendError(0, ipc.Errorf(ipc.ClassDenied, "processes of a call may not call the broker"))
		return
	}
	if !s.mayCall(c) {
		log.Warn("refused agent: uid not allowed")
		_ = c.SendError(0, ipc.Errorf(ipc.ClassDenied, "uid %d may not call this broker", peer.UID))
		return
	}
	if !s.limiter.Acquire(peer.UID) {
		log.Warn("refused agent: too many connections")
		_ = c.SendError(0, ipc.Errorf(ipc.ClassQuotaExceeded, "too many connections for uid %d", peer.UID))
		return
	}
	defer s.limiter.Release(peer.UID)
	if err := c.Accept(ipc.ChannelAgent, Software); err != nil {
		log.Warn("hello", "err", err)
		return
	}
	// Closing the connection when ctx ends unblocks Recv.
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	for {
		m, err := c.Recv(ipc.IdleTimeout)
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				log.Warn("closing agent connection", "err", err)
				var e *ipc.Error
				if errors.As(err, &e) || errors.Is(err, ipc.ErrMalformed) || errors.Is(err, ipc.ErrFrameTooLarge) {
					_ = c.SendError(0, ipc.Errorf(ipc.ClassProtocol, "bad frame"))
				}
			}
			return
		}
		if !ipc.ChannelAgent.Permits(m.Kind) {
			log.Warn("closing agent connection: unpermitted kind", "kind", m.Kind)
			_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "%q is not a request on the agent channel", m.Kind))
			return
		}
		if err := s.dispatch(ctx, log, c, m); err != nil {
			log.Warn("closing agent connection", "err", err)
			return
		}
	}
}

// dispatch answers one request. It returns an error only when the connection
// must close (a malformed body, or the reply could not be written).
func (s *Server) dispatch(ctx context.Context, log *slog.Logger, c *ipc.Conn, m *ipc.Message) error {
	switch m.Kind {
	case ipc.KindListTools:
		var req ipc.Empty
		if err := m.Decode(&req); err != nil {
			_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "malformed list_tools"))
			return err
		}
		return c.Send(m.ID, m.Kind, s.toolList(ctx), ipc.ControlFrameMax)
	case ipc.KindStatus:
		var req ipc.Empty
		if err := m.Decode(&req); err != nil {
			_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "malformed status"))
			return err
		}
		return c.Send(m.ID, m.Kind, s.status(c.Peer().UID), ipc.ControlFrameMax)
	case ipc.KindCall:
		var req ipc.CallRequest
		if err := m.Decode(&req); err != nil {
			_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "malformed call"))
			return err
		}
		out, err := s.call(ctx, log, c.Peer(), &req)
		if err != nil {
			return c.SendError(m.ID, err)
		}
		return c.Send(m.ID, m.Kind, out, s.cfg.OutputFrameMax)
	}
	return ipc.Errorf(ipc.ClassProtocol, "unhandled kind %q", m.Kind)
}

// toolList lists process.run, the configured tools, and the tools of each
// configured skill whose release is active now (asked of the verifier).
func (s *Server) toolList(ctx context.Context) ipc.ToolList {
	l := ipc.ToolList{Tools: []ipc.ToolInfo{{
		Name: ProcessRunTool, Kind: "process", Tier: s.cfg.Run.Tier, Args: true,
		Description: "Run an ad-hoc command: args[0] is an absolute path or a name on the system PATH",
	}}}
	for _, t := range s.cfg.Tools {
		l.Tools = append(l.Tools, ipc.ToolInfo{Name: t.Name, Kind: t.Kind, Description: t.Description, Tier: t.Tier, Args: t.AllowArgs})
	}
	for _, sk := range s.cfg.Skills {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rs, err := s.verifier.Resolve(rctx, sk.ID, sk.Version)
		cancel()
		if err != nil {
			continue // not active: not callable
		}
		for _, t := range rs.Manifest.Tools {
			l.Tools = append(l.Tools, ipc.ToolInfo{Name: sk.ID + "/" + t.Name, Kind: "skill", Description: t.Description, Tier: "A"})
		}
		rs.Close()
	}
	return l
}

func (s *Server) status(peer uint32) ipc.BrokerStatus {
	st := ipc.BrokerStatus{
		Broker: ipc.RoleStatus{Role: "broker", Software: Software, PID: os.Getpid(), UptimeMS: time.Since(s.started).Milliseconds()},
		Mode:   s.mode, Tools: len(s.cfg.Tools) + 1, Calls: s.calls.Load(), Tiers: s.tiers(), PeerUID: peer, Host: s.host, AttestationKey: s.attestPubKey,
	}
	if v, err := s.verifier.status(); err == nil {
		st.Verifier = v
	} else {
		s.log.Warn("verifier status", "err", err)
		st.Verifier = ipc.RoleStatus{Role: "verifier", Software: "unreachable"}
	}
	return st
}

// tiers lists the tiers and backends this host gives native calls.
func (s *Server) tiers() []string {
	t := []string{"B", "C/landlock"}
	if s.bwrap.Usable {
		t = append(t, "C/bwrap")
	}
	if s.host.LandlockABI > 0 { // a Tier A executor confines itself with Landlock
		t = append(t, "A")
	}
	return t
}

// resolveAll resolves symlinks in each existing path; others stay as given.
func resolveAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		out = append(out, p)
	}
	return out
}
