package skill

import (
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stockade-dev/stockade/policy"
)

// manifest checks f field by field and returns the Manifest.
func (f *manifestFile) manifest() (*Manifest, error) {
	id, err := ParseID(f.ID)
	if err != nil {
		return nil, err
	}
	v, err := ParseVersion(f.Version)
	if err != nil {
		return nil, err
	}
	if err := checkSequence(f.Sequence); err != nil {
		return nil, err
	}
	for _, t := range []struct {
		key, s string
		min    int
		max    int
		lines  bool
	}{
		{"name", f.Name, 1, maxNameLen, false},
		{"publisher", f.Publisher, 1, maxNameLen, false},
		{"description", f.Description, 0, maxDescription, true},
	} {
		if err := checkText(t.s, t.min, t.max, t.lines); err != nil {
			return nil, refuseErr(ReasonText, t.key, err, "")
		}
	}
	m := &Manifest{
		ID: id, Name: f.Name, Version: v, Sequence: f.Sequence,
		Publisher: f.Publisher, Description: f.Description,
	}
	if m.Tools, err = checkTools(f.Entrypoints.Tools); err != nil {
		return nil, err
	}
	if m.Capabilities, err = checkCapabilities(&f.Capabilities); err != nil {
		return nil, err
	}
	if m.Limits, err = checkLimits(&f.Limits); err != nil {
		return nil, err
	}
	return m, nil
}

func checkTools(in []toolFile) ([]Tool, error) {
	if len(in) == 0 || len(in) > maxTools {
		return nil, refuse(ReasonTool, "entrypoints.tools", "%d tools; want 1 to %d", len(in), maxTools)
	}
	seen := make(map[string]bool, len(in))
	tools := make([]Tool, 0, len(in))
	for i, t := range in {
		at := fmt.Sprintf("entrypoints.tools[%d]", i)
		switch {
		case !isIdent(t.Name, false):
			return nil, refuse(ReasonTool, at+".name", "tool names are [a-z][a-z0-9_]*, %d bytes at most", maxCapabilityLen)
		case seen[t.Name]:
			return nil, refuse(ReasonTool, t.Name, "two tools have this name")
		case !isModulePath(t.Module) || checkPath(t.Module) != nil:
			return nil, refuse(ReasonTool, at+".module", "module must be modules/NAME.wasm")
		case !isExport(t.Export):
			return nil, refuse(ReasonTool, at+".export", "export names are [A-Za-z_][A-Za-z0-9_]*, %d bytes at most", maxCapabilityLen)
		}
		seen[t.Name] = true
		if err := checkText(t.Description, 1, maxDescription, true); err != nil {
			return nil, refuseErr(ReasonText, at+".description", err, "")
		}
		if err := checkSchema(t.InputSchema, true); err != nil {
			return nil, refuseErr(ReasonSchema, at+".input_schema", err, "")
		}
		if err := checkSchema(t.OutputSchema, false); err != nil {
			return nil, refuseErr(ReasonSchema, at+".output_schema", err, "")
		}
		tools = append(tools, Tool(t))
	}
	return tools, nil
}

func checkSchema(s string, required bool) error {
	switch {
	case s == "" && !required:
		return nil
	case s == "":
		return fmt.Errorf("missing")
	case len(s) > maxSchemaBytes:
		return fmt.Errorf("longer than %d bytes", maxSchemaBytes)
	}
	return checkJSONText(s, maxSchemaDepth)
}

func checkCapabilities(c *capabilityFile) (Capabilities, error) {
	out := Capabilities{Storage: c.Storage}
	if len(c.HTTP) > maxHosts {
		return out, refuse(ReasonCapability, "capabilities.http", "more than %d hosts", maxHosts)
	}
	seen := map[string]bool{}
	for _, h := range c.HTTP {
		host, err := policy.ParseHost(h)
		if err != nil {
			return out, refuseErr(ReasonCapability, "capabilities.http", err, "")
		}
		if host.String() != h {
			return out, refuse(ReasonCapability, h, "write the host as %q", host.String())
		}
		if seen[h] {
			return out, refuse(ReasonCapability, h, "host listed twice")
		}
		seen[h] = true
	}
	out.HTTP = c.HTTP
	for _, list := range []struct {
		key   string
		names []string
		max   int
		dst   *[]string
	}{
		{"capabilities.secrets", c.Secrets, maxSecrets, &out.Secrets},
		{"capabilities.channels", c.Channels, maxChannels, &out.Channels},
	} {
		if len(list.names) > list.max {
			return out, refuse(ReasonCapability, list.key, "more than %d names", list.max)
		}
		seen := map[string]bool{}
		for _, n := range list.names {
			if !isIdent(n, true) {
				return out, refuse(ReasonCapability, list.key, "names are [a-z][a-z0-9_-]*, %d bytes at most", maxCapabilityLen)
			}
			if seen[n] {
				return out, refuse(ReasonCapability, n, "listed twice in %s", list.key)
			}
			seen[n] = true
		}
		*list.dst = list.names
	}
	return out, nil
}

func checkLimits(l *limitsFile) (ResourceLimits, error) {
	switch {
	case l.Fuel > maxFuel:
		return ResourceLimits{}, refuse(ReasonLimit, "limits.fuel", "more than %d", uint64(maxFuel))
	case l.MemoryBytes > maxMemoryBytes || l.MemoryBytes%wasmPageSize != 0:
		return ResourceLimits{}, refuse(ReasonLimit, "limits.memory_bytes", "must be a multiple of %d (a WASM page), %d at most", wasmPageSize, uint64(maxMemoryBytes))
	case l.TimeoutMS > maxTimeoutMS:
		return ResourceLimits{}, refuse(ReasonLimit, "limits.timeout_ms", "more than %d", maxTimeoutMS)
	}
	return ResourceLimits{Fuel: l.Fuel, MemoryBytes: l.MemoryBytes, Timeout: time.Duration(l.TimeoutMS) * time.Millisecond}, nil
}

// isIdent reports whether s is [a-z][a-z0-9_]* (with '-' too when hyphen),
// maxCapabilityLen bytes at most.
func isIdent(s string, hyphen bool) bool {
	if s == "" || len(s) > maxCapabilityLen || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || hyphen && c == '-') {
			return false
		}
	}
	return true
}

// isExport reports whether s is [A-Za-z_][A-Za-z0-9_]*, maxCapabilityLen
// bytes at most.
func isExport(s string) bool {
	if s == "" || len(s) > maxCapabilityLen || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// checkText checks text that admins and agents will read: UTF-8, between
// min and max bytes, no control characters (newlines only where lines is
// set), no bidirectional overrides or isolates (which make text read
// differently from what it is), and on one-line text no leading or
// trailing space.
func checkText(s string, min, max int, lines bool) error {
	if len(s) < min || len(s) > max {
		return fmt.Errorf("want %d to %d bytes, have %d", min, max, len(s))
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("not UTF-8")
	}
	for _, r := range s {
		switch {
		case r == '\n' && lines:
		case unicode.IsControl(r):
			return fmt.Errorf("control character %U", r)
		case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0xfeff:
			return fmt.Errorf("bidirectional or invisible formatting character %U", r)
		}
	}
	if !lines && s != "" && (unicode.IsSpace(rune(s[0])) || unicode.IsSpace(rune(s[len(s)-1]))) {
		return fmt.Errorf("leading or trailing space")
	}
	return nil
}
