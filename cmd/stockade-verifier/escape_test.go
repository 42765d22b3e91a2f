package main

import "testing"

// TestClean pins clean to termesc's Line mode on values this CLI prints;
// internal/termesc tests the rune table and fuzzes it.
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
		{"marks \u061c\u200e\u200f", `marks \u{061c}\u{200e}\u{200f}`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"", ""},
	} {
		if got := clean(tc.in); got != tc.want {
			t.Errorf("clean(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
