package broker

import (
	"os"

	"github.com/stockade-dev/stockade/ipc"
)

// ProbeHost describes what this host gives native calls: Seatbelt when
// sandbox-exec is there; no Landlock, bwrap or cgroups on macOS.
func ProbeHost(bw Bwrap) ipc.HostSandbox {
	h := ipc.HostSandbox{BwrapProblem: "not on macOS"}
	if _, err := os.Stat("/usr/bin/sandbox-exec"); err == nil {
		h.Seccomp = []string{"seatbelt (sandbox-exec)"}
	}
	return h
}
