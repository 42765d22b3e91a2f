package hostcall

import (
	"errors"
	"reflect"
	"testing"

	"github.com/stockade-dev/stockade/policy"
)

func host(t testing.TB, s string) policy.Host {
	t.Helper()
	h, err := policy.ParseHost(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func hg(t testing.TB, s string, private bool, ports ...uint16) HostGrant {
	return HostGrant{Host: host(t, s), Ports: ports, AllowPrivate: private}
}

func TestIntersect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		manifest, operator Grant
		want               Grant
	}{
		{name: "zero grants", want: Grant{}},
		{
			name:     "a host both name",
			manifest: Grant{HTTP: []HostGrant{hg(t, "api.example.com", false)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "api.example.com", false)}},
			want:     Grant{HTTP: []HostGrant{hg(t, "api.example.com", false)}},
		},
		{
			name:     "a host only the manifest names",
			manifest: Grant{HTTP: []HostGrant{hg(t, "evil.example", false), hg(t, "api.example.com", false)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "api.example.com", false)}},
			want:     Grant{HTTP: []HostGrant{hg(t, "api.example.com", false)}},
		},
		{
			name:     "a host only the operator names",
			manifest: Grant{HTTP: []HostGrant{hg(t, "api.example.com", false)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "api.example.com", false), hg(t, "other.example", false)}},
			want:     Grant{HTTP: []HostGrant{hg(t, "api.example.com", false)}},
		},
		{
			name:     "a subdomain is another host",
			manifest: Grant{HTTP: []HostGrant{hg(t, "a.example.com", false)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "example.com", false)}},
			want:     Grant{},
		},
		{
			name:     "ports intersect",
			manifest: Grant{HTTP: []HostGrant{hg(t, "h.example", false, 443, 8443, 9000)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "h.example", false, 9000, 8443)}},
			want:     Grant{HTTP: []HostGrant{hg(t, "h.example", false, 8443, 9000)}},
		},
		{
			name:     "empty ports are 80 and 443",
			manifest: Grant{HTTP: []HostGrant{hg(t, "h.example", false)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "h.example", false, 443, 8443)}},
			want:     Grant{HTTP: []HostGrant{hg(t, "h.example", false, 443)}},
		},
		{
			name:     "no common port drops the host",
			manifest: Grant{HTTP: []HostGrant{hg(t, "h.example", false)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "h.example", false, 8080)}},
			want:     Grant{},
		},
		{
			name:     "AnyPort takes the other side's ports",
			manifest: Grant{HTTP: []HostGrant{hg(t, "127.0.0.1", true, AnyPort)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "127.0.0.1", false, 38080)}},
			want:     Grant{HTTP: []HostGrant{hg(t, "127.0.0.1", false, 38080)}},
		},
		{
			name:     "AnyPort on both sides",
			manifest: Grant{HTTP: []HostGrant{hg(t, "h.example", false, AnyPort)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "h.example", false, 22, AnyPort)}},
			want:     Grant{HTTP: []HostGrant{hg(t, "h.example", false, AnyPort)}},
		},
		{
			name:     "AllowPrivate needs both",
			manifest: Grant{HTTP: []HostGrant{hg(t, "db.internal", false)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "db.internal", true)}},
			want:     Grant{HTTP: []HostGrant{hg(t, "db.internal", false)}},
		},
		{
			name:     "AllowPrivate on both",
			manifest: Grant{HTTP: []HostGrant{hg(t, "db.internal", true, AnyPort)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "db.internal", true, 5432)}},
			want:     Grant{HTTP: []HostGrant{hg(t, "db.internal", true, 5432)}},
		},
		{
			name:     "entries of one host meet pairwise, without duplicates",
			manifest: Grant{HTTP: []HostGrant{hg(t, "h.example", true, AnyPort), hg(t, "h.example", true, AnyPort)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "h.example", false, 443), hg(t, "h.example", true, 8443)}},
			want:     Grant{HTTP: []HostGrant{hg(t, "h.example", false, 443), hg(t, "h.example", true, 8443)}},
		},
		{
			name:     "IP literal and name are different hosts",
			manifest: Grant{HTTP: []HostGrant{hg(t, "localhost", true, AnyPort)}},
			operator: Grant{HTTP: []HostGrant{hg(t, "127.0.0.1", true)}},
			want:     Grant{},
		},
		{
			name:     "zero hosts are ignored",
			manifest: Grant{HTTP: []HostGrant{{Ports: []uint16{AnyPort}}}},
			operator: Grant{HTTP: []HostGrant{{Ports: []uint16{AnyPort}}}},
			want:     Grant{},
		},
		{
			name:     "secrets and channels both name",
			manifest: Grant{Secrets: []string{"token", "extra", "token"}, Channels: []string{"ops", "mine"}},
			operator: Grant{Secrets: []string{"other", "token"}, Channels: []string{"ops"}},
			want:     Grant{Secrets: []string{"token"}, Channels: []string{"ops"}},
		},
		{name: "KV on one side", manifest: Grant{KV: true}, want: Grant{}},
		{name: "KV on the other side", operator: Grant{KV: true}, want: Grant{}},
		{name: "KV on both", manifest: Grant{KV: true}, operator: Grant{KV: true}, want: Grant{KV: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Intersect(tt.manifest, tt.operator)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Intersect = %+v, want %+v", got, tt.want)
			}
			// The meet is symmetric in what it allows.
			back := Intersect(tt.operator, tt.manifest)
			if !sameAllowed(got, back) {
				t.Errorf("Intersect is not symmetric: %+v and %+v", got, back)
			}
			// The result is within both sides: meeting it with either
			// changes nothing.
			if again := Intersect(got, tt.operator); !reflect.DeepEqual(again, got) {
				t.Errorf("Intersect(result, operator) = %+v, want the result %+v", again, got)
			}
			if again := Intersect(got, tt.manifest); !reflect.DeepEqual(again, got) {
				t.Errorf("Intersect(result, manifest) = %+v, want the result %+v", again, got)
			}
		})
	}
}

// sameAllowed compares what two grants allow, ignoring order.
func sameAllowed(a, b Grant) bool {
	if a.KV != b.KV || len(a.HTTP) != len(b.HTTP) || len(a.Secrets) != len(b.Secrets) || len(a.Channels) != len(b.Channels) {
		return false
	}
	for _, e := range a.HTTP {
		found := false
		for _, f := range b.HTTP {
			found = found || e.equal(f)
		}
		if !found {
			return false
		}
	}
	return true
}

func TestParseHostGrant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // HostGrant.String, "" for an error
	}{
		{"api.example.com", "api.example.com"},
		{"API.Example.COM.", "api.example.com"},
		{"api.example.com:8443", "api.example.com:8443"},
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1:8080", "127.0.0.1:8080"},
		{"::1", "::1"},
		{"[::1]:8080", "::1:8080"},
		{"[::ffff:127.0.0.1]:81", "127.0.0.1:81"},
		{"host:0", ""},
		{"host:65536", ""},
		{"host:+80", ""},
		{"host:", ""},
		{"127.1", ""},
		{"http://host", ""},
		{"", ""},
	}
	for _, tt := range tests {
		g, err := ParseHostGrant(tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("ParseHostGrant(%q) = %v, want an error", tt.in, g)
		case tt.want == "" && !errors.Is(err, ErrInvalid):
			t.Errorf("ParseHostGrant(%q): %v is not ErrInvalid", tt.in, err)
		case tt.want != "" && (err != nil || g.String() != tt.want):
			t.Errorf("ParseHostGrant(%q) = %v, %v; want %s", tt.in, g, err, tt.want)
		}
	}
}

func TestManifestGrant(t *testing.T) {
	t.Parallel()
	g, err := ManifestGrant([]string{"api.example.com"}, []string{"token"}, true, []string{"ops"})
	if err != nil {
		t.Fatal(err)
	}
	op := Grant{HTTP: []HostGrant{hg(t, "api.example.com", false, 8443)}, Secrets: []string{"token"}, KV: true}
	got := Intersect(g, op)
	want := Grant{HTTP: []HostGrant{hg(t, "api.example.com", false, 8443)}, Secrets: []string{"token"}, KV: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Intersect(manifest, operator) = %+v, want %+v", got, want)
	}
	if _, err := ManifestGrant([]string{"http://x"}, nil, false, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a bad manifest host: %v", err)
	}
}
