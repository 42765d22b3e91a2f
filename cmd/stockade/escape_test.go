package main

import "testing"

func TestEscapeControls(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text\n\tindented", "plain text\n\tindented"},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`},
		{"\x1b[2J\x1b[Hclear", `\x1b[2J\x1b[Hclear`},
		{"fake\rprompt$ ", `fake\x0dprompt$ `},
		{"bs\x08\x7f", `bs\x08\x7f`},
		{"c1 \u009b31m", `c1 \u{009b}31m`},
		{"bidi \u202egnp.exe", `bidi \u{202e}gnp.exe`},
		{"bad \xff utf8", `bad \xff utf8`},
		{"héllo wörld", "héllo wörld"},
	}
	for _, tt := range tests {
		if got := string(escapeControls([]byte(tt.in))); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.in, got, tt.want)
		}
	}
}
