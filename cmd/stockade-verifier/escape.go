package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// clean makes one value that came from a skill, a key file or the daemon
// safe to print in human output: every control character (newline and tab
// included: a value is one field on one line and must not forge another),
// C1 controls, line and paragraph separators, bidirectional overrides and
// isolates, and invalid UTF-8 are written as visible \xNN or \u{NNNN}
// escapes. The idea is cmd/stockade's escapeControls, made
// stricter for single-line fields (the GnuPG SigSpoof lesson: no attacker
// string may print as if the tool had said it).
func clean(s string) string {
	ok := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0, r == 0x061c, r == 0x200e, r == 0x200f,
			r == 0x2028, r == 0x2029, r >= 0x202a && r <= 0x202e,
			r >= 0x2066 && r <= 0x2069, r == 0xfeff:
			fmt.Fprintf(&b, `\u{%04x}`, r)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}
