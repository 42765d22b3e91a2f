package skill

import "strings"

// ID names a skill: "publisher.name", two to four dot-separated segments of
// lower-case ASCII letters, digits and inner hyphens, 128 bytes at most.
// Only ParseID makes valid IDs; a skill id is owned by the key that was
// first promoted for it, so its spelling must have exactly one form.
type ID string

const (
	maxIDLen      = 128
	maxIDSegments = 4
	maxSegmentLen = 63
)

// ParseID checks s and returns it as an ID. Errors carry ReasonID.
func ParseID(s string) (ID, error) {
	bad := func(format string, a ...any) (ID, error) { return "", refuse(ReasonID, s, format, a...) }
	switch {
	case s == "":
		return bad("empty")
	case len(s) > maxIDLen:
		return bad("longer than %d bytes", maxIDLen)
	case strings.ContainsRune(s, ':'):
		return bad("':' is not allowed")
	case s[0] == '.' || s[len(s)-1] == '.':
		return bad("leading or trailing '.'")
	case strings.Contains(s, ".."):
		return bad("empty segment (\"..\")")
	}
	segs := strings.Split(s, ".")
	if len(segs) < 2 || len(segs) > maxIDSegments {
		return bad("want 2 to %d dot-separated segments (publisher.name)", maxIDSegments)
	}
	for _, seg := range segs {
		if len(seg) > maxSegmentLen {
			return bad("segment longer than %d bytes", maxSegmentLen)
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			case c == '-' && i > 0 && i < len(seg)-1:
			case c >= 'A' && c <= 'Z':
				return bad("upper-case letter: ids are lower case")
			default:
				return bad("character %q: segments are [a-z0-9] with inner '-'", c)
			}
		}
	}
	return ID(s), nil
}

// String returns the id.
func (id ID) String() string { return string(id) }

// Publisher returns the first segment, the publisher's namespace.
func (id ID) Publisher() string {
	p, _, _ := strings.Cut(string(id), ".")
	return p
}
