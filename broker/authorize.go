package broker

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/policy"
)

// principalOf maps a peer uid to the principal Cedar sees. The uid comes from
// the kernel; nothing in a message can change it. A uid listed in [[agent]]
// is that agent; otherwise, in multi-uid mode, Agent::"uid-N" in
// Group::"local", and in single-user mode the invoking uid is
// Agent::"local" in Group::"local".
func (s *Server) principalOf(uid uint32) policy.Principal {
	for _, a := range s.cfg.Agents {
		if a.UID == uid {
			return policy.Principal{Name: a.Name, UID: uid, Groups: a.Groups}
		}
	}
	if s.mode == ModeMultiUID {
		// Root or a member of an agent group (mayCall let it in): a local
		// user the operator admitted, named by uid.
		return policy.Principal{Name: fmt.Sprintf("uid-%d", uid), UID: uid, Groups: []string{"local"}}
	}
	if uid == uint32(os.Getuid()) {
		return policy.Principal{Name: "local", UID: uid, Groups: []string{"local"}}
	}
	return policy.Principal{Name: fmt.Sprintf("uid-%d", uid), UID: uid}
}

// callFacts is what a planned call tells the policy.
type callFacts struct {
	tool      string
	iso       *Isolation
	program   string
	argv      []string
	agentArgs []string
	workspace string
	egress    bool
}

// authorize decides a planned call with Cedar, then admits it against its
// budgets (charged only when permitted). release ends the call's in-flight
// charge. Any error, malformed request or evaluation failure is a denial.
func (s *Server) authorize(peer ipc.Cred, req *ipc.CallRequest, f *callFacts) (policies []string, release func(), err error) {
	now := time.Now()
	preq, err := s.policyRequest(peer, req, f, now)
	if err != nil {
		return nil, nil, ipc.Errorf(ipc.ClassDenied, "the call cannot be expressed to the policy: %v", err)
	}
	d := s.policy.Decide(preq)
	if !d.Allowed() {
		s.log.Info("denied by policy", "peer_uid", peer.UID, "tool", req.Tool, "decision", d)
		e := ipc.Errorf(ipc.ClassDenied, "denied by policy")
		e.Policies = d.Policies()
		return nil, nil, e
	}
	release, err = s.budget.admit(req.RunID, peer.UID, now)
	return d.Policies(), release, err
}

func (s *Server) policyRequest(peer ipc.Cred, req *ipc.CallRequest, f *callFacts, now time.Time) (*policy.Request, error) {
	caps := []policy.Capability{policy.ProcessExec}
	if f.iso.Workspace == "rw" {
		caps = append(caps, policy.FSWrite)
	}
	if isInterpreter(f.program) {
		caps = append(caps, policy.InterpreterRun)
	}
	if f.egress {
		caps = append(caps, policy.NetworkEgress)
	}
	var toolCaps []policy.Capability
	for _, c := range f.iso.Capabilities {
		toolCaps = append(toolCaps, policy.Capability(c))
	}
	ws, err := policy.ResolvePath(f.workspace)
	if err != nil {
		return nil, err
	}
	prog, err := policy.ResolvePath(f.program)
	if err != nil {
		return nil, err
	}
	var paths []policy.Path
	for _, a := range f.agentArgs {
		for _, p := range pathCandidates(a) {
			rp, err := policy.ResolvePathIn(ws, p)
			if err != nil {
				return nil, err
			}
			paths = append(paths, rp)
		}
	}
	var hosts []policy.Host
	for _, h := range hostsIn(f.agentArgs) {
		ph, err := policy.ParseHost(h)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(hosts, ph) {
			hosts = append(hosts, ph)
		}
	}
	return &policy.Request{
		Principal: s.principalOf(peer.UID),
		Tool: policy.Tool{
			Name: f.tool, Kind: policy.KindProcess, Tier: policy.Tier(f.iso.Tier),
			Capabilities: toolCaps, Egress: policy.Egress(f.iso.Egress),
		},
		Actions: caps,
		Context: policy.Context{
			RunID: req.RunID, CallsUsed: s.budget.callsUsed(req.RunID), Tier: policy.Tier(f.iso.Tier),
			EgressHosts: hosts, Workspace: ws, Paths: paths, Program: prog,
			Argv: f.argv, Now: now,
			Budget: s.budget.snapshot(req.RunID, peer.UID, now),
		},
	}, nil
}

// ReloadPolicy re-reads the policy directory; on failure the set in force
// stays and the error says why.
func (s *Server) ReloadPolicy() error {
	return s.policy.Reload(s.cfg.PolicyDir)
}
