package hostcall

import (
	"net/netip"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want addrClass
	}{
		{"93.184.215.14", classPublic},
		{"1.1.1.1", classPublic},
		{"2606:4700:4700::1111", classPublic},
		{"::ffff:8.8.8.8", classPublic},
		{"64:ff9b::808:808", classPublic}, // DNS64 for 8.8.8.8

		{"127.0.0.1", classPrivate},
		{"127.255.255.254", classPrivate},
		{"::1", classPrivate},
		{"::ffff:127.0.0.1", classPrivate},
		{"64:ff9b::7f00:1", classPrivate}, // NAT64 of 127.0.0.1
		{"2002:7f00:1::1", classPrivate},  // 6to4 of 127.0.0.1
		{"10.1.2.3", classPrivate},
		{"172.16.0.1", classPrivate},
		{"172.31.255.255", classPrivate},
		{"192.168.1.1", classPrivate},
		{"100.64.0.1", classPrivate},
		{"100.127.255.255", classPrivate},
		{"169.254.1.1", classPrivate},
		{"fe80::1", classPrivate},
		{"fc00::1", classPrivate},
		{"fd12:3456::1", classPrivate},
		{"198.18.0.1", classPrivate},
		{"192.0.2.1", classPrivate},
		{"2001:db8::1", classPrivate},
		{"2001::1", classPrivate}, // Teredo

		{"169.254.169.254", classMetadata},
		{"::ffff:169.254.169.254", classMetadata},
		{"fd00:ec2::254", classMetadata},
		{"100.100.100.200", classMetadata},
		{"168.63.129.16", classMetadata},
		{"169.254.170.2", classMetadata},
		{"64:ff9b::a9fe:a9fe", classMetadata}, // NAT64 of 169.254.169.254

		{"0.0.0.0", classNever},
		{"0.1.2.3", classNever},
		{"::", classNever},
		{"255.255.255.255", classNever},
		{"224.0.0.1", classNever},
		{"239.255.255.250", classNever},
		{"240.0.0.1", classNever},
		{"ff02::1", classNever},
		{"::127.0.0.1", classNever}, // IPv4-compatible, deprecated
		{"100::1", classNever},      // discard
		{"fe80::1%eth0", classNever},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := classify(a); got != tt.want {
			t.Errorf("classify(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
	if classify(netip.Addr{}) != classNever {
		t.Error("the zero Addr is a destination")
	}
}

func TestPermits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		entry HostGrant
		addr  string
		want  bool
	}{
		{hg(t, "api.example.com", false), "93.184.215.14", true},
		{hg(t, "api.example.com", false), "127.0.0.1", false},
		{hg(t, "api.example.com", false), "10.0.0.1", false},
		{hg(t, "api.example.com", true), "10.0.0.1", true},
		{hg(t, "api.example.com", true), "::1", true},
		{hg(t, "api.example.com", true), "169.254.169.254", false}, // metadata needs the literal
		{hg(t, "api.example.com", true), "fd00:ec2::254", false},
		{hg(t, "api.example.com", true), "0.0.0.0", false},
		{hg(t, "api.example.com", true), "255.255.255.255", false},
		{hg(t, "127.0.0.1", false), "127.0.0.1", true}, // the literal itself
		{hg(t, "127.0.0.1", false), "127.0.0.2", false},
		{hg(t, "::1", false), "::1", true},
		{hg(t, "169.254.169.254", false), "169.254.169.254", true},
		{hg(t, "0.0.0.0", true), "0.0.0.0", false}, // never, even named
		{hg(t, "224.0.0.1", true), "224.0.0.1", false},
	}
	for _, tt := range tests {
		if got, c := tt.entry.permits(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("%v permits %s = %v (%v), want %v", tt.entry, tt.addr, got, c, tt.want)
		}
	}
}
