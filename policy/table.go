package policy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// TestTable is a table of calls with the decisions expected of a policy set,
// so that operators can unit-test their policies in CI (`stockade policy
// test FILE`). It is TOML, decoded strictly; docs/POLICY.md shows one:
//
//	dir = "policies"             # relative to the table; absent: the embedded default
//	now = 2026-03-02T10:00:00Z   # time of every case that sets none
//
//	[[case]]
//	name = "alice runs ls in her workspace"
//	expect = "allow"             # or "deny"
//	policies = ["default.local-commands"]   # optional: the exact deciding ids
//	principal = "alice"
//	groups = ["local"]
//	tool = "process.run"
//	tool_capabilities = ["process.exec"]
//	actions = ["process.exec"]
//	[case.context]
//	workspace = "/srv/ws/alice"
type TestTable struct {
	// Dir holds the policies under test, relative to the table's file. Empty
	// means the embedded default set.
	Dir   string     `toml:"dir"`
	Now   time.Time  `toml:"now"`
	Cases []TestCase `toml:"case"`
}

// TestCase is one row: a call and the decision it must get.
type TestCase struct {
	Name   string `toml:"name"`
	Expect string `toml:"expect"`
	// Policies, when present, must equal the decision's policy ids (sorted);
	// `policies = []` asserts a default deny.
	Policies *[]string `toml:"policies"`
	CallSpec
}

// CaseResult is the outcome of one case.
type CaseResult struct {
	Name     string
	Pass     bool
	Decision Decision
	// Problem says why the case failed: a mismatch, or a request that
	// could not be built.
	Problem string
}

const maxTableSize = 4 << 20

// LoadTable reads a test table, strictly: an unknown key is an error.
func LoadTable(path string) (*TestTable, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > maxTableSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxTableSize)
	}
	var t TestTable
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			return nil, fmt.Errorf("%s: %s", path, strings.TrimSpace(strict.String()))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%s:%d:%d: %v", path, row, col, de)
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(t.Cases) == 0 {
		return nil, fmt.Errorf("%s: no [[case]]", path)
	}
	for i, c := range t.Cases {
		if c.Expect != "allow" && c.Expect != "deny" {
			return nil, fmt.Errorf("%s: case %d (%q): expect must be \"allow\" or \"deny\"", path, i+1, c.Name)
		}
	}
	if t.Dir != "" && !filepath.IsAbs(t.Dir) {
		t.Dir = filepath.Join(filepath.Dir(path), t.Dir)
	}
	return &t, nil
}

// Run decides every case with e and compares. now is the time of cases
// that set none, when the table sets none either.
func (t *TestTable) Run(e *Engine, now time.Time) []CaseResult {
	if !t.Now.IsZero() {
		now = t.Now
	}
	out := make([]CaseResult, 0, len(t.Cases))
	for i := range t.Cases {
		c := &t.Cases[i]
		r := CaseResult{Name: c.Name}
		if r.Name == "" {
			r.Name = fmt.Sprintf("case %d", i+1)
		}
		req, err := c.Request(now)
		if err != nil {
			r.Problem = "cannot build the request: " + err.Error()
			out = append(out, r)
			continue
		}
		r.Decision = e.Decide(req)
		got := "deny"
		if r.Decision.Allowed() {
			got = "allow"
		}
		switch {
		case got != c.Expect:
			r.Problem = fmt.Sprintf("expected %s, got %s", c.Expect, r.Decision)
		case c.Policies != nil && !slices.Equal(sortedUnique(slices.Clone(*c.Policies)), r.Decision.policies):
			r.Problem = fmt.Sprintf("expected policies %v, got %v", *c.Policies, r.Decision.policies)
		default:
			r.Pass = true
		}
		out = append(out, r)
	}
	return out
}
