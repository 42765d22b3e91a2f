package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolvePath(t *testing.T) {
	t.Parallel()
	// The temporary directory itself may sit behind a link (/tmp on macOS).
	root := mustPath(t, t.TempDir()).String()
	for _, d := range []string{"ws/sub", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ws/file", "etc/passwd"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"ws/up":       "../etc",             // relative, out of the workspace
		"ws/abs":      root + "/etc/passwd", // absolute
		"ws/dangling": root + "/etc/new",    // target does not exist yet
		"ws/chain":    "up",                 // a link to a link
		"ws/self":     "self",               // a loop
		"ws/dot":      ".",                  // the workspace itself
		"ws/sub/back": "..",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		in   string
		want string // "" means an error
	}{
		{root + "/ws", root + "/ws"},
		{root + "/ws/", root + "/ws"},
		{root + "//ws/./sub/", root + "/ws/sub"},
		{root + "/ws/file", root + "/ws/file"},
		{root + "/ws/up/passwd", root + "/etc/passwd"},
		{root + "/ws/abs", root + "/etc/passwd"},
		{root + "/ws/dangling", root + "/etc/new"},
		{root + "/ws/chain/passwd", root + "/etc/passwd"},
		{root + "/ws/dot/dot/file", root + "/ws/file"},
		{root + "/ws/sub/back/file", root + "/ws/file"},
		// ".." after a link applies to where the link points, not the text.
		{root + "/ws/up/../ws/file", root + "/ws/file"},
		{root + "/ws/sub/back/../etc", root + "/etc"},
		// Names that do not exist yet stay; ".." takes them off exactly.
		{root + "/ws/new/dir/out.txt", root + "/ws/new/dir/out.txt"},
		{root + "/ws/new/../file", root + "/ws/file"},
		{root + "/ws/new/../up/passwd", root + "/etc/passwd"},
		{root + "/ws/new/../../ws/../etc", root + "/etc"},
		{"/..", "/"},
		{"/", "/"},
		{root + "/ws/self", ""},
		{root + "/ws/file/x", ""},
		{root + "/ws/file/..", ""},
		{"relative/path", ""},
		{"", ""},
		{root + "/ws/\x00", ""},
		{"/" + strings.Repeat("a", maxPathLen), ""},
	}
	for _, tt := range tests {
		got, err := ResolvePath(tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("ResolvePath(%q) = %q, want an error", tt.in, got)
		case tt.want == "" && !errors.Is(err, ErrPath):
			t.Errorf("ResolvePath(%q): error %v is not ErrPath", tt.in, err)
		case tt.want != "" && (err != nil || got.String() != tt.want):
			t.Errorf("ResolvePath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}

	ws := mustPath(t, root+"/ws")
	in := []struct {
		rel    string
		within bool
	}{
		{"file", true},
		{"sub/../file", true},
		{"new/out", true},
		{".", true},
		{"up/passwd", false},
		{"dangling", false},
		{"../etc", false},
		{"../ws2", false},
		{root + "/ws", true},
	}
	for _, tt := range in {
		p, err := ResolvePathIn(ws, tt.rel)
		if err != nil {
			t.Fatalf("ResolvePathIn(%q): %v", tt.rel, err)
		}
		if p.Within(ws) != tt.within {
			t.Errorf("%q resolved to %q: within %v, want %v", tt.rel, p, p.Within(ws), tt.within)
		}
	}
	if _, err := ResolvePathIn(Path{}, "rel"); !errors.Is(err, ErrPath) {
		t.Errorf("relative path without a directory: %v", err)
	}
	// Within is about components, not string prefixes.
	if mustPath(t, root+"/ws2").Within(ws) || (Path{}).Within(ws) || ws.Within(Path{}) {
		t.Error("Within matched a sibling or a zero Path")
	}
	if !ws.Within(mustPath(t, "/")) {
		t.Error("nothing is within /")
	}
}

func TestParseHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // "" means an error
		ip   bool
	}{
		{"example.com", "example.com", false},
		{"Example.COM.", "example.com", false},
		{"a-b.c_d.example", "a-b.c_d.example", false},
		{"localhost", "localhost", false},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", false},
		{"1.2.3.4", "1.2.3.4", true},
		{"::1", "::1", true},
		{"[::1]", "::1", true},
		{"[::ffff:10.0.0.1]", "10.0.0.1", true},
		{"::ffff:10.0.0.1", "10.0.0.1", true},
		{"2001:DB8::1", "2001:db8::1", true},
		{"fe80::1%eth0", "", false},
		{"[fe80::1%eth0]", "", false},
		{"[1.2.3.4]", "", false},
		{"127.1", "", false},
		{"2130706433", "", false},
		{"0x7f.1", "", false},
		{"0x7f000001", "", false},
		{"host.0x1f", "", false},
		{"1.2.3.4.", "", false},
		{"bücher.example", "", false},
		{"exa mple.com", "", false},
		{"example.com:443", "", false},
		{"a..b", "", false},
		{".example", "", false},
		{"example..", "", false},
		{"-a.example", "", false},
		{"a-.example", "", false},
		{"", "", false},
		{".", "", false},
		{strings.Repeat("a", 64) + ".example", "", false},
		{strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 126) + "a", false},
		{strings.Repeat("a.", 126) + "a.", strings.Repeat("a.", 126) + "a", false},
		{strings.Repeat("a.", 126) + "ab", "", false},
		{"a/b", "", false},
		{"a\x00b", "", false},
	}
	for _, tt := range tests {
		h, err := ParseHost(tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("ParseHost(%q) = %q, want an error", tt.in, h)
		case tt.want == "" && !errors.Is(err, ErrHost):
			t.Errorf("ParseHost(%q): error %v is not ErrHost", tt.in, err)
		case tt.want != "" && (err != nil || h.String() != tt.want || h.IsIP() != tt.ip):
			t.Errorf("ParseHost(%q) = %q (ip %v), %v; want %q (ip %v)", tt.in, h, h.IsIP(), err, tt.want, tt.ip)
		}
	}
}

// FuzzParseHost: canonical hosts are stable (parsing the canonical form
// gives it back) and are never both a name and an IP.
func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"example.com", "Example.COM.", "[::1]", "::ffff:1.2.3.4", "127.1", "0x7f.1", "a..b", "fe80::1%lo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHost(s)
		if err != nil {
			if !h.IsZero() {
				t.Fatalf("error %v with a non-zero Host", err)
			}
			return
		}
		again, err := ParseHost(h.String())
		if err != nil || again != h {
			t.Fatalf("%q -> %q -> %q, %v", s, h, again, err)
		}
		if !h.IsIP() && (strings.ContainsAny(h.String(), ":[]%/ ") || strings.ToLower(h.String()) != h.String() || strings.HasSuffix(h.String(), ".")) {
			t.Fatalf("name %q is not canonical", h)
		}
	})
}
