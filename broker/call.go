package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/stockade-dev/stockade/broker/attest"
	"github.com/stockade-dev/stockade/ipc"
)

// call checks one request, runs it in an executor and returns the outcome.
// Every error it returns is an *ipc.Error written for the agent. Every call
// that reaches a decision, permitted or refused, is attested, and the agent
// gets the signed record with the outcome or the error.
func (s *Server) call(ctx context.Context, log *slog.Logger, peer ipc.Cred, req *ipc.CallRequest) (out *ipc.Outcome, err error) {
	start := time.Now()
	callID := newCallID()
	log = log.With("call_id", callID, "tool", req.Tool)
	if s.attest != nil {
		if aerr := s.attest.Err(); aerr != nil {
			log.Error("attestation log failed: refusing calls", "err", aerr)
			return nil, ipc.Errorf(ipc.ClassInternal, "the attestation log is unavailable")
		}
	}
	rec := attest.Record{
		CallID: callID, RunID: req.RunID, Tool: req.Tool,
		Principal: attest.Principal{UID: peer.UID, Name: s.principalOf(peer.UID).Name},
		Input:     attest.InputDigest(req.Args, req.Input), Start: start.UnixNano(),
	}
	defer func() { out, err = s.attestCall(log, &rec, out, err) }()
	if err := checkRequest(req); err != nil {
		log.Info("call refused", "err", err)
		rec.Decision = attest.Deny
		return nil, err
	}
	if _, _, ok := skillTool(req.Tool); ok {
		defer func() { s.budget.charge(req.RunID, out) }()
		out, err = s.callSkill(ctx, log, peer, req, callID, &rec)
		if err != nil {
			if rec.Decision == 0 {
				rec.Decision = attest.Deny
			}
			return nil, err
		}
		out.CallID, out.RunID, out.Tool, out.Tier = callID, req.RunID, req.Tool, "A"
		out.Durations.Total = time.Since(start).Microseconds()
		log.Info("call done", "status", out.Status, "fuel_used", out.Wasm.FuelUsed)
		return out, nil
	}
	spec, policies, cleanup, err := s.plan(callID, peer, req)
	if err != nil {
		log.Info("call refused", "err", err)
		rec.Decision = attest.Deny
		return nil, err
	}
	defer cleanup()
	defer func() { s.budget.charge(req.RunID, out) }()
	rec.Decision, rec.Policies = attest.Allow, policies
	rec.SetSpec(spec)
	s.calls.Add(1)
	log.Info("call", "decision", "allow", "tier", spec.Tier, "path", spec.Path)
	out, spawn, err := s.execute(ctx, spec)
	if err != nil {
		log.Warn("call failed", "err", err)
		if ctx.Err() != nil {
			return nil, ipc.Errorf(ipc.ClassInternal, "broker shutting down")
		}
		var e *ipc.Error
		if errors.As(err, &e) {
			return nil, e
		}
		return nil, ipc.Errorf(ipc.ClassInternal, "executor failed")
	}
	out.CallID, out.RunID, out.Tool, out.Tier = callID, req.RunID, req.Tool, spec.Tier
	out.Durations.Spawn = spawn.Microseconds()
	out.Durations.Total = time.Since(start).Microseconds()
	log.Info("call done", "status", out.Status, "exit_code", out.ExitCode, "truncated", out.Truncated)
	return out, nil
}

// attestCall finishes a call's record, appends it to the attestation log and
// attaches the signed record to what the agent gets. A call whose record
// cannot be written is answered internal: nothing goes unattested.
func (s *Server) attestCall(log *slog.Logger, rec *attest.Record, out *ipc.Outcome, err error) (*ipc.Outcome, error) {
	if s.attest == nil || rec.Decision == 0 {
		return out, err
	}
	if err != nil {
		rec.SetError(err)
	} else {
		rec.SetOutcome(out)
		// A native call's artifact is the program the executor hashed; a
		// skill's was set from the resolved release, and nothing the
		// executor says replaces it.
		if out.Artifact != "" && rec.Artifact.Kind != attest.ArtifactSkill {
			if d, perr := attest.ParseDigest(strings.TrimPrefix(out.Artifact, "sha256:")); perr == nil {
				rec.Artifact.Digest = d
			}
		}
		if out.Wasm != nil {
			rec.Usage.Fuel = out.Wasm.FuelUsed
		}
	}
	rec.End = time.Now().UnixNano()
	signed, aerr := s.attest.Append(*rec)
	if aerr != nil {
		log.Error("attestation append failed", "err", aerr)
		return nil, ipc.Errorf(ipc.ClassInternal, "the call could not be attested")
	}
	a := &ipc.Attestation{Record: signed.Encoded, Signature: signed.Signature}
	if err != nil {
		var e *ipc.Error
		if !errors.As(err, &e) {
			e = ipc.Errorf(ipc.ClassInternal, "internal error")
		}
		e.Attestation = a
		return nil, e
	}
	out.Attestation = a
	return out, nil
}

// checkRequest is what every call request must be, whatever its tool.
func checkRequest(req *ipc.CallRequest) error {
	switch {
	case len(req.Tool) > maxToolNameLen || len(req.RunID) > maxRunIDLen:
		return ipc.Errorf(ipc.ClassInvalidInput, "tool name over %d bytes or run_id over %d bytes", maxToolNameLen, maxRunIDLen)
	case req.TimeoutMS < 0 || req.MaxOutput < 0:
		return ipc.Errorf(ipc.ClassInvalidInput, "negative timeout or max_output")
	}
	return nil
}

// plan validates req against the tool's configuration, has the policy decide
// it, and builds the spec. It returns the deciding policies; cleanup removes
// the directories made for the call and ends its in-flight charge.
func (s *Server) plan(callID string, peer ipc.Cred, req *ipc.CallRequest) (*ipc.ExecSpec, []string, func(), error) {
	nop := func() {}
	if len(req.Args) > maxArgs {
		return nil, nil, nop, ipc.Errorf(ipc.ClassInvalidInput, "more than %d arguments", maxArgs)
	}
	for i, a := range req.Args {
		if len(a) > maxArgLen || strings.ContainsRune(a, 0) {
			return nil, nil, nop, ipc.Errorf(ipc.ClassInvalidInput, "argument %d is over %d bytes or contains NUL", i+1, maxArgLen)
		}
	}
	if req.Input != "" || req.Grants != nil {
		return nil, nil, nop, ipc.Errorf(ipc.ClassInvalidInput, "process tools take no input document and no grants")
	}
	var (
		path      string
		argv      []string
		agentArgs []string
		env       = map[string]string{}
		limits    Limits
		iso       *Isolation
	)
	if req.Tool == ProcessRunTool {
		if len(req.Args) == 0 {
			return nil, nil, nop, ipc.Errorf(ipc.ClassInvalidInput, "process.run needs a command")
		}
		p, err := lookupCommand(req.Args[0])
		if err != nil {
			if errors.Is(err, errNotFound) {
				return nil, nil, nop, ipc.Errorf(ipc.ClassFailed, "command not found: %s", req.Args[0])
			}
			return nil, nil, nop, ipc.Errorf(ipc.ClassInvalidInput, "%v", err)
		}
		path, argv, agentArgs = p, append([]string(nil), req.Args...), req.Args[1:]
		limits, iso = s.cfg.Run.Limits, &s.cfg.Run.Isolation
	} else {
		t, ok := s.tools[req.Tool]
		if !ok {
			return nil, nil, nop, ipc.Errorf(ipc.ClassInvalidInput, "unknown tool %q", req.Tool)
		}
		if len(req.Args) > 0 && !t.AllowArgs {
			return nil, nil, nop, ipc.Errorf(ipc.ClassInvalidInput, "tool %q takes no arguments", req.Tool)
		}
		path = t.Command
		argv = append(append([]string{filepath.Base(t.Command)}, t.Args...), req.Args...)
		agentArgs = req.Args
		if len(argv) > maxArgs+1 {
			return nil, nil, nop, ipc.Errorf(ipc.ClassInvalidInput, "more than %d arguments", maxArgs)
		}
		for k, v := range t.Env {
			env[k] = v
		}
		limits, iso = t.Limits, &t.Isolation
	}
	if isInterpreter(path) && !iso.AllowInterpreters {
		return nil, nil, nop, ipc.Errorf(ipc.ClassDenied, "%s is an interpreter or launcher, which this tool may not run", filepath.Base(path))
	}
	toolName := req.Tool
	egress := false
	switch iso.Egress {
	case EgressPreflight:
		if err := preflight(agentArgs, iso.EgressAllow); err != nil {
			return nil, nil, nop, err
		}
		egress = true
	case EgressStrict:
		if len(iso.EgressAllow) > 0 {
			return nil, nil, nop, ipc.Errorf(ipc.ClassSandboxUnavailable, "strict egress to named hosts needs the egress proxy, which this host does not have")
		}
	}
	timeout := time.Duration(limits.Timeout)
	if req.TimeoutMS > 0 {
		timeout = min(timeout, time.Duration(req.TimeoutMS)*time.Millisecond)
	}
	maxOutput := limits.MaxOutput
	if req.MaxOutput > 0 {
		maxOutput = min(maxOutput, req.MaxOutput)
	}
	dir, tmp, scratch, cleanup, err := s.workspace(callID, req.Workspace)
	if err != nil {
		return nil, nil, nop, err
	}
	if err := scopeArgs(agentArgs, dir); err != nil {
		cleanup()
		return nil, nil, nop, err
	}
	facts := &callFacts{tool: toolName, iso: iso, program: path, argv: argv, agentArgs: agentArgs, workspace: dir, egress: egress}
	policies, release, err := s.authorize(peer, req, facts)
	if err != nil {
		cleanup()
		return nil, nil, nop, err
	}

	done := cleanup
	cleanup = func() { release(); done() }
	env["PATH"] = strings.Join(trustedPath, ":")
	env["LANG"], env["LC_ALL"] = "C", "C"
	env["HOME"], env["TMPDIR"] = dir, tmp
	spec := &ipc.ExecSpec{
		CallID: callID, Path: path, Argv: argv, Env: sortedEnv(env), Dir: dir, Tier: iso.Tier, Scratch: scratch,
		TimeoutMS: timeout.Milliseconds(), MaxOutput: maxOutput, Egress: egress,
		Limits: ipc.Rlimits{
			CPUSeconds: limits.CPUSeconds, AddressSpace: limits.AddressSpace,
			NoFile: limits.NoFile, NProc: limits.NProc, FileSize: limits.FileSize,
			Pids: limits.Pids, Memory: limits.Memory,
		},
	}
	if iso.Tier == "C" {
		if spec.Sandbox, err = sandboxFor(iso, s.bwrap, path, dir, tmp, scratch, egress); err != nil {
			cleanup()
			return nil, nil, nop, err
		}
	}
	return spec, policies, cleanup, nil
}

// workspace returns the call's working directory and private temporary
// directory. The working directory is the agent's, which must be an existing
// directory given as an absolute path (resolved through symlinks), or a fresh
// scratch directory; both scratch directories are removed after the call.
//
// In multi-uid mode the broker cannot make directories its executors (other
// uids) can use: the call's directory is <scratch root>/<call id>, made and
// removed by the executor as its own uid (ExecSpec.Scratch), and the
// supervisor removes what a killed executor left before its uid is reused.
func (s *Server) workspace(callID, asked string) (dir, tmp, scratch string, cleanup func(), err error) {
	var base string
	if s.mode == ModeMultiUID {
		scratch = filepath.Join(s.scratch, callID)
		base, cleanup = scratch, func() {}
	} else {
		base = filepath.Join(s.stateDir, "work", callID)
		if err := os.MkdirAll(filepath.Dir(base), 0o700); err != nil {
			return "", "", "", nil, ipc.Errorf(ipc.ClassInternal, "cannot make a workspace")
		}
		if err := os.Mkdir(base, 0o700); err != nil {
			return "", "", "", nil, ipc.Errorf(ipc.ClassInternal, "cannot make a workspace")
		}
		cleanup = func() {
			if err := os.RemoveAll(base); err != nil {
				s.log.Warn("removing call directories", "call_id", callID, "err", err)
			}
		}
	}
	tmp = filepath.Join(base, ScratchTmp)
	dir = filepath.Join(base, ScratchWorkspace)
	if scratch == "" {
		for _, d := range []string{tmp, dir} {
			if err := os.Mkdir(d, 0o700); err != nil {
				cleanup()
				return "", "", "", nil, ipc.Errorf(ipc.ClassInternal, "cannot make a workspace")
			}
		}
	}
	if asked == "" {
		return dir, tmp, scratch, cleanup, nil
	}
	if len(asked) > maxWorkspaceLen || !filepath.IsAbs(asked) {
		cleanup()
		return "", "", "", nil, ipc.Errorf(ipc.ClassInvalidInput, "workspace must be an absolute path of at most %d bytes", maxWorkspaceLen)
	}
	real, err := filepath.EvalSymlinks(asked)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(real); err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		cleanup()
		return "", "", "", nil, ipc.Errorf(ipc.ClassInvalidInput, "workspace %s is not an existing directory", asked)
	}
	if err := checkWorkspace(real, s.protected, s.cfg.WorkspaceRoots); err != nil {
		cleanup()
		return "", "", "", nil, err
	}
	return real, tmp, scratch, cleanup, nil
}

// execute gets an executor, hands it the spec and waits for the outcome.
func (s *Server) execute(ctx context.Context, spec *ipc.ExecSpec) (*ipc.Outcome, time.Duration, error) {
	wait := time.Duration(spec.TimeoutMS)*time.Millisecond + 15*time.Second
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	c, spawned, err := s.openExecutor(ctx, spec)
	if err != nil {
		return nil, spawned, err
	}
	// Closing the socket tells the executor to kill the target and exit.
	defer c.Close()
	var out ipc.Outcome
	if err := c.CallMax(1, ipc.KindExec, spec, ipc.ExecSpecFrameMax, &out, wait); err != nil {
		if errors.Is(err, ipc.ErrFrameTooLarge) {
			return nil, spawned, ipc.Errorf(ipc.ClassInvalidInput, "the call's arguments are too large once planned")
		}
		return nil, spawned, err
	}
	if len(out.Stdout)+len(out.Stderr) > int(spec.MaxOutput) {
		return nil, spawned, errors.New("executor returned more output than the quota")
	}
	return &out, spawned, nil
}

// openExecutor gets an executor from the supervisor and says Hello. The
// connection closes when ctx ends.
func (s *Server) openExecutor(ctx context.Context, spec *ipc.ExecSpec) (*ipc.Conn, time.Duration, error) {
	t0 := time.Now()
	// Waiting for an executor (in multi-uid mode, for a free executor uid)
	// counts against the call's own deadline; a call never shares a uid.
	sctx, scancel := context.WithTimeout(ctx, time.Duration(spec.TimeoutMS)*time.Millisecond)
	f, err := s.spawner.Spawn(sctx)
	scancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, time.Since(t0), ipc.Errorf(ipc.ClassSandboxUnavailable, "no executor became free before the call's deadline")
		}
		return nil, 0, err
	}
	spawned := time.Since(t0)
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, spawned, fmt.Errorf("executor socket: %w", err)
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		nc.Close()
		return nil, spawned, errors.New("executor socket is not a unix socket")
	}
	c, err := ipc.NewConn(uc)
	if err != nil {
		uc.Close()
		return nil, spawned, err
	}
	context.AfterFunc(ctx, func() { c.Close() })
	// The supervisor made the pair, so the kernel names it as the peer: in
	// multi-uid mode that must be root.
	if s.mode == ModeMultiUID && c.Peer().UID != 0 {
		c.Close()
		return nil, spawned, fmt.Errorf("executor socket made by uid %d, not the supervisor", c.Peer().UID)
	}
	if _, err := c.Handshake(ipc.ChannelExec, Software); err != nil {
		c.Close()
		return nil, spawned, fmt.Errorf("executor hello: %w", err)
	}
	c.SetReadMax(s.cfg.OutputFrameMax)
	return c, spawned, nil
}

func sortedEnv(m map[string]string) []string {
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// The names of a call's two directories inside its scratch directory.
const (
	ScratchWorkspace = "ws"
	ScratchTmp       = "tmp"
)

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
