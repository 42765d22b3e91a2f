package main

import (
	"fmt"
	"os"
	"strings"
	"unicode/utf8"
)

// escapeControls makes a target's output safe to show on a terminal: control
// characters other than newline and tab (escape sequences, carriage returns,
// backspaces, C1 controls) and invalid UTF-8 are written as visible \xNN or
// \u{NNNN} escapes, so output cannot move the cursor, retitle the window or
// fake a prompt.
func escapeControls(b []byte) []byte {
	var out strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&out, `\x%02x`, b[0])
		case r == '\n' || r == '\t':
			out.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&out, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0, r == 0x2028, r == 0x2029, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			// C1 controls, line separators and bidi overrides.
			fmt.Fprintf(&out, `\u{%04x}`, r)
		default:
			out.Write(b[:n])
		}
		b = b[n:]
	}
	return []byte(out.String())
}

// writeOutput writes a target's output to f, escaped when f is a terminal.
func writeOutput(f *os.File, b []byte) {
	if isTerminal(f) {
		b = escapeControls(b)
	}
	_, _ = f.Write(b)
}

// escape is escapeControls for a string from the guest or the daemon.
func escape(s string) string { return string(escapeControls([]byte(s))) }
