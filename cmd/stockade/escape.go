package main

import (
	"os"

	"github.com/stockade-dev/stockade/internal/termesc"
)

// escapeControls makes a target's output safe to show on a terminal: control
// characters other than newline and tab (escape sequences, carriage returns,
// backspaces, C1 controls), bidirectional and other formatting runes, and
// invalid UTF-8 are written as visible \xNN or \u{NNNN} escapes, so output
// cannot move the cursor, retitle the window, reorder what it shows or fake
// a prompt. termesc holds the rune table, shared with stockade-verifier.
func escapeControls(b []byte) []byte { return termesc.Bytes(b, termesc.Text) }

// writeOutput writes a target's output to f, escaped when f is a terminal.
func writeOutput(f *os.File, b []byte) {
	if isTerminal(f) {
		b = escapeControls(b)
	}
	_, _ = f.Write(b)
}

// escape makes a string from a skill or the daemon safe to print inside
// one line of the CLI's own: newlines and tabs are escaped too, so a
// guest's log line or message cannot forge a "stockade:" line.
func escape(s string) string { return termesc.String(s, termesc.Line) }
