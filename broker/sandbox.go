package broker

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/stockade-dev/stockade/ipc"
)

// Read-only paths every Tier C target gets. Directories that are symlinks
// (merged /usr) resolve to what they point at.
var (
	systemReadOnly = []string{
		"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
		// A few /etc files the loader and libc read; never all of /etc.
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
		"/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/hosts", "/etc/alternatives",
		"/proc", "/dev/zero", "/dev/urandom", "/dev/random",
	}
	egressReadOnly = []string{
		"/etc/resolv.conf", "/etc/ssl", "/etc/ca-certificates", "/etc/gai.conf",
		"/etc/services", "/etc/protocols",
	}
	systemReadWrite = []string{"/dev/null", "/dev/full"}
)

// existing resolves each path through symlinks and keeps those that exist,
// once each.
func existing(paths ...string) []string {
	var out []string
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if _, err := os.Stat(real); err == nil && !slices.Contains(out, real) {
			out = append(out, real)
		}
	}
	return out
}

// sandboxFor builds the Tier C sandbox of a call: system paths and the tool's
// extra paths read-only, the program itself readable, the workspace as the
// tool says, the call's private temporary directory writable.
func sandboxFor(iso *Isolation, program, workspace, tmp string, egress bool) *ipc.SandboxSpec {
	ro := append([]string{}, systemReadOnly...)
	if egress {
		ro = append(ro, egressReadOnly...)
	}
	ro = append(ro, iso.ReadOnly...)
	ro = append(ro, program)
	rw := append([]string{tmp}, systemReadWrite...)
	if iso.Workspace == "ro" {
		ro = append(ro, workspace)
	} else {
		rw = append(rw, workspace)
	}
	return &ipc.SandboxSpec{
		MinLandlockABI: iso.LandlockMinABI,
		ReadOnly:       existing(ro...),
		ReadWrite:      existing(rw...),
		Bwrap:          iso.Bwrap,
	}
}
