package broker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/broker/attest"
	"github.com/stockade-dev/stockade/broker/hostcall"
	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/policy"
	"github.com/stockade-dev/stockade/wasm/compiled"
	"github.com/stockade-dev/stockade/wasm/meter"
)

// Tier A on the broker's side: resolve the skill through the verifier
// (active releases only, re-hashed there), instrument its module for fuel
// (here, in a trusted role: never in an executor), intersect the grants,
// ask the policy, hand the executor the module and the spec, and perform
// the guest's capability uses it forwards.

// skillHost holds what Tier A calls share: the instrumented modules by
// digest, and the capability services.
type skillHost struct {
	http    *hostcall.HTTP
	kv      *hostcall.KV // nil until a skill with storage is called
	secrets *hostcall.Secrets
	kvPath  string
	// cacheDir is the compiled-code cache executors read (wasm/compiled);
	// "" when there is none: executors then compile.
	cacheDir string

	mu           sync.Mutex
	instrumented map[string]instrumentedModule // by the signed module's digest
	kvErr        error
	// warm holds Tier A executors already confined with a module compiled,
	// by instrumented digest, each for exactly one call; warming marks
	// the digests one is being prepared for.
	warm    map[string][]*warmExecutor
	warming map[string]int
}

// warmExecutor is a prepared Tier A executor waiting for its call.
type warmExecutor struct {
	c      *ipc.Conn
	cancel context.CancelFunc
	digest string
}

// Warm executors: one per hot module, a few in all (in multi-uid mode
// each holds an executor uid while it waits).
const (
	warmPerModule = 2
	warmMax       = 4
)

type instrumentedModule struct {
	code        []byte
	digest      string
	info        meter.Info
	precompiled bool // its machine code is in cacheDir
}

func newSkillHost(cfg *Config, stateDir, cacheDir string) (*skillHost, error) {
	values := map[string]map[string]string{}
	for _, sk := range cfg.Skills {
		if len(sk.Secrets) > 0 {
			values[sk.ID] = sk.Secrets
		}
	}
	secrets, err := hostcall.NewSecrets(values)
	if err != nil {
		return nil, err
	}
	return &skillHost{
		http: &hostcall.HTTP{}, secrets: secrets, kvPath: stateDir + "/skills-kv.db", cacheDir: cacheDir,
		instrumented: map[string]instrumentedModule{},
		warm:         map[string][]*warmExecutor{}, warming: map[string]int{},
	}, nil
}

// store opens the key-value store on first use.
func (h *skillHost) store() (*hostcall.KV, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.kv == nil && h.kvErr == nil {
		h.kv, h.kvErr = hostcall.Open(h.kvPath, hostcall.Quotas{})
	}
	return h.kv, h.kvErr
}

// instrument returns the module instrumented for fuel, once per digest,
// and compiles it into the compiled-code cache, so that executors load
// machine code the broker made instead of compiling (a failure to
// precompile only costs them the compile).
func (h *skillHost) instrument(log *slog.Logger, digest string, read func() ([]byte, error)) (instrumentedModule, error) {
	h.mu.Lock()
	m, ok := h.instrumented[digest]
	h.mu.Unlock()
	if ok {
		return m, nil
	}
	code, err := read()
	if err != nil {
		return m, err
	}
	out, info, err := meter.Instrument(code, meter.Config{})
	if err != nil {
		return m, err
	}
	sum := sha256.Sum256(out)
	m = instrumentedModule{code: out, digest: "sha256:" + hex.EncodeToString(sum[:]), info: info}
	if h.cacheDir != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := compiled.Precompile(ctx, h.cacheDir, out); err != nil {
			log.Warn("precompiling a skill module", "module", m.digest, "err", err)
		} else {
			m.precompiled = true
		}
		cancel()
	}
	h.mu.Lock()
	if len(h.instrumented) > 64 {
		clear(h.instrumented) // a small cache: skills in use come back at once
	}
	h.instrumented[digest] = m
	h.mu.Unlock()
	return m, nil
}

// skillConfig is the operator's entry for a skill id, if any.
func (s *Server) skillConfig(id string) *SkillConfig {
	for i := range s.cfg.Skills {
		if s.cfg.Skills[i].ID == id {
			return &s.cfg.Skills[i]
		}
	}
	return nil
}

// callSkill runs "<id>/<tool>" as Tier A. rec is the call's attestation
// record, filled as the call goes.
func (s *Server) callSkill(ctx context.Context, log *slog.Logger, peer ipc.Cred, req *ipc.CallRequest, callID string, rec *attest.Record) (*ipc.Outcome, error) {
	id, toolName, _ := skillTool(req.Tool)
	sk := s.skillConfig(id)
	if sk == nil {
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "unknown tool %q", req.Tool)
	}
	if len(req.Args) > 0 || req.Workspace != "" {
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "a skill's tool takes an input document, not arguments or a workspace")
	}
	input := []byte(req.Input)
	if len(input) == 0 {
		input = []byte("{}")
	}
	if !json.Valid(input) {
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "the input is not a JSON document")
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	rs, err := s.verifier.Resolve(rctx, id, sk.Version)
	cancel()
	if err != nil {
		var e *ipc.Error
		if errors.As(err, &e) {
			log.Info("skill not resolved", "err", err)
			return nil, ipc.Errorf(ipc.ClassDenied, "skill %s cannot run: %s", id, e.Reason)
		}
		return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "the verifier did not resolve %s", id)
	}
	defer rs.Close()
	var tool *ipc.SkillTool
	for i := range rs.Manifest.Tools {
		if rs.Manifest.Tools[i].Name == toolName {
			tool = &rs.Manifest.Tools[i]
		}
	}
	if tool == nil {
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "skill %s has no tool %q", id, toolName)
	}
	mod, ok := rs.Module(tool.Module)
	if !ok {
		return nil, ipc.Errorf(ipc.ClassInternal, "the verifier did not send module %s", tool.Module)
	}
	inst, err := s.skills.instrument(log, mod.SHA256, mod.Read)
	if err != nil {
		log.Warn("instrumenting", "module", tool.Module, "err", err)
		return nil, ipc.Errorf(ipc.ClassDenied, "skill %s: its module cannot be metered", id)
	}
	rec.Artifact = attest.Artifact{Kind: attest.ArtifactSkill, Name: id + "@" + rs.Version}
	// checkResolved parsed these; instrument made the last one.
	digest := func(s string) attest.Digest {
		d, _ := ipc.ParseSHA256(s)
		return d
	}
	rec.Artifact.Digest = digest(rs.Digest)
	am := attest.Module{Name: tool.Module, Digest: digest(mod.SHA256), Instrumented: digest(inst.digest)}
	rec.Artifact.Modules = []attest.Module{am}

	// Grants: the approved manifest ∩ the operator's configuration.
	caps := rs.Manifest.Capabilities
	mg, err := hostcall.ManifestGrant(caps.HTTP, caps.Secrets, caps.Storage, caps.Channels)
	if err != nil {
		return nil, ipc.Errorf(ipc.ClassDenied, "skill %s: its capabilities: %v", id, err)
	}
	grant := hostcall.Intersect(mg, sk.grant)
	if req.Grants != nil {
		grant = narrow(grant, req.Grants)
	}

	// Limits: what the skill asks, within the operator's maximum.
	fuel := sk.Fuel
	if f := rs.Manifest.Limits.Fuel; f > 0 {
		fuel = min(fuel, f)
	}
	memory := sk.MemoryBytes
	if m := rs.Manifest.Limits.MemoryBytes; m > 0 {
		memory = min(memory, m)
	}
	pages := uint32(memory / (64 << 10))
	if mod.MemoryLimitPages > 0 {
		pages = min(pages, mod.MemoryLimitPages)
	}
	timeout := time.Duration(sk.Timeout)
	if t := rs.Manifest.Limits.TimeoutMS; t > 0 {
		timeout = min(timeout, time.Duration(t)*time.Millisecond)
	}
	if req.TimeoutMS > 0 {
		timeout = min(timeout, time.Duration(req.TimeoutMS)*time.Millisecond)
	}
	maxOutput := sk.MaxOutput
	if req.MaxOutput > 0 {
		maxOutput = min(maxOutput, req.MaxOutput)
	}

	// The policy decides, on the verifier's view of the skill.
	var pcaps []policy.Capability
	if len(grant.HTTP) > 0 {
		pcaps = append(pcaps, policy.NetworkEgress)
	}
	if len(grant.Secrets) > 0 {
		pcaps = append(pcaps, policy.SecretsRead)
	}
	if grant.KV {
		pcaps = append(pcaps, policy.StorageWrite)
	}
	if len(grant.Channels) > 0 {
		pcaps = append(pcaps, policy.ChannelSend)
	}
	psk, err := policySkill(id, rs.Version, pcaps)
	if err != nil {
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "%v", err)
	}
	now := time.Now()
	preq := &policy.Request{
		Principal: s.principalOf(peer.UID),
		Tool:      policy.Tool{Name: req.Tool, Kind: policy.KindSkill, Tier: policy.Tier("A"), Capabilities: pcaps, Egress: policy.EgressNone},
		Skill:     psk,
		Actions:   pcaps,
		Context: policy.Context{
			RunID: req.RunID, CallsUsed: s.budget.callsUsed(req.RunID), Tier: policy.Tier("A"), Now: now,
			Budget: s.budget.snapshot(req.RunID, peer.UID, now),
		},
	}
	d := s.policy.Decide(preq)
	if !d.Allowed() {
		rec.Decision, rec.Policies = attest.Deny, d.Policies()
		e := ipc.Errorf(ipc.ClassDenied, "denied by policy")
		e.Policies = d.Policies()
		return nil, e
	}
	release, err := s.budget.admit(req.RunID, peer.UID, now)
	if err != nil {
		rec.Decision = attest.Deny
		return nil, err
	}
	defer release()
	rec.Decision, rec.Policies = attest.Allow, d.Policies()

	spec := &ipc.ExecSpec{
		CallID: callID, Tier: "A", TimeoutMS: timeout.Milliseconds(), MaxOutput: maxOutput,
		Wasm: &ipc.WasmSpec{
			SkillID: id, Instrumented: inst.digest, Export: tool.Export,
			Input: input, Fuel: fuel, MemoryPages: pages, MaxHostCalls: sk.MaxHostCalls,
			Grants: ipc.Grants{Secrets: grant.Secrets, KV: grant.KV, Channels: grant.Channels},
		},
	}
	if inst.precompiled {
		spec.Wasm.CacheDir = s.skills.cacheDir
	}
	for _, h := range grant.HTTP {
		spec.Wasm.Grants.HTTP = append(spec.Wasm.Grants.HTTP, h.Host.String())
	}
	rec.Tier = "A"
	rec.Limits.TimeoutMS, rec.Limits.MaxOutput = spec.TimeoutMS, spec.MaxOutput
	rec.Limits.Fuel, rec.Limits.FuelSchedule = fuel, fmt.Sprintf("stockade-fuel/%d", inst.info.Schedule)
	s.calls.Add(1)
	log.Info("call", "decision", "allow", "tier", "A", "skill", id+"@"+rs.Version, "fuel", fuel)
	out, spawned, err := s.executeWasm(ctx, log, spec, inst.code, id, grant)
	if err != nil {
		var e *ipc.Error
		if errors.As(err, &e) {
			return nil, e
		}
		log.Warn("call failed", "err", err)
		return nil, ipc.Errorf(ipc.ClassInternal, "executor failed")
	}
	out.Durations.Spawn = spawned.Microseconds()
	out.Wasm.Skill, out.Wasm.Statement = id+"@"+rs.Version, rs.Digest
	out.Wasm.Instrumented, out.Wasm.FuelSchedule = inst.digest, inst.info.Schedule
	return out, nil
}

// narrow keeps of g only what the call asked for: the hosts, secrets and
// channels it names, and the key-value store if it asks for it.
func narrow(g hostcall.Grant, asked *ipc.Grants) hostcall.Grant {
	out := hostcall.Grant{KV: g.KV && asked.KV}
	for _, h := range g.HTTP {
		if slices.Contains(asked.HTTP, h.Host.String()) {
			out.HTTP = append(out.HTTP, h)
		}
	}
	for _, name := range g.Secrets {
		if slices.Contains(asked.Secrets, name) {
			out.Secrets = append(out.Secrets, name)
		}
	}
	for _, ch := range g.Channels {
		if slices.Contains(asked.Channels, ch) {
			out.Channels = append(out.Channels, ch)
		}
	}
	return out
}

// executeWasm hands the call to a warm executor prepared for this module
// or, without one, to a new executor with the module, performs the host
// requests the guest makes until the outcome comes, and has an executor
// made warm for the module's next call.
func (s *Server) executeWasm(ctx context.Context, log *slog.Logger, spec *ipc.ExecSpec, code []byte, skillID string, grant hostcall.Grant) (*ipc.Outcome, time.Duration, error) {
	// The whole call, warm or cold, ends by this deadline whatever the
	// executor does (it could keep the call open with host requests).
	wait := time.Duration(spec.TimeoutMS)*time.Millisecond + 15*time.Second
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	defer s.keepWarm(log, spec.Wasm.Instrumented, code, spec.Wasm.CacheDir)
	if w := s.skills.takeWarm(spec.Wasm.Instrumented); w != nil {
		out, err := s.runWasmOn(ctx, log, w.c, 2, spec, nil, skillID, grant, wait)
		w.cancel()
		if err == nil || !errors.Is(err, errWarmGone) {
			return out, 0, err
		}
		log.Warn("warm executor gone; starting one", "err", err)
	}
	c, spawned, err := s.openExecutor(ctx, spec)
	if err != nil {
		return nil, spawned, err
	}
	defer c.Close()
	out, err := s.runWasmOn(ctx, log, c, 1, spec, code, skillID, grant, wait)
	return out, spawned, err
}

// errWarmGone: a warm executor's socket failed before it took the call.
var errWarmGone = errors.New("warm executor gone")

// runWasmOn sends the exec request (with the module unless the executor is
// prepared) and serves the executor until the outcome.
func (s *Server) runWasmOn(ctx context.Context, log *slog.Logger, c *ipc.Conn, id uint64, spec *ipc.ExecSpec, code []byte, skillID string, grant hostcall.Grant, wait time.Duration) (*ipc.Outcome, error) {
	var files []*os.File
	if code != nil {
		mf, err := ipc.SealedMemfd("skill-module", code)
		if err != nil {
			return nil, err
		}
		defer mf.Close()
		files = []*os.File{mf}
	}
	if err := c.SendFiles(id, ipc.KindExec, spec, ipc.ExecSpecFrameMax, files); err != nil {
		if code == nil {
			return nil, fmt.Errorf("%w: %v", errWarmGone, err)
		}
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	// Host requests and the outcome (output, channel messages, logs).
	c.SetReadMax(max(ipc.HostFrameMax, s.cfg.OutputFrameMax+ipc.WasmOutcomeExtra))
	// The executor checks the grants and counts the host calls; a
	// request it should have refused means it no longer does (the guest
	// took it over): the call ends, it is not "handled".
	hostCalls := 0
	for {
		m, err := c.Recv(wait)
		if err != nil {
			return nil, err
		}
		switch {
		case m.Kind == ipc.KindHost && m.ID >= ipc.HostRequestIDBase:
			var hr ipc.HostRequest
			if err := m.Decode(&hr); err != nil {
				return nil, ipc.Errorf(ipc.ClassCapabilityDenied, "malformed host request")
			}
			if hostCalls++; hostCalls > spec.Wasm.MaxHostCalls {
				return nil, ipc.Errorf(ipc.ClassQuotaExceeded, "host calls over %d", spec.Wasm.MaxHostCalls)
			}
			if !granted(grant, &hr) {
				log.Warn("closing a Tier A executor: a host request outside the grants", "op", hr.Op)
				return nil, ipc.Errorf(ipc.ClassCapabilityDenied, "the skill used a capability it was not granted")
			}
			res := s.hostRequest(ctx, log, skillID, grant, &hr)
			if err := c.Send(m.ID, ipc.KindHost, res, ipc.HostFrameMax); err != nil {
				if errors.Is(err, ipc.ErrFrameTooLarge) { // a result the executor could not take
					err = c.Send(m.ID, ipc.KindHost, ipc.HostResult{Code: ipc.HostQuota}, ipc.HostFrameMax)
				}
				if err != nil {
					return nil, err
				}
			}
		case m.ID == id && m.Kind == ipc.KindError:
			return nil, m.Err()
		case m.ID == id && m.Kind == ipc.KindExec:
			var out ipc.Outcome
			if err := m.Decode(&out); err != nil {
				return nil, err
			}
			if len(out.Stdout)+len(out.Stderr) > int(spec.MaxOutput) {
				return nil, errors.New("executor returned more output than the quota")
			}
			if err := checkWasmOutcome(&out, spec, hostCalls); err != nil {
				return nil, err
			}
			return &out, nil
		default:
			return nil, fmt.Errorf("unexpected %q (id %d) from a Tier A executor", m.Kind, m.ID)
		}
	}
}

// takeWarm hands out a warm executor prepared for digest, if there is one.
func (h *skillHost) takeWarm(digest string) *warmExecutor {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.warm[digest]
	if len(ws) == 0 {
		return nil
	}
	w := ws[0]
	h.warm[digest] = ws[1:]
	return w
}

// keepWarm prepares an executor for digest in the background, unless
// warmPerModule wait or are being prepared; past warmMax it drops the
// oldest other one.
func (s *Server) keepWarm(log *slog.Logger, digest string, code []byte, cacheDir string) {
	h := s.skills
	h.mu.Lock()
	if h.warming[digest]+len(h.warm[digest]) >= warmPerModule {
		h.mu.Unlock()
		return
	}
	h.warming[digest]++
	h.mu.Unlock()
	go func() {
		w, err := s.prepareWarm(digest, code, cacheDir)
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.warming[digest]--; h.warming[digest] <= 0 {
			delete(h.warming, digest)
		}
		if err != nil {
			log.Warn("preparing a warm executor", "err", err)
			return
		}
		total := 0
		for _, ws := range h.warm {
			total += len(ws)
		}
		for d, ws := range h.warm {
			if total < warmMax {
				break
			}
			if d != digest && len(ws) > 0 {
				ws[0].cancel()
				h.warm[d] = ws[1:]
				total--
			}
		}
		h.warm[digest] = append(h.warm[digest], w)
	}()
}

// prepareWarm gets an executor and has it confine itself and compile the
// module; it then waits for its one call.
func (s *Server) prepareWarm(digest string, code []byte, cacheDir string) (*warmExecutor, error) {
	ctx, cancel := context.WithCancel(context.Background())
	c, _, err := s.openExecutor(ctx, &ipc.ExecSpec{TimeoutMS: 5000})
	if err != nil {
		cancel()
		return nil, err
	}
	mf, err := ipc.SealedMemfd("skill-module", code)
	if err != nil {
		cancel()
		return nil, err
	}
	defer mf.Close()
	var ready ipc.Empty
	got, err := c.CallFiles(1, ipc.KindPrepare, ipc.WasmModule{Instrumented: digest, CacheDir: cacheDir}, ipc.ControlFrameMax, []*os.File{mf}, &ready, 2*time.Minute)
	if err != nil || len(got) > 0 {
		for _, f := range got {
			f.Close()
		}
		cancel()
		return nil, fmt.Errorf("prepare: %v (%d descriptors)", err, len(got))
	}
	return &warmExecutor{c: c, cancel: cancel, digest: digest}, nil
}

// granted reports whether a host request names an operation and a
// capability of the call's grants (an address refused by the SSRF rules is
// still answered with a code: the executor cannot know it beforehand).
func granted(g hostcall.Grant, hr *ipc.HostRequest) bool {
	switch hr.Op {
	case "http":
		return slices.ContainsFunc(g.HTTP, func(h hostcall.HostGrant) bool { return h.Host.String() == hr.Name })
	case "secret":
		return slices.Contains(g.Secrets, hr.Name)
	case "kv_get", "kv_put", "kv_delete", "kv_list":
		return g.KV
	}
	return false
}

// checkWasmOutcome refuses an outcome no honest executor sends, and
// replaces what the broker knows better than the executor: which release
// and module ran, under which fuel schedule.
func checkWasmOutcome(out *ipc.Outcome, spec *ipc.ExecSpec, hostCalls int) error {
	w := out.Wasm
	switch {
	case len(out.Stdout)+len(out.Stderr) > int(spec.MaxOutput):
		return errors.New("executor returned more output than the quota")
	case w == nil:
		return errors.New("a Tier A executor's outcome without its receipt")
	case w.FuelUsed > spec.Wasm.Fuel+uint64(ipc.HostFrameMax) || w.HostCalls < hostCalls:
		return fmt.Errorf("a Tier A receipt that does not add up: fuel %d of %d, %d host calls of %d seen", w.FuelUsed, spec.Wasm.Fuel, w.HostCalls, hostCalls)
	}
	switch out.Status {
	case ipc.StatusOK, ipc.StatusQuotaExceeded, ipc.StatusTimedOut, ipc.StatusTrap:
	default:
		return fmt.Errorf("a Tier A outcome with status %q", out.Status)
	}
	out.Tier = "A"
	return nil
}

// hostRequest performs one capability use for skillID within grant. The
// executor checked the grant; it is checked again here.
func (s *Server) hostRequest(ctx context.Context, log *slog.Logger, skillID string, grant hostcall.Grant, hr *ipc.HostRequest) ipc.HostResult {
	var (
		data []byte
		err  error
	)
	switch hr.Op {
	case "http":
		data, err = s.skills.http.Do(ctx, grant, hr.Data)
	case "secret":
		data, err = s.skills.secrets.Get(grant, skillID, hr.Name)
	case "kv_get", "kv_put", "kv_delete", "kv_list":
		var kv *hostcall.KV
		if kv, err = s.skills.store(); err != nil {
			log.Error("key-value store", "err", err)
			err = hostcall.ErrUnavailable
			break
		}
		switch hr.Op {
		case "kv_get":
			data, err = kv.Get(ctx, skillID, hr.Key)
		case "kv_put":
			err = kv.Put(ctx, skillID, hr.Key, hr.Data)
		case "kv_delete":
			err = kv.Delete(ctx, skillID, hr.Key)
		case "kv_list":
			var keys [][]byte
			if keys, err = kv.List(ctx, skillID, hr.Key); err == nil {
				names := make([]string, len(keys))
				for i, k := range keys {
					names[i] = string(k)
				}
				data, err = json.Marshal(names)
			}
		}
	default:
		err = hostcall.ErrInvalid
	}
	if err == nil {
		return ipc.HostResult{Data: data}
	}
	return ipc.HostResult{Code: hostCode(err)}
}

// hostCode maps hostcall's errors to the host ABI's codes.
func hostCode(err error) int64 {
	for _, m := range []struct {
		err  error
		code int64
	}{
		{hostcall.ErrDenied, ipc.HostDenied}, {hostcall.ErrNotFound, ipc.HostNotFound}, {hostcall.ErrQuota, ipc.HostQuota},
		{hostcall.ErrInvalid, ipc.HostInvalid}, {hostcall.ErrUnavailable, ipc.HostUnavailable},
	} {
		if errors.Is(err, m.err) {
			return m.code
		}
	}
	return ipc.HostUnavailable
}
