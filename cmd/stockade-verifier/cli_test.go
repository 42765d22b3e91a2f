package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func testCLI(env map[string]string) (*cli, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &cli{stdout: &out, stderr: &errb, lookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}}, &out, &errb
}

// TestParseInterspersed: flags and operands in any order; "--" ends the
// flags; operand counts are checked.
func TestParseInterspersed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args     []string
		min, max int
		ops      []string
		sig      string
		json     bool
		usage    bool
	}{
		{args: []string{"a.skill"}, min: 1, max: 1, ops: []string{"a.skill"}},
		{args: []string{"a.skill", "--sig", "s", "--json"}, min: 1, max: 1, ops: []string{"a.skill"}, sig: "s", json: true},
		{args: []string{"--sig=s", "a.skill"}, min: 1, max: 1, ops: []string{"a.skill"}, sig: "s"},
		{args: []string{"--", "--sig"}, min: 1, max: 1, ops: []string{"--sig"}},
		{args: []string{"a", "--", "-b"}, min: 0, max: -1, ops: []string{"a", "-b"}},
		{args: nil, min: 1, max: 1, usage: true},
		{args: []string{"a", "b"}, min: 1, max: 1, usage: true},
		{args: []string{"--nope"}, min: 0, max: 0, usage: true},
		{args: []string{"a", "--sig"}, min: 1, max: 1, usage: true},
	} {
		c, _, _ := testCLI(nil)
		c.command = "package verify"
		fs := c.flags(false)
		sig := fs.String("sig", "", "")
		ops, err := c.parse(fs, tc.args, tc.min, tc.max)
		if tc.usage {
			if o, _ := outcomeOf(err); o != outUsage {
				t.Errorf("%q: %v; want a usage error", tc.args, err)
			}
			continue
		}
		if err != nil || !slices.Equal(ops, tc.ops) || *sig != tc.sig || c.json != tc.json {
			t.Errorf("%q: ops %q sig %q json %v err %v; want %q %q %v", tc.args, ops, *sig, c.json, err, tc.ops, tc.sig, tc.json)
		}
	}
}

// TestAdminSocketOrder: --socket, then $STOCKADE_ADMIN_SOCKET, then the
// single-user path if a socket is there, then /run/stockade.
func TestAdminSocketOrder(t *testing.T) {
	run, err := os.MkdirTemp("", "sv-run-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(run)
	t.Setenv("XDG_RUNTIME_DIR", run)
	c, _, _ := testCLI(map[string]string{})
	if got := c.adminSocket(); got != "/run/stockade/admin.sock" {
		t.Errorf("no socket anywhere: %q; want the multi-uid path", got)
	}
	single := filepath.Join(run, "stockade", "admin.sock")
	if err := os.MkdirAll(filepath.Dir(single), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(single, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := c.adminSocket(); got != "/run/stockade/admin.sock" {
		t.Errorf("a regular file where the socket would be: %q; want the multi-uid path", got)
	}
	os.Remove(single)
	ln, err := net.Listen("unix", single)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got := c.adminSocket(); got != single {
		t.Errorf("single-user socket present: %q; want %q", got, single)
	}
	c, _, _ = testCLI(map[string]string{adminSocketEnv: "/env.sock"})
	if got := c.adminSocket(); got != "/env.sock" {
		t.Errorf("env: %q", got)
	}
	c.socket = "/flag.sock"
	if got := c.adminSocket(); got != "/flag.sock" {
		t.Errorf("flag: %q", got)
	}
}

// TestJSONErrorShape: an error under --json is one object with the schema,
// the result, the exit code and the error; the message also goes to stderr.
func TestJSONErrorShape(t *testing.T) {
	t.Parallel()
	c, out, errb := testCLI(nil)
	code := c.run([]string{"--json", "package", "verify", "does-not-exist.skill"})
	if code != outNotFound.code() {
		t.Fatalf("exit %d", code)
	}
	var got map[string]any
	dec := json.NewDecoder(out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got["schema"] != jsonSchema || got["command"] != "package verify" || got["result"] != "not_found" ||
		got["exit_code"] != float64(outNotFound) || got["error"] == nil || got["data"] != nil {
		t.Errorf("%v", got)
	}
	if !strings.HasPrefix(errb.String(), "stockade-verifier: open does-not-exist.skill") {
		t.Errorf("stderr %q", errb.String())
	}
}
