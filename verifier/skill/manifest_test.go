package skill

import (
	"strings"
	"testing"
)

// minimalManifest is the smallest valid skill.toml.
const minimalManifest = `id = "acme.web"
name = "Web"
version = "1.2.0"
sequence = 7
publisher = "Acme"

[[entrypoints.tools]]
name = "fetch"
module = "modules/web.wasm"
export = "fetch"
description = "Fetch a page."
input_schema = '{"type":"object"}'
`

// manifestCases are skill.toml files and the reason each is refused for
// ("" = valid). They also seed FuzzManifest.
var manifestCases = []struct {
	name   string
	toml   string
	reason Reason
}{
	{"minimal", minimalManifest, ""},
	{"every field", strings.Replace(minimalManifest, `publisher = "Acme"`, `publisher = "Acme"
description = """
Fetches pages.
Two lines."""`, 1) + `output_schema = '{"type":"object","properties":{"text":{"type":"string"}}}'

[capabilities]
http = ["api.example.com", "192.0.2.1"]
secrets = ["api_token"]
storage = true
channels = ["notify", "audit-log"]

[limits]
fuel = 10_000_000
memory_bytes = 67_108_864
timeout_ms = 5_000
`, ""},

	// Strict TOML.
	{"syntax error", "id = \n", ReasonManifestMalformed},
	{"repeated key", minimalManifest + "id = \"acme.web\"\n", ReasonManifestMalformed},
	{"key in another case beside it", strings.Replace(minimalManifest, `name = "Web"`, `name = "Web"`+"\nNAME = \"Other\"", 1), ReasonManifestMalformed},
	{"key in another case", strings.Replace(minimalManifest, `name = "Web"`, `Name = "Web"`, 1), ReasonManifestMalformed},
	{"unknown key", "auto_update = true\n" + minimalManifest, ReasonManifestMalformed},
	{"unknown tool key", minimalManifest + "shell = true\n", ReasonManifestMalformed},
	{"unknown table", minimalManifest + "[network]\nany = true\n", ReasonManifestMalformed},
	{"unknown capability", minimalManifest + "[capabilities]\nprocess_exec = true\n", ReasonManifestMalformed},
	{"capability key in another case", minimalManifest + "[capabilities]\nHTTP = [\"a.example\"]\n", ReasonManifestMalformed},
	{"wrong type", strings.Replace(minimalManifest, "sequence = 7", `sequence = "7"`, 1), ReasonManifestMalformed},
	{"negative sequence", strings.Replace(minimalManifest, "sequence = 7", "sequence = -7", 1), ReasonManifestMalformed},
	{"tools as a table", strings.Replace(minimalManifest, "[[entrypoints.tools]]", "[entrypoints.tools]", 1), ReasonManifestMalformed},
	{"too large", minimalManifest + "# " + strings.Repeat("x", 64<<10) + "\n", ReasonManifestMalformed},

	// Identity.
	{"sequence 0", strings.Replace(minimalManifest, "sequence = 7", "sequence = 0", 1), ReasonSequence},
	{"sequence over 2^53-1", strings.Replace(minimalManifest, "sequence = 7", "sequence = 9007199254740992", 1), ReasonSequence},
	{"id upper case", strings.Replace(minimalManifest, `"acme.web"`, `"Acme.web"`, 1), ReasonID},
	{"id empty segment", strings.Replace(minimalManifest, `"acme.web"`, `"acme..web"`, 1), ReasonID},
	{"id leading dot", strings.Replace(minimalManifest, `"acme.web"`, `".acme.web"`, 1), ReasonID},
	{"id trailing dot", strings.Replace(minimalManifest, `"acme.web"`, `"acme.web."`, 1), ReasonID},
	{"id colon", strings.Replace(minimalManifest, `"acme.web"`, `"acme:web"`, 1), ReasonID},
	{"id one segment", strings.Replace(minimalManifest, `"acme.web"`, `"web"`, 1), ReasonID},
	{"id missing", strings.Replace(minimalManifest, `id = "acme.web"`, ``, 1), ReasonID},
	{"version with v", strings.Replace(minimalManifest, `"1.2.0"`, `"v1.2.0"`, 1), ReasonVersion},
	{"version with build metadata", strings.Replace(minimalManifest, `"1.2.0"`, `"1.2.0+linux"`, 1), ReasonVersion},
	{"version leading zero", strings.Replace(minimalManifest, `"1.2.0"`, `"1.02.0"`, 1), ReasonVersion},

	// Text.
	{"name empty", strings.Replace(minimalManifest, `name = "Web"`, `name = ""`, 1), ReasonText},
	{"name with an escape sequence", strings.Replace(minimalManifest, `name = "Web"`, `name = "Web\u001b[2J"`, 1), ReasonText},
	{"name with a bidi override", strings.Replace(minimalManifest, `name = "Web"`, `name = "Web\u202etxt.exe"`, 1), ReasonText},
	{"name with a newline", strings.Replace(minimalManifest, `name = "Web"`, `name = "Web\nApproved: yes"`, 1), ReasonText},
	{"name too long", strings.Replace(minimalManifest, `name = "Web"`, `name = "`+strings.Repeat("w", 65)+`"`, 1), ReasonText},
	{"publisher padded", strings.Replace(minimalManifest, `publisher = "Acme"`, `publisher = " Acme"`, 1), ReasonText},

	// Tools.
	{"no tools", minimalManifest[:strings.Index(minimalManifest, "[[")], ReasonTool},
	{"two tools with one name", minimalManifest + minimalManifest[strings.Index(minimalManifest, "[["):], ReasonTool},
	{"tool name upper case", strings.Replace(minimalManifest, `name = "fetch"`, `name = "Fetch"`, 1), ReasonTool},
	{"module outside modules/", strings.Replace(minimalManifest, `"modules/web.wasm"`, `"assets/web.wasm"`, 1), ReasonTool},
	{"module traversal", strings.Replace(minimalManifest, `"modules/web.wasm"`, `"modules/../web.wasm"`, 1), ReasonTool},
	{"export starts with a digit", strings.Replace(minimalManifest, `export = "fetch"`, `export = "1fetch"`, 1), ReasonTool},
	{"tool description empty", strings.Replace(minimalManifest, `"Fetch a page."`, `""`, 1), ReasonText},
	{"input schema missing", strings.Replace(minimalManifest, `input_schema = '{"type":"object"}'`, ``, 1), ReasonSchema},
	{"input schema not JSON", strings.Replace(minimalManifest, `'{"type":"object"}'`, `'{type: object}'`, 1), ReasonSchema},
	{"input schema not an object", strings.Replace(minimalManifest, `'{"type":"object"}'`, `'["object"]'`, 1), ReasonSchema},
	{"input schema repeated member", strings.Replace(minimalManifest, `'{"type":"object"}'`, `'{"type":"object","type":"string"}'`, 1), ReasonSchema},
	{"input schema nested repeated member", strings.Replace(minimalManifest, `'{"type":"object"}'`, `'{"properties":{"a":{"x":1,"x":2}}}'`, 1), ReasonSchema},
	{"input schema two values", strings.Replace(minimalManifest, `'{"type":"object"}'`, `'{} {}'`, 1), ReasonSchema},
	{"input schema too deep", strings.Replace(minimalManifest, `'{"type":"object"}'`, `'{"a":`+strings.Repeat(`[`, 40)+strings.Repeat(`]`, 40)+`}'`, 1), ReasonSchema},
	{"output schema not JSON", minimalManifest + "output_schema = '{'\n", ReasonSchema},

	// Capabilities and limits.
	{"host not canonical", minimalManifest + "[capabilities]\nhttp = [\"API.Example.com\"]\n", ReasonCapability},
	{"host wildcard", minimalManifest + "[capabilities]\nhttp = [\"*.example.com\"]\n", ReasonCapability},
	{"host URL", minimalManifest + "[capabilities]\nhttp = [\"https://example.com\"]\n", ReasonCapability},
	{"host numeric", minimalManifest + "[capabilities]\nhttp = [\"127.1\"]\n", ReasonCapability},
	{"host twice", minimalManifest + "[capabilities]\nhttp = [\"a.example\", \"a.example\"]\n", ReasonCapability},
	{"secret name", minimalManifest + "[capabilities]\nsecrets = [\"API_TOKEN\"]\n", ReasonCapability},
	{"secret twice", minimalManifest + "[capabilities]\nsecrets = [\"t\", \"t\"]\n", ReasonCapability},
	{"channel name", minimalManifest + "[capabilities]\nchannels = [\"../x\"]\n", ReasonCapability},
	{"memory not in pages", minimalManifest + "[limits]\nmemory_bytes = 1000\n", ReasonLimit},
	{"memory over 4 GiB", minimalManifest + "[limits]\nmemory_bytes = 4295032832\n", ReasonLimit},
	{"fuel too large", minimalManifest + "[limits]\nfuel = 1099511627777\n", ReasonLimit},
	{"timeout too long", minimalManifest + "[limits]\ntimeout_ms = 3600001\n", ReasonLimit},
}

func TestParseManifest(t *testing.T) {
	t.Parallel()
	for _, c := range manifestCases {
		t.Run(c.name, func(t *testing.T) {
			m, err := ParseManifest([]byte(c.toml))
			if c.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if m.ID != "acme.web" || m.Version.String() != "1.2.0" || m.Sequence != 7 || len(m.Tools) != 1 {
					t.Fatalf("manifest = %+v", m)
				}
				return
			}
			if m != nil {
				t.Error("manifest returned with an error")
			}
			wantReason(t, err, c.reason)
		})
	}
}

func TestParseManifestFull(t *testing.T) {
	m, err := ParseManifest([]byte(manifestCases[1].toml))
	if err != nil {
		t.Fatal(err)
	}
	if m.Description != "Fetches pages.\nTwo lines." || !m.Capabilities.Storage || len(m.Capabilities.HTTP) != 2 ||
		m.Limits.Fuel != 10_000_000 || m.Limits.MemoryBytes != 64<<20 || m.Limits.Timeout.Milliseconds() != 5000 ||
		m.Tools[0].OutputSchema == "" {
		t.Fatalf("manifest = %+v", m)
	}
}
