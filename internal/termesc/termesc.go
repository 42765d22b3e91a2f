// Package termesc makes text from a less-trusted source safe to print on a
// terminal. Both CLIs use it: cmd/stockade for a target's output, skill
// logs and channel messages, cmd/stockade-verifier for values from skills,
// key files and the verifier.
//
// # Security
//
// termesc trusts nothing it is given. Every rune a terminal acts on, or
// that makes a line read as something other than what it holds, is
// written as a visible escape: C0 controls and DEL as \xNN; C1 controls,
// U+061C ARABIC LETTER MARK, U+200E and U+200F (left-to-right and
// right-to-left marks), U+2028 and U+2029 (line and paragraph
// separators), U+202A–U+202E (bidirectional embeddings and overrides),
// U+2066–U+2069 (isolates) and U+FEFF (byte order mark) as \u{NNNN}; and
// each byte of invalid UTF-8 as \xNN. Everything else is copied unchanged.
//
// In Text mode newline and tab are kept, so that multi-line output stays
// readable; in Line mode they are escaped too, so that a value printed as
// one field cannot forge another line (the GnuPG SigSpoof lesson: no
// attacker string may print as if the tool had said it).
package termesc

import (
	"fmt"
	"unicode/utf8"
)

// Mode says whether newline and tab survive.
type Mode int

const (
	// Line escapes newline and tab: the value is one field on one line.
	Line Mode = iota
	// Text keeps newline and tab: the value is a block of output.
	Text
)

// String returns s with every rune a terminal would act on written as a
// visible escape (see the package comment). It returns s itself when there
// is nothing to escape.
func String(s string, m Mode) string {
	if plain(s, m) {
		return s
	}
	return string(appendEscaped(nil, s, m))
}

// Bytes is String for a byte slice. It returns b itself when there is
// nothing to escape.
func Bytes(b []byte, m Mode) []byte {
	if plain(string(b), m) {
		return b
	}
	return appendEscaped(nil, string(b), m)
}

// plain reports whether s is printable ASCII (plus newline and tab in Text
// mode), which needs no escaping.
func plain(s string, m Mode) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f {
			if m == Text && (c == '\n' || c == '\t') {
				continue
			}
			return false
		}
	}
	return true
}

func appendEscaped(dst []byte, s string, m Mode) []byte {
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n <= 1:
			dst = fmt.Appendf(dst, `\x%02x`, s[0])
		case m == Text && (r == '\n' || r == '\t'):
			dst = append(dst, byte(r))
		case r < 0x20 || r == 0x7f:
			dst = fmt.Appendf(dst, `\x%02x`, r)
		case unsafeRune(r):
			dst = fmt.Appendf(dst, `\u{%04x}`, r)
		default:
			dst = append(dst, s[:n]...)
		}
		s = s[n:]
	}
	return dst
}

// unsafeRune reports whether r is in the rune table of the package comment.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0,
		r == 0x061c, r == 0x200e, r == 0x200f,
		r == 0x2028, r == 0x2029, r >= 0x202a && r <= 0x202e,
		r >= 0x2066 && r <= 0x2069, r == 0xfeff:
		return true
	}
	return false
}
