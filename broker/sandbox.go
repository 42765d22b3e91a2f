package broker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

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
//
// scratch, in multi-uid mode, is the call's directory the executor will
// make: paths inside it do not exist yet and are kept as they are.
func sandboxFor(iso *Isolation, bw Bwrap, program, workspace, tmp, scratch string, egress bool) (*ipc.SandboxSpec, error) {
	pending := func(p string) bool { return scratch != "" && strings.HasPrefix(p, scratch+"/") }
	ro := append([]string{}, systemReadOnly...)
	if egress {
		ro = append(ro, egressReadOnly...)
	}
	ro = append(ro, iso.ReadOnly...)
	ro = append(ro, program)
	rw := append([]string{}, systemReadWrite...)
	var roLater, rwLater []string
	add := func(list, later *[]string, p string) {
		if pending(p) {
			*later = append(*later, p)
		} else {
			*list = append(*list, p)
		}
	}
	add(&rw, &rwLater, tmp)
	if iso.Workspace == "ro" {
		add(&ro, &roLater, workspace)
	} else {
		add(&rw, &rwLater, workspace)
	}
	ro, rw = append(existing(ro...), roLater...), append(existing(rw...), rwLater...)
	sb := &ipc.SandboxSpec{
		MinLandlockABI: iso.LandlockMinABI,
		ReadOnly:       ro,
		ReadWrite:      rw,
		Bwrap:          "off",
		AllowHardlinks: iso.WorkspaceHardlinks == "allow",
	}
	switch {
	case iso.Bwrap == "off":
	case bw.Usable:
		sb.Bwrap, sb.BwrapVersion = "required", bw.Version
	case iso.Bwrap == "required":
		return nil, ipc.Errorf(ipc.ClassSandboxUnavailable, "this tool requires bubblewrap, which is not usable here")
	}
	return sb, nil
}

// bwrapPath is where bubblewrap must be: never looked up on a PATH.
const bwrapPath = "/usr/bin/bwrap"

// Bwrap is what the broker's start-up probe found out about bubblewrap.
type Bwrap struct {
	Usable  bool
	Version string
	// Why it is not usable, for the log and status.
	Reason string
}

// ProbeBwrap checks that bubblewrap is installed and can make, here, the
// namespaces a Tier C call asks for (user namespaces may be forbidden by the
// host or a container). The broker probes once at start-up; a tool that
// requires bwrap is refused when the probe failed, and a call whose bwrap
// then fails is refused too, never run without it.
func ProbeBwrap() Bwrap {
	out, err := exec.Command(bwrapPath, "--version").Output()
	if err != nil {
		return Bwrap{Reason: fmt.Sprintf("%s: %v", bwrapPath, err)}
	}
	version := strings.TrimSpace(strings.TrimPrefix(string(out), "bubblewrap "))
	probe := exec.Command(bwrapPath, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
		"--unshare-uts", "--unshare-cgroup", "--die-with-parent", "--new-session", "--disable-userns",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--", "/usr/bin/true")
	if out, err := probe.CombinedOutput(); err != nil {
		return Bwrap{Version: version, Reason: fmt.Sprintf("bwrap cannot make namespaces here: %v: %s", err, strings.TrimSpace(string(out)))}
	}
	return Bwrap{Usable: true, Version: version}
}

// systemTrees may never be a workspace, nor be inside one.
var systemTrees = []string{"/proc", "/sys", "/dev", "/boot", "/etc", "/usr", "/bin", "/sbin",
	"/lib", "/lib32", "/lib64", "/libx32", "/run", "/var/run", "/var/lib"}

// overlaps reports whether a and b are the same tree or one holds the other.
func overlaps(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/") || a == "/" || b == "/"
}

// checkWorkspace refuses a workspace (resolved, absolute) that a target must
// never be able to write: "/", a system directory, anything overlapping
// Stockade's own directories (the attestation key and log live in the state
// directory; the executor binary in the binary directory), and anything
// outside the configured roots.
func checkWorkspace(ws string, protected, roots []string) error {
	if ws == "/" {
		return ipc.Errorf(ipc.ClassInvalidInput, "the workspace may not be /")
	}
	for _, t := range systemTrees {
		if overlaps(ws, t) {
			return ipc.Errorf(ipc.ClassInvalidInput, "the workspace may not be or hold a system directory (%s)", t)
		}
	}
	for _, p := range protected {
		if p != "" && overlaps(ws, p) {
			return ipc.Errorf(ipc.ClassInvalidInput, "the workspace may not overlap Stockade's own directories")
		}
	}
	if len(roots) == 0 {
		return nil
	}
	for _, r := range roots {
		if ws == r || strings.HasPrefix(ws, r+"/") {
			return nil
		}
	}
	return ipc.Errorf(ipc.ClassInvalidInput, "the workspace is outside the configured workspace roots")
}
