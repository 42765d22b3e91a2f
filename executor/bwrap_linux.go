package executor

import (
	"os"
	"strconv"
	"strings"

	"github.com/stockade-dev/stockade/ipc"
)

// bwrapPath is where bubblewrap must be: never looked up on a PATH.
var bwrapPath = "/usr/bin/bwrap"

// stage2InSandbox is where the executor binary is bound inside bwrap's root.
const stage2InSandbox = "/run/stockade/stockade-exec"

// systemDirs are bound read-only (or recreated as the host's symlinks) into
// bwrap's root. Never `--ro-bind / /`.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// bwrapArgs is the bubblewrap command line for one call: new user, pid, ipc,
// uts and cgroup namespaces, and a network namespace unless egress is
// allowed; a minimal root with the system directories read-only, a few /etc
// files, minimal /dev and /proc, a private /tmp, the executor binary to run as
// stage 2, and the spec's paths bound as the spec says (the workspace the only
// writable one besides the call's scratch). seccompFD, when not -1, is the
// filter bwrap installs before it execs stage 2.
func bwrapArgs(sb *ipc.SandboxSpec, egress bool, self, dir string, seccompFD int) []string {
	a := []string{
		"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
	}
	if !egress {
		a = append(a, "--unshare-net")
	}
	a = append(a,
		"--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL", "--disable-userns",
	)
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	bound := map[string]bool{"/usr": true, "/proc": true, "/dev": true, "/tmp": true}
	for _, p := range sb.ReadOnly {
		if !bound[p] && !under(p, "/usr", "/proc", "/dev") {
			a = append(a, "--ro-bind", p, p)
			bound[p] = true
		}
	}
	for _, p := range sb.ReadWrite {
		if !bound[p] && !under(p, "/dev") {
			a = append(a, "--bind", p, p)
			bound[p] = true
		}
	}
	a = append(a, "--ro-bind", self, stage2InSandbox, "--chdir", dir)
	if seccompFD >= 0 {
		a = append(a, "--seccomp", strconv.Itoa(seccompFD))
	}
	return append(a, "--", stage2InSandbox, Stage2Arg)
}

// under reports whether p is one of roots or beneath one.
func under(p string, roots ...string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}
