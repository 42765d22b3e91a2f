package hostcall

import (
	"net/netip"
	"slices"
)

// addrClass sorts destination addresses by who may permit them (see
// HostGrant).
type addrClass int

const (
	classPublic   addrClass = iota // globally reachable unicast
	classPrivate                   // not public: AllowPrivate or the IP literal itself
	classMetadata                  // cloud metadata: only the IP literal itself
	classNever                     // not a destination at all
)

func (c addrClass) String() string {
	switch c {
	case classPublic:
		return "public"
	case classPrivate:
		return "non-public"
	case classMetadata:
		return "cloud metadata"
	default:
		return "never a destination"
	}
}

// metadataAddrs are the instance metadata and host-agent endpoints of
// cloud providers: AWS IMDS (IPv4 and IPv6), ECS task metadata, EKS Pod
// Identity (IPv4 and IPv6), GCP, Azure IMDS (169.254.169.254 too), Azure
// WireServer (a public address), Alibaba Cloud, Oracle Cloud Classic.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("169.254.170.23"),
	netip.MustParseAddr("168.63.129.16"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("192.0.0.192"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("fd00:ec2::23"),
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// IPv4 ranges (IANA special-purpose registry).
var (
	never4 = prefixes(
		"0.0.0.0/8",   // "this network"; 0.0.0.0 reaches the local host
		"224.0.0.0/4", // multicast
		"240.0.0.0/4", // reserved, and 255.255.255.255 broadcast
	)
	private4 = prefixes(
		"10.0.0.0/8",      // RFC 1918
		"100.64.0.0/10",   // CGNAT (RFC 6598)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local
		"172.16.0.0/12",   // RFC 1918
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // TEST-NET-1
		"192.88.99.0/24",  // 6to4 relay anycast
		"192.168.0.0/16",  // RFC 1918
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // TEST-NET-2
		"203.0.113.0/24",  // TEST-NET-3
	)
)

// IPv6 ranges. Anything outside 2000::/3 and the listed non-public
// ranges is unassigned or special and never a destination.
var (
	global6   = netip.MustParsePrefix("2000::/3")
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // embeds an IPv4 address (RFC 6052)
	sixToFour = netip.MustParsePrefix("2002::/16")    // embeds an IPv4 address (RFC 3056)
	private6  = prefixes(
		"::1/128",        // loopback
		"fc00::/7",       // ULA
		"fe80::/10",      // link-local
		"fec0::/10",      // site-local (deprecated)
		"64:ff9b:1::/48", // local-use NAT64
		"2001::/23",      // IETF protocol assignments (Teredo, ...)
		"2001:db8::/32",  // documentation
		"3fff::/20",      // documentation
		"5f00::/16",      // SRv6 SIDs
	)
)

func inAny(a netip.Addr, ps []netip.Prefix) bool {
	return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
}

// classify sorts an address. IPv4-mapped IPv6 is its IPv4 address; NAT64
// and 6to4 addresses are classed by the IPv4 address they embed (so that
// DNS64 answers for public names stay public on IPv6-only hosts).
func classify(a netip.Addr) addrClass {
	if !a.IsValid() || a.Zone() != "" {
		return classNever
	}
	a = a.Unmap()
	if slices.Contains(metadataAddrs, a) {
		return classMetadata
	}
	if a.Is4() {
		switch {
		case inAny(a, never4):
			return classNever
		case inAny(a, private4):
			return classPrivate
		}
		return classPublic
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return classify(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(a):
		return classify(netip.AddrFrom4([4]byte(b[2:6])))
	case inAny(a, private6):
		return classPrivate
	case global6.Contains(a):
		return classPublic
	}
	return classNever
}

// permits reports whether the entry permits dialling a, and the class
// that decided.
func (e HostGrant) permits(a netip.Addr) (bool, addrClass) {
	c := classify(a)
	literal := e.Host.IsIP() && e.Host.String() == a.Unmap().String()
	switch c {
	case classPublic:
		return true, c
	case classPrivate:
		return e.AllowPrivate || literal, c
	case classMetadata:
		return literal, c
	}
	return false, c
}
