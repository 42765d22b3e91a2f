package main

import (
	"strings"
	"testing"
)

// TestEscapeControls pins escapeControls and escape to termesc's Text mode:
// newline and tab survive, everything a terminal acts on is escaped.
// internal/termesc tests the rune table and fuzzes it.
func TestEscapeControls(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain text\n\tindented", "plain text\n\tindented"},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`},
		{"\x1b[2J\x1b[Hclear", `\x1b[2J\x1b[Hclear`},
		{"fake\rprompt$ ", `fake\x0dprompt$ `},
		{"bs\x08\x7f", `bs\x08\x7f`},
		{"c1 \u009b31m", `c1 \u{009b}31m`},
		{"bidi \u202egnp.exe", `bidi \u{202e}gnp.exe`},
		{"marks \u061c\u200e\u200f", `marks \u{061c}\u{200e}\u{200f}`},
		{"bom\ufeff", `bom\u{feff}`},
		{"bad \xff utf8", `bad \xff utf8`},
		{"héllo wörld", "héllo wörld"},
	}
	for _, tt := range tests {
		if got := string(escapeControls([]byte(tt.in))); got != tt.want {
			t.Errorf("escapeControls(%q) = %q, want %q", tt.in, got, tt.want)
		}
		want := strings.NewReplacer("\n", `\x0a`, "\t", `\x09`).Replace(tt.want)
		if got := escape(tt.in); got != want {
			t.Errorf("escape(%q) = %q, want %q", tt.in, got, want)
		}
	}
	// A skill's log line cannot forge a line of the CLI's own.
	if got := escape("ok\nstockade: denied"); strings.Contains(got, "\n") {
		t.Errorf("escape kept a newline: %q", got)
	}
}
