package broker

import (
	"os"
	"path/filepath"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/seccomp"
)

// ProbeHost describes what this host gives native calls. The broker runs it
// at start-up, before it restricts itself.
func ProbeHost(bw Bwrap) ipc.HostSandbox {
	h := ipc.HostSandbox{BwrapVersion: bw.Version, BwrapProblem: bw.Reason}
	if !bw.Usable {
		h.BwrapVersion = ""
	}
	if v, err := llsys.LandlockGetABIVersion(); err == nil {
		h.LandlockABI = v
	}
	for _, name := range seccomp.Names() {
		if !strings.HasPrefix(name, "executor") {
			continue
		}
		if p, err := seccomp.Named(name); err == nil {
			if prog, err := p.Compile(seccomp.NativeArch()); err == nil {
				h.Seccomp = append(h.Seccomp, name+" "+prog.Digest())
			}
		}
	}
	// The executor makes a call's cgroup under its own in the v1 pids
	// hierarchy: can this uid make one there?
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "pids" {
				dir, err := os.MkdirTemp(filepath.Join("/sys/fs/cgroup/pids", parts[2]), "stockade-probe-")
				if err == nil {
					h.Cgroups = os.Remove(dir) == nil
				}
			}
		}
	}
	return h
}
