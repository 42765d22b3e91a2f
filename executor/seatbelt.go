package executor

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/stockade-dev/stockade/ipc"
)

// sandboxExecPath is macOS's Seatbelt launcher: always this absolute path,
// never looked up on a PATH.
const sandboxExecPath = "/usr/bin/sandbox-exec"

// seatbeltProfile renders the Seatbelt (SBPL) profile of a Tier C call on
// macOS: deny by default; read (and execute) the system paths and the spec's
// read-only paths; read and write the spec's writable paths (the workspace and
// the call's temporary directory); network only when egress is allowed;
// signals only within the sandbox. Parent directories of allowed paths get
// metadata reads only, so that paths resolve without their siblings being
// listed. A path that SBPL cannot hold safely is an error.
func seatbeltProfile(sb *ipc.SandboxSpec, egress bool) (string, error) {
	var b strings.Builder
	b.WriteString(`(version 1)
(deny default)
(import "system.sb")
(allow process-fork)
(allow process-exec)
(allow signal (target same-sandbox))
(allow sysctl-read)
(allow ipc-posix-shm-read-data ipc-posix-shm-read-metadata)
`)
	system := []string{"/usr", "/bin", "/sbin", "/System", "/Library/Apple", "/private/etc", "/dev/urandom", "/dev/random", "/dev/zero"}
	read := append(append([]string{}, system...), sb.ReadOnly...)
	// Never /dev/tty: a terminal is where TIOCSTI injects keystrokes.
	write := append([]string{"/dev/null"}, sb.ReadWrite...)
	if err := rule(&b, "file-read* file-map-executable", append(append([]string{}, read...), write...)); err != nil {
		return "", err
	}
	if err := rule(&b, "file-write* file-ioctl", write); err != nil {
		return "", err
	}
	var parents []string
	for _, p := range append(append([]string{}, read...), write...) {
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			if !slices.Contains(parents, d) {
				parents = append(parents, d)
			}
		}
	}
	slices.Sort(parents)
	parents = append([]string{"/"}, parents...)
	b.WriteString("(allow file-read-metadata\n")
	for _, p := range parents {
		q, err := sbplString(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "  (literal %s)\n", q)
	}
	b.WriteString(")\n")
	if egress {
		b.WriteString("(allow network-outbound)\n(allow network-inbound (local ip))\n(allow system-socket)\n")
	} else {
		b.WriteString("; no egress: every network operation stays denied\n")
	}
	return b.String(), nil
}

// rule writes one allow rule for subpaths.
func rule(b *strings.Builder, ops string, paths []string) error {
	fmt.Fprintf(b, "(allow %s\n", ops)
	for _, p := range paths {
		q, err := sbplString(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "  (subpath %s)\n", q)
	}
	b.WriteString(")\n")
	return nil
}

// sbplString quotes an absolute, clean path for SBPL. Control characters
// and non-absolute paths are refused rather than escaped.
func sbplString(p string) (string, error) {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return "", ipc.Errorf(ipc.ClassInvalidInput, "sandbox path %q is not absolute and clean", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", ipc.Errorf(ipc.ClassInvalidInput, "sandbox path %q holds a control character", p)
		}
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"`, nil
}
