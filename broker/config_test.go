package broker

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestDefaultConfig(t *testing.T) {
	c, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tools) == 0 || c.Defaults.MaxOutput != 1<<20 || time.Duration(c.Defaults.Timeout) != 30*time.Second {
		t.Fatalf("%+v", c)
	}
	for _, tool := range c.Tools {
		if !strings.HasPrefix(tool.Command, "/") || tool.Limits.NoFile == 0 {
			t.Fatalf("tool %+v not resolved", tool)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name, toml, want string
	}{
		{"unknown key", "agent_uid = [1]\n", "agent_uid"},
		{"unknown tool key", "[[tool]]\nname = \"x\"\nkind = \"process\"\ncommand = \"/bin/true\"\nshell = true\n", "shell"},
		{"syntax", "agent_uids = [\n", "line"},
		{"relative command", "[[tool]]\nname = \"x\"\nkind = \"process\"\ncommand = \"true\"\n", "absolute"},
		{"missing command", "[[tool]]\nname = \"x\"\nkind = \"process\"\ncommand = \"/no/such\"\n", "not found"},
		{"bad name", "[[tool]]\nname = \"X Y\"\nkind = \"process\"\ncommand = \"/bin/true\"\n", "tool name"},
		{"shadows built-in", "[[tool]]\nname = \"process.run\"\nkind = \"process\"\ncommand = \"/bin/true\"\n", "built-in"},
		{"duplicate", "[[tool]]\nname = \"a\"\nkind = \"process\"\ncommand = \"/bin/true\"\n[[tool]]\nname = \"a\"\nkind = \"process\"\ncommand = \"/bin/true\"\n", "twice"},
		{"bad kind", "[[tool]]\nname = \"a\"\nkind = \"wasm\"\ncommand = \"/bin/true\"\n", "kind"},
		{"unknown tier", "[[tool]]\nname = \"a\"\nkind = \"process\"\ncommand = \"/bin/true\"\ntier = \"D\"\n", "tier"},
		{"interpreter tool", "[[tool]]\nname = \"a\"\nkind = \"process\"\ncommand = \"/bin/sh\"\n", "interpreter"},
		{"dangerous env", "[[tool]]\nname = \"a\"\nkind = \"process\"\ncommand = \"/bin/true\"\nenv = { LD_PRELOAD = \"/x.so\" }\n", "LD_PRELOAD"},
		{"preflight without hosts", "[run]\negress = \"preflight\"\n", "egress_allow"},
		{"strict in tier B", "[run]\ntier = \"B\"\negress = \"strict\"\n", "tier C"},
		{"timeout too long", "[defaults]\ntimeout = \"11m\"\n", "timeout"},
		{"negative timeout", "[defaults]\ntimeout = \"-1s\"\n", "positive"},
		{"output over frame", "[defaults]\nmax_output = 5000000\n", "max_output"},
		{"env with =", "[[tool]]\nname = \"a\"\nkind = \"process\"\ncommand = \"/bin/true\"\nenv = { \"A=B\" = \"c\" }\n", "env"},
		{"not a file", "[[tool]]\nname = \"a\"\nkind = \"process\"\ncommand = \"/tmp\"\n", "executable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.toml))
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an ErrConfig mentioning %q", err, tt.want)
			}
		})
	}
}

func TestToolLimitsInherit(t *testing.T) {
	c, err := ParseConfig([]byte("[defaults]\nnofile = 64\n[[tool]]\nname = \"a\"\nkind = \"process\"\ncommand = \"/bin/true\"\n[tool.limits]\ntimeout = \"2s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	l := c.Tools[0].Limits
	if time.Duration(l.Timeout) != 2*time.Second || l.NoFile != 64 || l.MaxOutput != 1<<20 {
		t.Fatalf("%+v", l)
	}
}

func TestLookupCommand(t *testing.T) {
	if p, err := lookupCommand("true"); err != nil || !strings.HasSuffix(p, "/true") {
		t.Fatalf("%q %v", p, err)
	}
	for _, bad := range []string{"", "./true", "bin/true", "../bin/true"} {
		if _, err := lookupCommand(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := lookupCommand("no-such-program-anywhere"); !errors.Is(err, errNotFound) {
		t.Fatalf("missing: %v", err)
	}
}

// FuzzParseConfig: any bytes give a config or an ErrConfig, never a panic.
func FuzzParseConfig(f *testing.F) {
	f.Add(DefaultConfig())
	f.Add([]byte("agent_uids = [1]\n[[tool]]\nname = \"a\"\nkind = \"process\"\ncommand = \"/bin/true\"\n"))
	f.Add([]byte("[defaults]\ntimeout = \"1h\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil && !errors.Is(err, ErrConfig) {
			t.Fatalf("untyped error %v", err)
		}
		if err == nil && c.OutputFrameMax < minOutputFrame {
			t.Fatal("validated config below the frame minimum")
		}
	})
}

// TestDeploymentExample keeps docs/DEPLOYMENT.md true: its configuration
// example parses and validates.
func TestDeploymentExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/DEPLOYMENT.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```toml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no toml example in docs/DEPLOYMENT.md")
	}
	c, err := ParseConfig([]byte(example))
	if err != nil {
		t.Fatalf("the documented example does not load: %v", err)
	}
	if c.Budget.MaxCallsPerRun != 100 || len(c.Agents) != 1 || c.Run.Tier != "C" || len(c.Tools) != 1 {
		t.Fatalf("example decoded to %+v", c)
	}
}
