package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
)

// Values that policies compare must be canonical before Cedar sees them:
// `like "/srv/ws/*"` also matches "/srv/ws/../../etc/passwd", and
// "Example.COM." is not "example.com" to a string comparison. Path and Host
// can only be made by the functions below, so a Request cannot carry a value
// that was not canonicalised.

// ErrPath and ErrHost are wrapped by the errors of ResolvePath and ParseHost.
var (
	ErrPath = errors.New("path cannot be resolved")
	ErrHost = errors.New("not a host name or IP address")
)

const (
	maxPathLen     = 4096
	maxSymlinks    = 40 // Linux's MAXSYMLINKS
	maxHostLen     = 253
	maxHostLabel   = 63
	maxHostLiteral = 64 // an IPv6 literal in brackets fits
)

// Path is an absolute path with every symbolic link resolved, made by
// ResolvePath. The zero Path means "none" (a call without a workspace).
//
// A Path is a snapshot: the file system can change after it was resolved.
// Policy sees where a path pointed when the call was decided; the executor's
// sandbox (Landlock, bind mounts) is what keeps the running call inside its
// workspace.
type Path struct{ p string }

// String returns the resolved path, or "" for the zero Path.
func (p Path) String() string { return p.p }

// IsZero reports whether p is the zero Path.
func (p Path) IsZero() bool { return p.p == "" }

// Within reports whether p is root or below it. Nothing is within the zero
// Path, and the zero Path is within nothing.
func (p Path) Within(root Path) bool {
	if p.p == "" || root.p == "" {
		return false
	}
	if root.p == "/" || p.p == root.p {
		return true
	}
	return strings.HasPrefix(p.p, root.p+"/")
}

// ResolvePath resolves the absolute path name the way the kernel would look
// it up: component by component, following every symbolic link (also a
// dangling one, and the last component), with ".." applied to the resolved
// directory rather than to the text. Names that do not exist (a file a tool
// will create) are kept as they are: they cannot be links.
func ResolvePath(name string) (Path, error) {
	if !filepath.IsAbs(name) {
		return Path{}, fmt.Errorf("%w: %q is not absolute", ErrPath, name)
	}
	return resolveAbs(name)
}

// ResolvePathIn resolves name like ResolvePath, taking a relative name from
// dir (for path arguments relative to a workspace). The result may lie
// outside dir: check it with Within.
func ResolvePathIn(dir Path, name string) (Path, error) {
	if filepath.IsAbs(name) {
		return resolveAbs(name)
	}
	if dir.IsZero() {
		return Path{}, fmt.Errorf("%w: %q is relative and there is no directory to resolve it in", ErrPath, name)
	}
	return resolveAbs(dir.p + "/" + name)
}

func resolveAbs(name string) (Path, error) {
	if len(name) > maxPathLen || strings.IndexByte(name, 0) >= 0 {
		return Path{}, fmt.Errorf("%w: too long or contains NUL", ErrPath)
	}
	rest := splitPath(name)
	resolved := "/"
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			// resolved contains no symbolic link, so its parent is exact.
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// A name that does not exist (yet) is no link: keep it as it
			// is. A later ".." takes it off again, exactly.
			resolved = next
			continue
		}
		if err != nil {
			return Path{}, fmt.Errorf("%w: %v", ErrPath, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if links++; links > maxSymlinks {
				return Path{}, fmt.Errorf("%w: %q: too many levels of symbolic links", ErrPath, name)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return Path{}, fmt.Errorf("%w: %v", ErrPath, err)
			}
			if len(target) > maxPathLen {
				return Path{}, fmt.Errorf("%w: %q: link target too long", ErrPath, next)
			}
			if filepath.IsAbs(target) {
				resolved = "/"
			}
			rest = append(splitPath(target), rest...)
			continue
		}
		if !fi.IsDir() && hasName(rest) {
			return Path{}, fmt.Errorf("%w: %q: %q is not a directory", ErrPath, name, next)
		}
		resolved = next
	}
	return Path{resolved}, nil
}

func splitPath(p string) []string { return strings.Split(p, "/") }

// hasName reports whether components still name something below the current
// one (anything but empty and "." components).
func hasName(components []string) bool {
	for _, c := range components {
		if c != "" && c != "." {
			return true
		}
	}
	return false
}

// Host is a network destination made canonical by ParseHost: a DNS name in
// lower case without a trailing dot, or an IP address. The zero Host is not
// valid in a Request.
type Host struct {
	name string
	ip   netip.Addr
}

// String returns the name, or the IP address in its canonical text form.
func (h Host) String() string {
	if h.ip.IsValid() {
		return h.ip.String()
	}
	return h.name
}

// IsIP reports whether h is an IP literal.
func (h Host) IsIP() bool { return h.ip.IsValid() }

// IsZero reports whether h is the zero Host.
func (h Host) IsZero() bool { return h.name == "" && !h.ip.IsValid() }

// ParseHost makes s canonical. IP literals (IPv6 optionally in brackets,
// IPv4-mapped IPv6 turned into IPv4) become IP hosts; zones are refused.
// Anything else must be an ASCII DNS name (letters, digits, '-', '_', labels
// of 1 to 63 characters, 253 at most), which is lower-cased and loses one
// trailing dot. Internationalised names must be given in their xn-- form.
// Names that a resolver could read as an IPv4 number ("127.1", "0x7f.1",
// "2130706433") are refused: their last label would be numeric, which no
// top-level domain is.
func ParseHost(s string) (Host, error) {
	if s == "" || len(s) > maxHostLen+1 {
		return Host{}, fmt.Errorf("%w: empty or too long", ErrHost)
	}
	lit := s
	if strings.HasPrefix(lit, "[") && strings.HasSuffix(lit, "]") && len(lit) <= maxHostLiteral {
		lit = lit[1 : len(lit)-1]
		a, err := netip.ParseAddr(lit)
		if err != nil || !a.Is6() {
			return Host{}, fmt.Errorf("%w: %q: not an IPv6 literal", ErrHost, s)
		}
		return ipHost(s, a)
	}
	if a, err := netip.ParseAddr(lit); err == nil {
		return ipHost(s, a)
	}
	name := strings.TrimSuffix(s, ".")
	if name == "" || len(name) > maxHostLen {
		return Host{}, fmt.Errorf("%w: %q: empty or too long", ErrHost, s)
	}
	b := []byte(name)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		case c >= 0x80:
			return Host{}, fmt.Errorf("%w: %q: not ASCII (give the xn-- form)", ErrHost, s)
		default:
			return Host{}, fmt.Errorf("%w: %q: character %q", ErrHost, s, c)
		}
	}
	name = string(b)
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > maxHostLabel {
			return Host{}, fmt.Errorf("%w: %q: empty label or label over %d characters", ErrHost, s, maxHostLabel)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return Host{}, fmt.Errorf("%w: %q: label starts or ends with '-'", ErrHost, s)
		}
	}
	if numericLabel(labels[len(labels)-1]) {
		return Host{}, fmt.Errorf("%w: %q: a resolver could read it as an IP address", ErrHost, s)
	}
	return Host{name: name}, nil
}

func ipHost(s string, a netip.Addr) (Host, error) {
	if a.Zone() != "" {
		return Host{}, fmt.Errorf("%w: %q: IPv6 zones are not allowed", ErrHost, s)
	}
	return Host{ip: a.Unmap()}, nil
}

// numericLabel reports whether l is all decimal digits, or a 0x hex number,
// as inet_aton would read it.
func numericLabel(l string) bool {
	digits := l
	hex := false
	if len(l) > 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		digits, hex = l[2:], true
	}
	for _, c := range []byte(digits) {
		switch {
		case c >= '0' && c <= '9':
		case hex && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
		default:
			return false
		}
	}
	return true
}
