package main

import "testing"

func TestClean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"stockade.hello 1.0.0", "stockade.hello 1.0.0"},
		{"Grüße, 世界", "Grüße, 世界"},
		{`C:\path "quoted"`, `C:\path "quoted"`},
		{"a\nstockade-verifier: signature valid", `a\x0astockade-verifier: signature valid`},
		{"tab\there", `tab\x09here`},
		{"\x1b[2J\x1b]0;title\a", `\x1b[2J\x1b]0;title\x07`},
		{"cr\rover", `cr\x0dover`},
		{"del\x7f", `del\x7f`},
		{"c1 \u009b31m", `c1 \u{009b}31m`},
		{"bidi \u202egnp.exe", `bidi \u{202e}gnp.exe`},
		{"isolate \u2066x\u2069", `isolate \u{2066}x\u{2069}`},
		{"line\u2028sep", `line\u{2028}sep`},
		{"bom\ufeff", `bom\u{feff}`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"", ""},
	} {
		if got := clean(tc.in); got != tc.want {
			t.Errorf("clean(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzClean: whatever goes in, nothing that a terminal acts on comes out.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31mred", "\u202e", "\xff", "a\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := clean(s)
		for i, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) ||
				(r >= 0x2066 && r <= 0x2069) || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0x061c ||
				r == 0x200e || r == 0x200f || (r == 0xfffd && out[i] != 0xef) {
				t.Fatalf("clean(%q) = %q holds %U", s, out, r)
			}
		}
	})
}
