package main

import "github.com/stockade-dev/stockade/internal/termesc"

// clean makes one value that came from a skill, a key file or the daemon
// safe to print in human output: every control character (newline and tab
// included: a value is one field on one line and must not forge another),
// bidirectional and other formatting runes, and invalid UTF-8 are written
// as visible escapes. termesc holds the rune table, shared with
// cmd/stockade.
func clean(s string) string { return termesc.String(s, termesc.Line) }
