//go:build !wasip1

package sdk

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/executor/wasm"
	"github.com/stockade-dev/stockade/verifier/audit"
	"github.com/stockade-dev/stockade/verifier/skill"
)

// abiSource is the host ABI's definition, which this package implements
// the guest side of.
const abiSource = "../executor/wasm/abi.go"

// TestABIConstants: the SDK's copies of the ABI's numbers equal the
// host's. (The SDK cannot import executor/wasm: it is built for wasip1.)
func TestABIConstants(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		sdk, host int64
	}{
		{"ABIVersion", abiVersion, wasm.ABIVersion},
		{"KindHTTP", kindHTTP, wasm.KindHTTP},
		{"KindSecret", kindSecret, wasm.KindSecret},
		{"KindKV", kindKV, wasm.KindKV},
		{"KindChannel", kindChannel, wasm.KindChannel},
		{"ErrDenied", codeDenied, int64(wasm.ErrDenied)},
		{"ErrNotFound", codeNotFound, int64(wasm.ErrNotFound)},
		{"ErrQuota", codeQuota, int64(wasm.ErrQuota)},
		{"ErrInvalid", codeInvalid, int64(wasm.ErrInvalid)},
		{"ErrUnavailable", codeUnavailable, int64(wasm.ErrUnavailable)},
		{"LogDebug", int64(LevelDebug), wasm.LogDebug},
		{"LogInfo", int64(LevelInfo), wasm.LogInfo},
		{"LogWarn", int64(LevelWarn), wasm.LogWarn},
		{"LogError", int64(LevelError), wasm.LogError},
	} {
		if c.sdk != c.host {
			t.Errorf("%s: sdk %d, executor/wasm %d", c.name, c.sdk, c.host)
		}
	}
	if wasm.HostModule != "stockade" {
		t.Errorf("HostModule = %q; abi_wasip1.go imports from \"stockade\"", wasm.HostModule)
	}
	// codeNotInSkill is no ABI code and fits the i32 that log returns.
	if codeNotInSkill >= -5 || int64(int32(codeNotInSkill)) != codeNotInSkill {
		t.Errorf("codeNotInSkill = %d", codeNotInSkill)
	}
}

// wasmSig is a function type in the ABI comment's notation.
type wasmSig struct{ params, results []string }

func (s wasmSig) String() string {
	return "(" + strings.Join(s.params, ", ") + ") -> (" + strings.Join(s.results, ", ") + ")"
}

func (s wasmSig) equal(o wasmSig) bool {
	return slices.Equal(s.params, o.params) && slices.Equal(s.results, o.results)
}

var sigLine = regexp.MustCompile(`^\s*([a-z_]+|<tool export>)\(([^)]*)\)(?:\s*->\s*(i32|i64))?`)

// abiSignatures reads the function types the ABI comment draws, host
// functions and guest exports alike, keyed by name ("<tool export>" for a
// tool).
func abiSignatures(t testing.TB) map[string]wasmSig {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), abiSource, nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	sigs := map[string]wasmSig{}
	for _, line := range strings.Split(f.Doc.Text(), "\n") {
		m := sigLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var s wasmSig
		for _, p := range strings.Split(m[2], ",") {
			if f := strings.Fields(p); len(f) == 2 {
				s.params = append(s.params, f[1])
			}
		}
		if m[3] != "" {
			s.results = []string{m[3]}
		}
		sigs[m[1]] = s
	}
	return sigs
}

// abiFunctions returns the ABI's host function names: the values of the
// Fn* constants of abi.go.
func abiFunctions(t testing.TB) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), abiSource, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			for i, n := range v.Names {
				if strings.HasPrefix(n.Name, "Fn") && i < len(v.Values) {
					lit, ok := v.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s is not a string literal", n.Name)
					}
					name, _ := strconv.Unquote(lit.Value)
					names = append(names, name)
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// TestABIComment: the ABI comment draws every Fn* function, so that the
// other tests have a signature to hold imports to.
func TestABIComment(t *testing.T) {
	t.Parallel()
	sigs := abiSignatures(t)
	fns := abiFunctions(t)
	if len(fns) < 11 {
		t.Fatalf("found %d Fn* constants in %s: %q", len(fns), abiSource, fns)
	}
	for _, name := range append(fns, wasm.ExportAlloc, wasm.ExportInitialize, "<tool export>") {
		if _, ok := sigs[name]; !ok {
			t.Errorf("%s: no signature for %s in the package comment", abiSource, name)
		}
	}
}

// TestWasmImports holds the //go:wasmimport declarations of abi_wasip1.go
// to the ABI: every host function imported exactly once, from module
// "stockade", with the ABI's signature (Go's wasm mapping: a string is
// (i32 ptr, i32 len), a pointer is i32).
func TestWasmImports(t *testing.T) {
	t.Parallel()
	sigs := abiSignatures(t)
	f, err := parser.ParseFile(token.NewFileSet(), "abi_wasip1.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	wasmTypes := func(fl *ast.FieldList) []string {
		var out []string
		if fl == nil {
			return out
		}
		for _, fd := range fl.List {
			var ts []string
			switch ty := fd.Type.(type) {
			case *ast.StarExpr:
				ts = []string{"i32"}
			case *ast.Ident:
				switch ty.Name {
				case "int32", "uint32", "bool":
					ts = []string{"i32"}
				case "int64", "uint64":
					ts = []string{"i64"}
				case "string":
					ts = []string{"i32", "i32"}
				}
			}
			if ts == nil {
				t.Fatalf("a parameter type the test does not map: %T", fd.Type)
			}
			for range max(len(fd.Names), 1) {
				out = append(out, ts...)
			}
		}
		return out
	}
	var imported []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Doc == nil {
			continue
		}
		for _, c := range fd.Doc.List {
			fields := strings.Fields(c.Text)
			if len(fields) == 0 || fields[0] != "//go:wasmimport" {
				continue
			}
			if len(fields) != 3 || fields[1] != wasm.HostModule {
				t.Errorf("%s: %s", fd.Name.Name, c.Text)
				continue
			}
			name := fields[2]
			imported = append(imported, name)
			got := wasmSig{wasmTypes(fd.Type.Params), wasmTypes(fd.Type.Results)}
			if want, ok := sigs[name]; !ok {
				t.Errorf("%s imports %s, which the ABI does not define", fd.Name.Name, name)
			} else if !got.equal(want) {
				t.Errorf("%s: %s, the ABI says %s", name, got, want)
			}
		}
	}
	slices.Sort(imported)
	if fns := abiFunctions(t); !slices.Equal(imported, fns) {
		t.Errorf("imports %q\nABI     %q", imported, fns)
	}
}

// TestAuditImportsMatchRuntime: the verifier's audit allows, for a skill
// with every capability, exactly the host functions the runtime provides
// (executor/wasm.Imports), as a set of module and name. verifier/audit
// repeats the runtime's names (roles do not import each other); a function
// added to one and not the other fails here.
func TestAuditImportsMatchRuntime(t *testing.T) {
	t.Parallel()
	runtime := map[audit.Import]bool{}
	for _, i := range wasm.Imports() {
		imp := audit.Import{Module: i.Module, Name: i.Name}
		if runtime[imp] {
			t.Errorf("wasm.Imports lists %s.%s twice", i.Module, i.Name)
		}
		runtime[imp] = true
	}
	all := audit.HostImports(skill.Capabilities{
		HTTP:     []string{"example.com"},
		Secrets:  []string{"token"},
		Storage:  true,
		Channels: []string{"general"},
	})
	for imp := range all {
		if !runtime[imp] {
			t.Errorf("audit allows %s.%s, which executor/wasm does not provide", imp.Module, imp.Name)
		}
	}
	for imp := range runtime {
		if !all.Allows(imp) {
			t.Errorf("executor/wasm provides %s.%s, which audit never allows", imp.Module, imp.Name)
		}
	}
}
