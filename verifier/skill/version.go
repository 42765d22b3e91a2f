package skill

import (
	"cmp"
	"strconv"
	"strings"
)

// Version is a semantic version (semver.org 2.0.0) without build metadata:
// MAJOR.MINOR.PATCH with an optional -PRERELEASE. Build metadata ("+...") is
// refused, because two versions that differ only in it have the same
// precedence and one skill version must have one spelling. Only
// ParseVersion makes valid Versions; their String is the text they were
// parsed from.
//
// Versions are for people. What orders releases of a skill for rollback
// protection is the manifest's sequence.
type Version struct {
	Major, Minor, Patch uint64
	// Pre is the pre-release part without its '-' ("rc.1"), or "".
	Pre string
}

const maxVersionLen = 64

// ParseVersion parses s strictly: no leading 'v', no leading zeros in
// numeric identifiers, no empty identifiers, numbers within uint64. Errors
// carry ReasonVersion.
func ParseVersion(s string) (Version, error) {
	bad := func(format string, a ...any) (Version, error) {
		return Version{}, refuse(ReasonVersion, s, format, a...)
	}
	if s == "" {
		return bad("empty")
	}
	if len(s) > maxVersionLen {
		return bad("longer than %d bytes", maxVersionLen)
	}
	if strings.ContainsRune(s, '+') {
		return bad("build metadata (\"+...\") is not allowed")
	}
	core, pre, hasPre := strings.Cut(s, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return bad("want MAJOR.MINOR.PATCH")
	}
	var nums [3]uint64
	for i, p := range parts {
		n, ok := parseNumeric(p)
		if !ok {
			return bad("%q is not a number without leading zeros", p)
		}
		nums[i] = n
	}
	if hasPre {
		if pre == "" {
			return bad("empty pre-release")
		}
		for _, id := range strings.Split(pre, ".") {
			if id == "" {
				return bad("empty pre-release identifier")
			}
			numeric := true
			for i := 0; i < len(id); i++ {
				c := id[i]
				switch {
				case c >= '0' && c <= '9':
				case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
					numeric = false
				default:
					return bad("pre-release character %q", c)
				}
			}
			if numeric {
				if _, ok := parseNumeric(id); !ok {
					return bad("numeric pre-release identifier %q has a leading zero or overflows", id)
				}
			}
		}
	}
	return Version{Major: nums[0], Minor: nums[1], Patch: nums[2], Pre: pre}, nil
}

// parseNumeric parses a semver numeric identifier: digits, no leading zero
// unless it is "0", within uint64.
func parseNumeric(s string) (uint64, bool) {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// String returns the version's text.
func (v Version) String() string {
	s := strconv.FormatUint(v.Major, 10) + "." + strconv.FormatUint(v.Minor, 10) + "." + strconv.FormatUint(v.Patch, 10)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// Compare orders versions by semver precedence: -1 if v < w, 0 if equal,
// +1 if v > w. A pre-release sorts before its release.
func (v Version) Compare(w Version) int {
	if c := cmp.Compare(v.Major, w.Major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Minor, w.Minor); c != 0 {
		return c
	}
	if c := cmp.Compare(v.Patch, w.Patch); c != 0 {
		return c
	}
	switch {
	case v.Pre == w.Pre:
		return 0
	case v.Pre == "":
		return 1
	case w.Pre == "":
		return -1
	}
	a, b := strings.Split(v.Pre, "."), strings.Split(w.Pre, ".")
	for i := 0; i < len(a) && i < len(b); i++ {
		an, aNum := parseNumeric(a[i])
		bn, bNum := parseNumeric(b[i])
		var c int
		switch {
		case aNum && bNum:
			c = cmp.Compare(an, bn)
		case aNum:
			c = -1
		case bNum:
			c = 1
		default:
			c = strings.Compare(a[i], b[i])
		}
		if c != 0 {
			return c
		}
	}
	return cmp.Compare(len(a), len(b))
}
