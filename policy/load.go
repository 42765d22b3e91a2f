package policy

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
)

//go:embed default/*.cedar
var defaultFS embed.FS

// DefaultSource names the embedded default set in positions and messages.
const DefaultSource = "(embedded default)"

// Limits on what a policy directory may hold.
const (
	maxPolicyFiles    = 1024
	maxPolicyFileSize = 4 << 20
	maxPolicyIDLen    = 128
)

// ErrInvalid is matched (errors.Is) by every error from loading a policy set.
var ErrInvalid = errors.New("invalid policy set")

// Problem is one thing wrong with a policy set. Line and Column are 1-based
// and 0 when the problem is not at a place in a file (an unreadable
// directory). Validation problems are reported at the first line of the
// policy they concern.
type Problem struct {
	File   string
	Line   int
	Column int
	Msg    string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return fmt.Sprintf("%s: %s", p.File, p.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Column, p.Msg)
}

// LoadError lists every problem found in a policy set, in file order.
type LoadError struct {
	Source   string // the directory, or DefaultSource
	Problems []Problem
}

func (e *LoadError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %s", ErrInvalid, e.Source)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *LoadError) Is(target error) bool { return target == ErrInvalid }

// compiled is one loaded policy.
type compiled struct {
	id     types.PolicyID
	policy *cedar.Policy
	pos    cedar.Position
	reason string // the @reason annotation
	scope  policyScope
}

// policySet is an immutable, validated set of policies with its index.
type policySet struct {
	source   string
	policies []*compiled // sorted by id
	byID     map[types.PolicyID]*compiled
	index    *index
}

// All yields every policy: the plain, unindexed evaluation.
func (s *policySet) All() iter.Seq2[types.PolicyID, *cedar.Policy] {
	return func(yield func(types.PolicyID, *cedar.Policy) bool) {
		for _, c := range s.policies {
			if !yield(c.id, c.policy) {
				return
			}
		}
	}
}

type policyFile struct {
	name string
	data []byte
}

// load reads every *.cedar file directly in dir (names starting with '.'
// are skipped), or the embedded default set when dir is "", then parses,
// identifies and validates every policy. Any problem fails the whole set.
func load(dir string) (*policySet, error) {
	source := dir
	var (
		files []policyFile
		probs []Problem
	)
	if dir == "" {
		source = DefaultSource
		files = readDefault()
	} else {
		files, probs = readDir(dir)
	}
	if len(probs) > 0 {
		return nil, &LoadError{Source: source, Problems: probs}
	}
	return compileFiles(source, files)
}

func readDefault() []policyFile {
	entries, err := fs.Glob(defaultFS, "default/*.cedar")
	if err != nil {
		panic(err) // a constant pattern
	}
	slices.Sort(entries)
	files := make([]policyFile, 0, len(entries))
	for _, name := range entries {
		data, err := defaultFS.ReadFile(name)
		if err != nil {
			panic(err) // embedded
		}
		files = append(files, policyFile{name: path.Base(name), data: data})
	}
	return files
}

var fileNameRE = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*\.cedar$`)

func readDir(dir string) ([]policyFile, []Problem) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, []Problem{{File: dir, Msg: err.Error()}}
	}
	if !fi.IsDir() {
		return nil, []Problem{{File: dir, Msg: "not a directory"}}
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return nil, []Problem{{File: dir, Msg: "the directory is writable by everyone"}}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, []Problem{{File: dir, Msg: err.Error()}}
	}
	var (
		files []policyFile
		probs []Problem
	)
	for _, e := range entries { // sorted by name
		name := e.Name()
		if !strings.HasSuffix(name, ".cedar") || strings.HasPrefix(name, ".") {
			continue
		}
		if len(files)+len(probs) >= maxPolicyFiles {
			probs = append(probs, Problem{File: dir, Msg: fmt.Sprintf("more than %d policy files", maxPolicyFiles)})
			break
		}
		if !fileNameRE.MatchString(name) {
			probs = append(probs, Problem{File: name, Msg: "file names may hold only letters, digits, '.', '_' and '-'"})
			continue
		}
		full := filepath.Join(dir, name)
		fi, err := os.Stat(full)
		switch {
		case err != nil:
			probs = append(probs, Problem{File: name, Msg: err.Error()})
			continue
		case !fi.Mode().IsRegular():
			probs = append(probs, Problem{File: name, Msg: "not a regular file"})
			continue
		case fi.Mode().Perm()&0o002 != 0:
			probs = append(probs, Problem{File: name, Msg: "writable by everyone"})
			continue
		case fi.Size() > maxPolicyFileSize:
			probs = append(probs, Problem{File: name, Msg: fmt.Sprintf("larger than %d bytes", maxPolicyFileSize)})
			continue
		}
		data, err := os.ReadFile(full)
		if err != nil {
			probs = append(probs, Problem{File: name, Msg: err.Error()})
			continue
		}
		files = append(files, policyFile{name: name, data: data})
	}
	if len(files) == 0 && len(probs) == 0 {
		probs = append(probs, Problem{File: dir, Msg: "no *.cedar files"})
	}
	return files, probs
}

// compileFiles parses, identifies and validates the policies of files (in
// order) and indexes them.
func compileFiles(source string, files []policyFile) (*policySet, error) {
	sch := loadedSchema()
	var probs []Problem
	set := &policySet{source: source, byID: map[types.PolicyID]*compiled{}}
	for _, f := range files {
		list, err := cedar.NewPolicyListFromBytes(f.name, f.data)
		if err != nil {
			probs = append(probs, parseProblem(f.name, err))
			continue
		}
		for _, p := range list {
			pos := p.Position()
			at := func(msg string) Problem {
				return Problem{File: f.name, Line: pos.Line, Column: pos.Column, Msg: msg}
			}
			id, err := policyID(f.name, p)
			if err != nil {
				probs = append(probs, at(err.Error()))
				continue
			}
			if prev, dup := set.byID[id]; dup {
				probs = append(probs, at(fmt.Sprintf("policy id %q is also used at %s:%d:%d", id, prev.pos.Filename, prev.pos.Line, prev.pos.Column)))
				continue
			}
			ast := (*xast.Policy)(p.AST())
			bad := false
			if err := sch.validator.Policy(string(id), ast); err != nil {
				var seen []string
				for _, e := range flatten(err) {
					// The validator repeats a problem for every action the
					// policy applies to; say it once.
					msg := strings.TrimPrefix(e.Error(), "for policy `"+string(id)+"`, ")
					msg = forActionRE.ReplaceAllString(msg, "")
					if !slices.Contains(seen, msg) {
						seen = append(seen, msg)
						probs = append(probs, at(fmt.Sprintf("policy %q: %s", id, msg)))
					}
				}
				bad = true
			}
			for _, e := range sch.checkEnumLiterals(ast) {
				probs = append(probs, at(fmt.Sprintf("policy %q: %s", id, e)))
				bad = true
			}
			if bad {
				continue
			}
			c := &compiled{id: id, policy: p, pos: pos, scope: scopeOf(ast)}
			if r, ok := p.Annotations()["reason"]; ok {
				c.reason = string(r)
			}
			set.byID[id] = c
			set.policies = append(set.policies, c)
		}
	}
	if len(probs) > 0 {
		return nil, &LoadError{Source: source, Problems: probs}
	}
	slices.SortFunc(set.policies, func(a, b *compiled) int { return strings.Compare(string(a.id), string(b.id)) })
	set.index = newIndex(set.policies)
	return set, nil
}

// policyID is the policy's @id annotation, or "<file>:<line>:<column>" of
// where the policy starts (its first annotation, or its effect).
func policyID(file string, p *cedar.Policy) (types.PolicyID, error) {
	v, ok := p.Annotations()["id"]
	if !ok {
		pos := p.Position()
		return types.PolicyID(fmt.Sprintf("%s:%d:%d", file, pos.Line, pos.Column)), nil
	}
	id := string(v)
	if id == "" || len(id) > maxPolicyIDLen || strings.IndexFunc(id, func(r rune) bool { return !idRune(r) }) >= 0 {
		return "", fmt.Errorf("@id %q: 1 to %d letters, digits, '.', '_', '-', ':' or '/'", id, maxPolicyIDLen)
	}
	return types.PolicyID(id), nil
}

func idRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '_' || r == '-' || r == ':' || r == '/'
}

// inputPosRE finds the position in cedar-go's parse errors, which call every
// file "<input>": "parse error at <input>:2:14 \";\": invalid primary" or
// "<input>:2:9: literal not terminated".
var inputPosRE = regexp.MustCompile(`(?:parse error at )?<input>:(\d+):(\d+):? ?`)

func parseProblem(file string, err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "parser error: ")
	m := inputPosRE.FindStringSubmatchIndex(msg)
	if m == nil {
		return Problem{File: file, Msg: msg}
	}
	line, _ := strconv.Atoi(msg[m[2]:m[3]])
	col, _ := strconv.Atoi(msg[m[4]:m[5]])
	rest := msg[:m[0]] + msg[m[1]:]
	return Problem{File: file, Line: line, Column: col, Msg: rest}
}

var forActionRE = regexp.MustCompile(` for Action::"[^"]*"`)

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// checkEnumLiterals reports enum entity literals whose value the schema does
// not declare (Tier::"D"): cedar-go's validator types them but does not
// check the value, so such a comparison would silently never match.
func (s *schemaInfo) checkEnumLiterals(p *xast.Policy) []string {
	var bad []string
	check := func(uid types.EntityUID) {
		if vals, ok := s.enums[uid.Type]; ok && !vals[uid] {
			bad = append(bad, fmt.Sprintf("%s is not a value of enum %s", uid, uid.Type))
		}
	}
	var checkValue func(v types.Value)
	checkValue = func(v types.Value) {
		switch v := v.(type) {
		case types.EntityUID:
			check(v)
		case types.Set:
			for e := range v.All() {
				checkValue(e)
			}
		case types.Record:
			for _, e := range v.All() {
				checkValue(e)
			}
		}
	}
	for _, sc := range []xast.IsScopeNode{p.Principal, p.Action, p.Resource} {
		switch sc := sc.(type) {
		case xast.ScopeTypeEq:
			check(sc.Entity)
		case xast.ScopeTypeIn:
			check(sc.Entity)
		case xast.ScopeTypeIsIn:
			check(sc.Entity)
		case xast.ScopeTypeInSet:
			for _, e := range sc.Entities {
				check(e)
			}
		}
	}
	for _, c := range p.Conditions {
		xast.Inspect(xast.NewNode(c.Body), func(n xast.IsNode) bool {
			if v, ok := n.(xast.NodeValue); ok {
				checkValue(v.Value)
			}
			return true
		})
	}
	return bad
}
