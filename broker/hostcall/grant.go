package hostcall

import (
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/stockade-dev/stockade/policy"
)

// AnyPort in HostGrant.Ports allows every port (1 to 65535). Port 0 is
// never a destination, so it cannot be meant literally.
const AnyPort uint16 = 0

// defaultPorts are the ports of a HostGrant with no Ports: the default
// ports of http and https.
var defaultPorts = []uint16{80, 443}

// HostGrant allows one host, on some ports, to some kinds of address.
//
// A request for scheme://host:port/ is allowed by the entry whose Host is
// the request's host (compared in ParseHost's canonical form; there are no
// wildcards) when port is in Ports and every address the host resolves to
// is one the entry permits:
//
//   - a public address: always;
//   - a non-public one (loopback, RFC 1918, ULA, link-local, CGNAT,
//     documentation, benchmarking, ...): when AllowPrivate is set, or when
//     Host is that very IP literal;
//   - a cloud metadata address (169.254.169.254, fd00:ec2::254,
//     100.100.100.200, 168.63.129.16, ...): only when Host is that very IP
//     literal. AllowPrivate is not enough: a name that may resolve to the
//     LAN should still not reach the instance's credentials;
//   - an unspecified, multicast, broadcast or reserved address: never.
//
// An IP-literal Host is its own address and is never resolved, so naming
// 127.0.0.1 in both the manifest and the operator's grant is the explicit
// permission to reach it.
type HostGrant struct {
	Host policy.Host
	// Ports the entry allows. Empty means 80 and 443; AnyPort anywhere in
	// the list means every port.
	Ports []uint16
	// AllowPrivate permits non-public addresses for a host given by name.
	AllowPrivate bool
}

// Grant is what one call of one skill may use through the host ABI. The
// broker makes it with Intersect and never from a guest's bytes. The zero
// Grant allows nothing.
type Grant struct {
	HTTP     []HostGrant
	Secrets  []string // secret names
	KV       bool     // the skill's key-value namespace
	Channels []string // channel names
}

// ParseHostGrant reads an operator's "host" or "host:port" ("[v6]:port"
// for an IPv6 literal with a port) into a HostGrant with AllowPrivate
// unset. The host is made canonical by policy.ParseHost.
func ParseHostGrant(s string) (HostGrant, error) {
	if h, err := policy.ParseHost(s); err == nil {
		return HostGrant{Host: h}, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return HostGrant{}, fmt.Errorf("%w: host grant %q: %v", ErrInvalid, s, err)
	}
	h, err := policy.ParseHost(host)
	if err != nil {
		return HostGrant{}, fmt.Errorf("%w: host grant %q: %v", ErrInvalid, s, err)
	}
	p, err := parsePort(port)
	if err != nil {
		return HostGrant{}, fmt.Errorf("%w: host grant %q: %v", ErrInvalid, s, err)
	}
	return HostGrant{Host: h, Ports: []uint16{p}}, nil
}

// parsePort reads a decimal port, 1 to 65535.
func parsePort(s string) (uint16, error) {
	if s == "" || len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("port %q is not a decimal number", s)
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q is out of range", s)
	}
	return uint16(n), nil
}

// ManifestGrant is a skill manifest's side of Intersect, from its
// capabilities (verifier/skill.Capabilities: HTTP, Secrets, Storage,
// Channels). A manifest names hosts only: it has no words for ports or
// private addresses, which are the operator's to decide, so its entries
// allow AnyPort and AllowPrivate and the operator's side of Intersect
// narrows them. Hosts must parse with policy.ParseHost.
func ManifestGrant(hosts, secrets []string, storage bool, channels []string) (Grant, error) {
	var g Grant
	for _, s := range hosts {
		h, err := policy.ParseHost(s)
		if err != nil {
			return Grant{}, fmt.Errorf("%w: manifest host: %v", ErrInvalid, err)
		}
		g.HTTP = append(g.HTTP, HostGrant{Host: h, Ports: []uint16{AnyPort}, AllowPrivate: true})
	}
	g.Secrets = slices.Clone(secrets)
	g.KV = storage
	g.Channels = slices.Clone(channels)
	return g, nil
}

// Intersect is what both grants allow: a host, port, kind of address,
// secret or channel survives only if the manifest and the operator's
// policy both allow it, and KV only if both do. Each side is a union of its
// host entries, so every pair of entries for the same host meets: ports
// intersect (empty meaning 80 and 443, AnyPort meaning all), AllowPrivate
// holds if it holds on both. Entries left with no port are dropped. The
// result keeps the manifest's order and has no duplicates.
func Intersect(manifest, operator Grant) Grant {
	var out Grant
	for _, m := range manifest.HTTP {
		if m.Host.IsZero() {
			continue
		}
		for _, o := range operator.HTTP {
			if o.Host != m.Host {
				continue
			}
			ports, ok := meetPorts(m.Ports, o.Ports)
			if !ok {
				continue
			}
			e := HostGrant{Host: m.Host, Ports: ports, AllowPrivate: m.AllowPrivate && o.AllowPrivate}
			if !slices.ContainsFunc(out.HTTP, e.equal) {
				out.HTTP = append(out.HTTP, e)
			}
		}
	}
	out.Secrets = meetNames(manifest.Secrets, operator.Secrets)
	out.KV = manifest.KV && operator.KV
	out.Channels = meetNames(manifest.Channels, operator.Channels)
	return out
}

func (e HostGrant) equal(o HostGrant) bool {
	return e.Host == o.Host && e.AllowPrivate == o.AllowPrivate && slices.Equal(e.Ports, o.Ports)
}

// portSet is a HostGrant's Ports as a set: all ports, or a sorted list
// without duplicates.
func portSet(ports []uint16) (all bool, set []uint16) {
	if len(ports) == 0 {
		return false, defaultPorts
	}
	if slices.Contains(ports, AnyPort) {
		return true, nil
	}
	set = slices.Clone(ports)
	slices.Sort(set)
	return false, slices.Compact(set)
}

// meetPorts intersects two Ports values; ok is false when nothing is left.
// The result is in normal form: nil for 80 and 443, {AnyPort} for all,
// otherwise sorted without duplicates.
func meetPorts(a, b []uint16) (ports []uint16, ok bool) {
	allA, setA := portSet(a)
	allB, setB := portSet(b)
	switch {
	case allA && allB:
		return []uint16{AnyPort}, true
	case allA:
		ports = setB
	case allB:
		ports = setA
	default:
		for _, p := range setA {
			if slices.Contains(setB, p) {
				ports = append(ports, p)
			}
		}
	}
	if len(ports) == 0 {
		return nil, false
	}
	if slices.Equal(ports, defaultPorts) {
		return nil, true
	}
	return slices.Clone(ports), true
}

// allowsPort reports whether the entry allows port.
func (e HostGrant) allowsPort(port uint16) bool {
	all, set := portSet(e.Ports)
	return all || slices.Contains(set, port)
}

// meetNames returns the names of a that b has too, in a's order, once.
func meetNames(a, b []string) []string {
	var out []string
	for _, n := range a {
		if slices.Contains(b, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// entriesFor returns the entries of g for host that allow port.
func (g Grant) entriesFor(host policy.Host, port uint16) []HostGrant {
	var out []HostGrant
	for _, e := range g.HTTP {
		if e.Host == host && e.allowsPort(port) {
			out = append(out, e)
		}
	}
	return out
}

// String is the entry as an operator would write it: host, ports, and
// "+private" when AllowPrivate is set.
func (e HostGrant) String() string {
	var b strings.Builder
	b.WriteString(e.Host.String())
	all, set := portSet(e.Ports)
	switch {
	case all:
		b.WriteString(":*")
	case len(e.Ports) > 0:
		for i, p := range set {
			if i == 0 {
				b.WriteByte(':')
			} else {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(int(p)))
		}
	}
	if e.AllowPrivate {
		b.WriteString("+private")
	}
	return b.String()
}

// LogValue shows a Grant compactly. A Grant holds names, never secret
// values.
func (g Grant) LogValue() slog.Value {
	hosts := make([]string, len(g.HTTP))
	for i, e := range g.HTTP {
		hosts[i] = e.String()
	}
	return slog.GroupValue(
		slog.Any("http", hosts),
		slog.Any("secrets", g.Secrets),
		slog.Bool("kv", g.KV),
		slog.Any("channels", g.Channels),
	)
}

var _ slog.LogValuer = Grant{}
