package skill

import (
	"path/filepath"
	"strings"
)

// Archive paths. Every name in an archive and in a statement is checked
// here: ASCII segments of [A-Za-z0-9._-] joined by '/', no segment empty or
// starting with '.', at most maxPathDepth segments and maxPathLen bytes.
// That alphabet has one spelling per name on every file system we extract
// to (no Unicode normalisation, no separators but '/'), and it leaves no
// room for "..", absolute paths, backslashes, NUL or drive letters; those
// still get reasons of their own, so that the refusal says what the attack
// was.
const (
	maxPathLen   = 255
	maxPathDepth = 8
)

// Where files may live in a skill.
const (
	ManifestPath = "skill.toml"
	modulesDir   = "modules/"
	assetsDir    = "assets/"
	moduleExt    = ".wasm"
)

// checkPath checks name for safety alone (not for layout).
func checkPath(name string) error {
	bad := func(r Reason, format string, a ...any) error { return refuse(r, name, format, a...) }
	switch {
	case name == "" || len(name) > maxPathLen:
		return bad(ReasonPathInvalid, "empty or longer than %d bytes", maxPathLen)
	case strings.IndexByte(name, 0) >= 0:
		return bad(ReasonPathNUL, "NUL in name")
	case strings.IndexByte(name, '\\') >= 0:
		return bad(ReasonPathBackslash, "backslash in name")
	case name[0] == '/':
		return bad(ReasonPathAbsolute, "absolute path")
	case len(name) >= 2 && name[1] == ':' && (name[0]|0x20 >= 'a' && name[0]|0x20 <= 'z'):
		return bad(ReasonPathDrive, "drive letter")
	}
	segs := strings.Split(name, "/")
	for _, seg := range segs {
		if seg == ".." {
			return bad(ReasonPathTraversal, "\"..\" segment")
		}
	}
	if len(segs) > maxPathDepth {
		return bad(ReasonPathInvalid, "deeper than %d segments", maxPathDepth)
	}
	for _, seg := range segs {
		if seg == "" || seg[0] == '.' {
			return bad(ReasonPathInvalid, "empty segment or segment starting with '.'")
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return bad(ReasonPathInvalid, "byte %#02x outside [A-Za-z0-9._-]", c)
			}
		}
	}
	if !filepath.IsLocal(name) {
		return bad(ReasonPathInvalid, "not a local path")
	}
	return nil
}

// checkLayout checks that a safe name is one a skill may hold: skill.toml,
// modules/NAME.wasm (one level), or anything under assets/.
func checkLayout(name string) error {
	switch {
	case name == ManifestPath:
		return nil
	case isModulePath(name):
		return nil
	case strings.HasPrefix(name, assetsDir) && len(name) > len(assetsDir):
		return nil
	}
	return refuse(ReasonPathLayout, name, "a skill holds skill.toml, modules/*.wasm and assets/** only")
}

func isModulePath(name string) bool {
	rest, ok := strings.CutPrefix(name, modulesDir)
	return ok && !strings.Contains(rest, "/") && len(rest) > len(moduleExt) && strings.HasSuffix(rest, moduleExt)
}

// foldName is the key under which names collide on a case-insensitive file
// system. Names are ASCII (checkPath), so lower-casing ASCII is enough.
func foldName(name string) string { return strings.ToLower(name) }
