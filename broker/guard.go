package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/stockade-dev/stockade/ipc"
)

// interpreterName matches the base names of shells, script interpreters and
// launchers that run other programs, versioned names included (python3.12,
// perl5.36). It is matched on the resolved executable, so a symlink named
// "listing" that points at bash is still bash.
var interpreterName = regexp.MustCompile(`^(` +
	`sh|bash|dash|ash|zsh|ksh|ksh93|mksh|pdksh|csh|tcsh|fish|rbash|yash|elvish|nu|xonsh|` +
	`busybox|toybox|` +
	`python|python[0-9][0-9.]*|pypy[0-9.]*|perl|perl[0-9][0-9.]*|ruby[0-9.]*|irb|node|nodejs|deno|bun|` +
	`php[0-9.]*|lua[0-9.]*|luajit|tclsh[0-9.]*|wish[0-9.]*|expect|guile[0-9.]*|racket|sbcl|clisp|` +
	`awk|gawk|mawk|nawk|busybox-awk|jshell|java|rscript|Rscript|R|julia|ghci|runghc|osascript|` +
	`env|nohup|xargs|timeout|nice|ionice|setsid|sudo|su|doas|runuser|pkexec|chroot|unshare|nsenter|` +
	`setpriv|setarch|linux32|linux64|taskset|chrt|flock|script|watch|stdbuf|strace|ltrace|gdb|` +
	`find|ssh|make|gmake|vim|vi|nvim|emacs|less|more|man|git` +
	`)$`)

// isInterpreter reports whether the resolved executable is on the denylist.
func isInterpreter(resolved string) bool {
	return interpreterName.MatchString(filepath.Base(resolved))
}

// errOutside is wrapped by every workspace scoping refusal.
var errOutside = errors.New("path outside the workspace")

// urlScheme matches a URL's scheme prefix.
var urlScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// pathCandidates returns the parts of an argument that name paths: the whole
// argument, the value of --opt=value, the value of -Xvalue when it looks like
// a path, and the path of a file:// URL. Other URLs are not paths.
func pathCandidates(arg string) []string {
	var out []string
	v := arg
	if strings.HasPrefix(v, "--") {
		_, after, ok := strings.Cut(v, "=")
		if !ok {
			return nil
		}
		v = after
	} else if len(v) > 2 && v[0] == '-' && v[1] != '-' {
		// -Cpath, -o/out: a short option with an attached path.
		rest := v[2:]
		if strings.HasPrefix(rest, "/") || strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "~") {
			v = rest
		} else {
			return nil
		}
	}
	if strings.HasPrefix(strings.ToLower(v), "file://") {
		u, err := url.Parse(v)
		if err != nil {
			return []string{"/"} // unparseable file URL: treat as outside
		}
		return append(out, u.Path)
	}
	if urlScheme.MatchString(v) {
		return nil
	}
	if looksLikePath(v) {
		out = append(out, v)
	}
	return out
}

func looksLikePath(v string) bool {
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || v == "." || v == ".." ||
		strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || strings.Contains(v, "/")
}

// scopeArgs refuses arguments that name paths outside the workspace: `..`
// anywhere, `~`, and absolute or relative paths that resolve (symlinks
// followed, for the part that exists) outside it. It is an early, friendly
// refusal; Landlock and the mount namespace are the boundary that holds when a
// path is swapped after this check.
func scopeArgs(args []string, workspace string) error {
	for i, a := range args {
		cands := pathCandidates(a)
		// A bare word is a path too when it names something in the
		// workspace (it may be a symlink planted there).
		if len(cands) == 0 && a != "" && !strings.HasPrefix(a, "-") {
			if _, err := os.Lstat(filepath.Join(workspace, a)); err == nil {
				cands = []string{a}
			}
		}
		for _, p := range cands {
			if err := inside(p, workspace); err != nil {
				return ipc.Errorf(ipc.ClassInvalidInput, "argument %d: %v", i+1, err)
			}
		}
	}
	return nil
}

func inside(p, workspace string) error {
	if strings.HasPrefix(p, "~") {
		return fmt.Errorf("%w: %q (home directory)", errOutside, p)
	}
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			return fmt.Errorf("%w: %q contains ..", errOutside, p)
		}
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(workspace, p)
	}
	real, err := resolveExisting(filepath.Clean(abs))
	if err != nil {
		return fmt.Errorf("%w: %q: %v", errOutside, p, err)
	}
	if real != workspace && !strings.HasPrefix(real, workspace+"/") {
		return fmt.Errorf("%w: %q", errOutside, p)
	}
	return nil
}

// resolveExisting resolves symlinks in the longest existing prefix of p and
// appends the rest, so that a path to a file not yet made is still checked
// through the directories it would be made in.
func resolveExisting(p string) (string, error) {
	rest := ""
	cur := p
	for {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Egress modes of a tool.
const (
	EgressNone      = "none"      // no network at all
	EgressPreflight = "preflight" // hosts found in arguments must be allowed (advisory)
	EgressStrict    = "strict"    // the kernel enforces the allow-list
)

// hostsIn finds the hosts an argument list names: URLs, host:port, and the
// values of --host=-style options. Hosts are canonical: lower case, no
// trailing dot, IP literals without brackets.
func hostsIn(args []string) []string {
	var hosts []string
	for _, a := range args {
		v := a
		if strings.HasPrefix(v, "-") {
			_, after, ok := strings.Cut(v, "=")
			if !ok {
				continue
			}
			v = after
		}
		if urlScheme.MatchString(v) {
			if u, err := url.Parse(v); err == nil && u.Hostname() != "" {
				hosts = append(hosts, canonicalHost(u.Hostname()))
			}
			continue
		}
		if h, port, err := net.SplitHostPort(v); err == nil && plausibleHost(h) && isPort(port) {
			hosts = append(hosts, canonicalHost(h))
			continue
		}
		if strings.HasPrefix(a, "--") && strings.Contains(strings.ToLower(a), "host") && plausibleHost(v) {
			hosts = append(hosts, canonicalHost(v))
		}
	}
	return hosts
}

// plausibleHost reports whether h could name a host: an IP literal, or
// letters, digits, '-', '_' and '.' (so that `a=b; c:d` in a script is not
// mistaken for host:port).
func plausibleHost(h string) bool {
	h = strings.Trim(h, "[]")
	if h == "" {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func isPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	for _, r := range p {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func canonicalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

// hostAllowed matches a host against an allow-list: an exact name or IP, or
// a suffix rule with a leading dot (".example.com" allows any subdomain of
// example.com, not example.com itself).
func hostAllowed(host string, allow []string) bool {
	for _, rule := range allow {
		rule = canonicalHost(rule)
		if strings.HasPrefix(rule, ".") {
			if strings.HasSuffix(host, rule) && len(host) > len(rule) {
				return true
			}
			continue
		}
		if host == rule {
			return true
		}
	}
	return false
}

// preflight checks the hosts an argument list names against allow.
func preflight(args, allow []string) error {
	for _, h := range hostsIn(args) {
		if !hostAllowed(h, allow) {
			return ipc.Errorf(ipc.ClassCapabilityDenied, "host %q is not on the tool's egress allow-list", h)
		}
	}
	return nil
}

// dangerousEnv names variables a tool's configuration may never set: they
// make the dynamic loader or an interpreter run code the tool did not name.
var dangerousEnv = regexp.MustCompile(`^(LD_.*|DYLD_.*|GCONV_PATH|GETCONF_DIR|HOSTALIASES|LOCALDOMAIN|LOCPATH|MALLOC_.*|NLSPATH|RESOLV_HOST_CONF|RES_OPTIONS|TMPDIR|TZDIR|BASH_ENV|ENV|SHELLOPTS|PS4|IFS|PYTHON.*|PERL5.*|PERLLIB|RUBYOPT|RUBYLIB|NODE_OPTIONS|NODE_PATH|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|GIT_.*|PATH|HOME)$`)
