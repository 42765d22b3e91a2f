package meter

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// wazeroDir finds the wazero module's source in the module cache, whose
// test data (the spec suite, real compiler output) some tests read in
// place; nothing from it is copied into this repository.
func wazeroDir(t testing.TB) string {
	t.Helper()
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
			cache = strings.TrimSpace(string(out))
		}
	}
	dir := filepath.Join(cache, "github.com/tetratelabs/wazero@v1.12.0")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("wazero's sources not in the module cache: %v", err)
	}
	return dir
}

// specDir is the WebAssembly 2.0 spec test suite (wast2json output) that
// ships inside the wazero module.
func specDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(wazeroDir(t), "internal/integration_test/spectest/v2/testdata")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("wazero's spec tests not in the module cache: %v", err)
	}
	return dir
}

type specFile struct {
	Commands []specCommand `json:"commands"`
}

type specCommand struct {
	Type     string      `json:"type"`
	Line     int         `json:"line"`
	Filename string      `json:"filename"`
	Name     string      `json:"name"`
	Action   *specAction `json:"action"`
}

type specAction struct {
	Type   string      `json:"type"`
	Module string      `json:"module"`
	Field  string      `json:"field"`
	Args   []specValue `json:"args"`
}

type specValue struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// specArgs decodes invocation arguments; ok is false for v128 and anything
// else this test does not pass.
func specArgs(vs []specValue) (args []uint64, ok bool) {
	for _, v := range vs {
		s, isString := v.Value.(string)
		if !isString {
			return nil, false
		}
		switch v.Type {
		case "i32", "i64", "f32", "f64":
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, false
			}
			args = append(args, n)
		case "externref", "funcref":
			if s == "null" {
				args = append(args, 0)
				continue
			}
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, false
			}
			args = append(args, n+1) // non-null
		default:
			return nil, false
		}
	}
	return args, true
}

// TestSpecDifferential instruments every module of the WebAssembly 2.0 spec
// test suite (SIMD excluded) and replays the suite's invocations on the
// plain and the instrumented instance side by side, on both engines: results
// and error classes must agree. Modules wazero refuses (once their custom
// sections, which Instrument drops unread, are removed) must be refused by
// Instrument too. Modules that import are skipped (they link against
// "spectest" and registered modules).
func TestSpecDifferential(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spec suite skipped in -short mode")
	}
	dir := specDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { specDifferential(t, e, dir, files) })
	}
}

func specDifferential(t *testing.T, e engine, dir string, files []string) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, e.config().
		WithCoreFeatures(Features).WithMemoryLimitPages(memoryLimitPages))
	defer rt.Close(ctx)
	if err := NewHostModule(ctx, rt); err != nil {
		t.Fatal(err)
	}
	var modules, instrumented, invocations, refused int
	for _, file := range files {
		if strings.HasPrefix(filepath.Base(file), "simd") {
			continue
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var spec specFile
		if err := json.Unmarshal(raw, &spec); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var plain, metered *instance
		closeAll := func() {
			for _, in := range []*instance{plain, metered} {
				if in != nil {
					in.mod.Close(ctx)
				}
			}
			plain, metered = nil, nil
		}
		for _, c := range spec.Commands {
			where := filepath.Base(file) + ":" + strconv.Itoa(c.Line)
			switch c.Type {
			case "module", "assert_invalid", "assert_malformed", "assert_uninstantiable", "assert_unlinkable":
				if !strings.HasSuffix(c.Filename, ".wasm") {
					continue
				}
				if c.Type == "module" {
					closeAll()
				}
				module, err := os.ReadFile(filepath.Join(dir, c.Filename))
				if err != nil {
					t.Fatal(err)
				}
				modules++
				out, _, err := Instrument(module, Config{})
				if verr := validate(stripCustom(module)); verr != nil {
					if err == nil {
						t.Errorf("%s: wazero refuses the module (%v) but Instrument accepted it", where, verr)
					}
					refused++
					continue
				}
				if err != nil {
					t.Errorf("%s: %v", where, err)
					continue
				}
				instrumented++
				if c.Type != "module" {
					continue
				}
				p, perr := specInstantiate(ctx, rt, module, nil)
				m, merr := specInstantiate(ctx, rt, out, NewMeter(hugeBudget))
				if (perr == nil) != (merr == nil) {
					t.Errorf("%s: instantiate: plain %v, metered %v", where, perr, merr)
				}
				if perr == nil && merr == nil {
					plain, metered = p, m
				} else {
					for _, in := range []*instance{p, m} {
						if in != nil {
							in.mod.Close(ctx)
						}
					}
				}
			case "assert_return", "assert_trap", "assert_exhaustion", "action":
				a := c.Action
				if plain == nil || a == nil || a.Module != "" || a.Type != "invoke" {
					continue
				}
				args, ok := specArgs(a.Args)
				if !ok {
					continue
				}
				invocations++
				want, wantErr := plain.specCall(a.Field, args)
				got, gotErr := metered.specCall(a.Field, args)
				wk, wt := Classify(wantErr)
				gk, gt := Classify(gotErr)
				if wk != gk || wt != gt {
					t.Errorf("%s %s%v: plain %v %s (%v), metered %v %s (%v)", where, a.Field, args, wk, wt, wantErr, gk, gt, gotErr)
					continue
				}
				if !sameResults(plain.mod.ExportedFunction(a.Field), want, got) {
					t.Errorf("%s %s%v = %v metered, %v plain", where, a.Field, args, got, want)
				}
			}
		}
		closeAll()
	}
	t.Logf("%d modules: %d instrumented, %d refused by wazero and Instrument; %d invocations compared",
		modules, instrumented, refused, invocations)
	if invocations < 10000 {
		t.Errorf("only %d invocations compared", invocations)
	}
}

// specInstantiate instantiates a module that imports nothing but the
// instrumentation's host module; errSkip otherwise.
func specInstantiate(ctx context.Context, rt wazero.Runtime, module []byte, m *Meter) (*instance, error) {
	if m != nil {
		ctx = WithMeter(ctx, m)
	}
	cm, err := rt.CompileModule(ctx, module)
	if err != nil {
		return nil, err
	}
	defer cm.Close(ctx)
	for _, imp := range cm.ImportedFunctions() {
		if mod, _, _ := imp.Import(); mod != HostModuleName {
			return nil, errSkip
		}
	}
	if len(cm.ImportedMemories()) > 0 {
		return nil, errSkip
	}
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return nil, err
	}
	if m != nil {
		if err := m.Bind(mod); err != nil {
			return nil, err
		}
	}
	return &instance{mod: mod, meter: m, ctx: ctx}, nil
}

var errSkip = errors.New("imports something")

func (in *instance) specCall(name string, args []uint64) ([]uint64, error) {
	f := in.mod.ExportedFunction(name)
	if f == nil {
		return nil, errors.New("no such export")
	}
	if in.meter != nil {
		if err := in.meter.Begin(); err != nil {
			return nil, err
		}
	}
	return f.Call(in.ctx, args...)
}

// sameResults compares results bit for bit, except references, which are
// addresses private to each instance: only their nullness is compared.
func sameResults(f api.Function, a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	types := f.Definition().ResultTypes()
	for i := range a {
		if i < len(types) && (types[i] == api.ValueTypeExternref || types[i] == valFuncref) {
			if (a[i] == 0) != (b[i] == 0) {
				return false
			}
			continue
		}
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
