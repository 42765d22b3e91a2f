package meter

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"

	enc "github.com/stockade-dev/stockade/wasm/meter/internal/wasmenc"
)

// voidModule is a module with one function () -> () exported as "run",
// whose instructions (without the final end) are code.
func voidModule(code ...[]byte) []byte {
	m := enc.Module{
		Types:    []enc.FuncType{{}},
		Funcs:    []enc.Func{{Type: 0, Code: enc.Code(code...)}},
		Memories: [][]byte{enc.Limits(1, nil)},
		Exports:  []enc.Export{{Name: "run", Kind: enc.KindFunc, Index: 0}},
	}
	return m.Encode()
}

// refusalCases are modules Instrument must refuse, each with the error
// class and, for ErrUnsupported, the feature. They also seed FuzzInstrument.
var refusalCases = []struct {
	name    string
	module  func(t testing.TB) []byte
	class   error
	feature string
}{
	{"simd fixture", fix("refuse_simd"), ErrUnsupported, FeatureSIMD},
	{"atomics fixture", fix("refuse_atomics"), ErrUnsupported, FeatureAtomics},
	{"tail call fixture", fix("refuse_tail_call"), ErrUnsupported, FeatureTailCalls},
	{"reserved export", fix("refuse_reserved_export"), ErrReserved, ""},
	{"reserved import", fix("refuse_reserved_import"), ErrReserved, ""},
	{"simd opcode", built(voidModule(enc.Op(0xfd, 0x0c), make([]byte, 16), enc.Drop)), ErrUnsupported, FeatureSIMD},
	{"atomic fence", built(voidModule(enc.Op(0xfe, 0x03, 0x00))), ErrUnsupported, FeatureAtomics},
	{"return_call_indirect", built(voidModule(enc.Op(0x13, 0, 0))), ErrUnsupported, FeatureTailCalls},
	{"throw", built(voidModule(enc.Op(0x08, 0))), ErrUnsupported, FeatureExceptions},
	{"try_table", built(voidModule(enc.Op(0x1f, 0x40, 0), enc.End)), ErrUnsupported, FeatureExceptions},
	{"call_ref", built(voidModule(enc.Op(0x14, 0))), ErrUnsupported, FeatureGC},
	{"gc prefix", built(voidModule(enc.Op(0xfb, 0x00, 0))), ErrUnsupported, FeatureGC},
	{"unknown opcode", built(voidModule(enc.Op(0xff))), ErrUnsupported, FeatureUnknown},
	{"unknown 0xfc opcode", built(voidModule(enc.Op(0xfc, 18))), ErrUnsupported, FeatureUnknown},
	{"memarg with memory index", built(voidModule(enc.I32Const(0), enc.Op(0x28, 0x40, 1, 0), enc.Drop)), ErrUnsupported, FeatureMultiMemory},
	{"v128 local", built((&enc.Module{
		Types: []enc.FuncType{{}},
		Funcs: []enc.Func{{Type: 0, Locals: []enc.Local{{N: 1, Type: enc.V128}}, Code: enc.Code()}},
	}).Encode()), ErrUnsupported, FeatureSIMD},
	{"shared memory", built((&enc.Module{Memories: [][]byte{{3, 1, 1}}}).Encode()), ErrUnsupported, FeatureAtomics},
	{"memory64", built((&enc.Module{Memories: [][]byte{{4, 1}}}).Encode()), ErrUnsupported, FeatureMemory64},
	{"two memories", built((&enc.Module{Memories: [][]byte{enc.Limits(1, nil), enc.Limits(1, nil)}}).Encode()), ErrUnsupported, FeatureMultiMemory},
	{"extended const", built((&enc.Module{Globals: []enc.Global{{Type: enc.I32, Init: enc.Cat(enc.I32Const(1), enc.I32Const(2), enc.I32Add, enc.End)}}}).Encode()), ErrUnsupported, FeatureExtendedConst},
	{"tag section", built(enc.Cat(enc.Header, enc.Section(13, enc.Vec()))), ErrUnsupported, FeatureExceptions},
	{"too many locals", built((&enc.Module{
		Types: []enc.FuncType{{}},
		Funcs: []enc.Func{{Type: 0, Locals: []enc.Local{{N: MaxLocals, Type: enc.I32}, {N: 1, Type: enc.I64}}, Code: enc.Code()}},
	}).Encode()), ErrLimit, ""},
	{"empty", built(nil), ErrMalformed, ""},
	{"bad version", built([]byte("\x00asm\x02\x00\x00\x00")), ErrMalformed, ""},
	{"truncated section", built(enc.Cat(enc.Header, []byte{1, 5, 1})), ErrMalformed, ""},
	{"sections out of order", built(enc.Cat(enc.Header, enc.Section(enc.SecMemory, enc.Vec()), enc.Section(enc.SecType, enc.Vec()))), ErrMalformed, ""},
	{"section repeated", built(enc.Cat(enc.Header, enc.Section(enc.SecType, enc.Vec()), enc.Section(enc.SecType, enc.Vec()))), ErrMalformed, ""},
	{"overlong LEB128", built(enc.Cat(enc.Header, []byte{1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00})), ErrMalformed, ""},
	{"count past the end", built(enc.Cat(enc.Header, enc.Section(enc.SecType, []byte{0xff, 0x01}))), ErrMalformed, ""},
	{"unknown section", built(enc.Cat(enc.Header, enc.Section(14, nil))), ErrMalformed, ""},
	{"body without end", built(voidModule(enc.Op(0x01))[:len(voidModule(enc.Op(0x01)))-1]), ErrMalformed, ""},
	{"bytes after the end", built(voidModule(enc.End, enc.Nop)), ErrMalformed, ""},
	{"else outside if", built(voidModule(enc.Else)), ErrMalformed, ""},
	{"branch too deep", built(voidModule(enc.Br(1))), ErrMalformed, ""},
	{"function without body", built(enc.Cat(enc.Header,
		enc.Section(enc.SecType, enc.Vec([]byte{0x60, 0, 0})), enc.Section(enc.SecFunction, enc.Vec(enc.ULEB(0))))), ErrMalformed, ""},
	// Decodes, but wazero refuses: global 0 does not exist in the original,
	// though it would be "used" after instrumentation.
	{"names an injected global", built(voidModule(enc.I64Const(0), enc.GlobalSet(0))), ErrInvalid, ""},
	{"stack mismatch", built(voidModule(enc.I32Add)), ErrInvalid, ""},
}

func fix(name string) func(testing.TB) []byte {
	return func(t testing.TB) []byte { return fixture(t, name) }
}

func built(b []byte) func(testing.TB) []byte {
	return func(testing.TB) []byte { return b }
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range refusalCases {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := Instrument(tc.module(t), Config{})
			if !errors.Is(err, tc.class) {
				t.Fatalf("error %v, want %v", err, tc.class)
			}
			if out != nil {
				t.Error("output returned with an error")
			}
			var fe *FeatureError
			if errors.As(err, &fe) != (tc.feature != "") || (fe != nil && fe.Feature != tc.feature) {
				t.Errorf("error %v, want feature %q", err, tc.feature)
			}
		})
	}
}

// TestValidationFirst: a module that names the global index the
// instrumentation appends must be refused before it could write "used". The
// rewrite alone would give the attack a valid module, which is why
// Instrument validates the original.
func TestValidationFirst(t *testing.T) {
	t.Parallel()
	attack := voidModule(enc.I64Const(0), enc.GlobalSet(0)) // used = 0: unlimited fuel
	out, _, _, err := rewrite(attack, Config{})
	if err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	if err := validate(out); err != nil {
		t.Fatalf("the premise failed: the rewritten attack does not validate: %v", err)
	}
	if _, _, err := Instrument(attack, Config{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Instrument: %v, want ErrInvalid", err)
	}
}

// TestConfig: MaxDepth is range-checked and reported.
func TestConfig(t *testing.T) {
	t.Parallel()
	module := fixture(t, "fib")
	if _, _, err := Instrument(module, Config{MaxDepth: 1 << 31}); !errors.Is(err, ErrConfig) {
		t.Errorf("MaxDepth 2^31: %v", err)
	}
	_, info, err := Instrument(module, Config{})
	if err != nil || info.MaxDepth != DefaultMaxDepth || info.Schedule != Schedule {
		t.Errorf("default: %+v, %v", info, err)
	}
	if len(module) > MaxModuleBytes {
		t.Fatal("fixture too large")
	}
	big := make([]byte, MaxModuleBytes+1)
	copy(big, enc.Header)
	if _, _, err := Instrument(big, Config{}); !errors.Is(err, ErrLimit) {
		t.Errorf("over MaxModuleBytes: %v", err)
	}
}

// TestInfo checks the counts Instrument reports for a known fixture.
func TestInfo(t *testing.T) {
	t.Parallel()
	m := enc.Module{
		Types:   []enc.FuncType{{}},
		Funcs:   []enc.Func{{Type: 0, Code: enc.Code()}},
		Customs: [][]byte{enc.Cat(enc.Name("notes"), []byte{1, 2, 3}), enc.Name("producers")},
	}
	out, info, err := Instrument(m.Encode(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Dropped != 2 || info.Functions != 1 || info.Blocks != 0 || info.Tracked != 0 {
		t.Errorf("info %+v", info)
	}
	if info.OutBytes != len(out) || info.Growth <= 1 {
		t.Errorf("info %+v for %d bytes out", info, len(out))
	}
	if strings.Contains(string(out), "producers") {
		t.Error("custom section kept")
	}

	_, info, err = Instrument(fixture(t, "fib"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Entry block, then arm, else arm; the block after the if is empty.
	if info.Blocks != 3 || info.Tracked != 1 || info.Dynamic != 0 || info.Hoisted != 0 {
		t.Errorf("fib: %+v", info)
	}

	_, info, err = Instrument(fixture(t, "bench_calls"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	// $add and $mix are hoisted; $step and run track the depth.
	if info.Hoisted != 2 || info.Tracked != 2 || info.Functions != 4 {
		t.Errorf("bench_calls: %+v", info)
	}
}

// elementsModule has every element segment encoding, ref.func in a global
// initialiser and a start function, with two imported functions ahead of
// the defined ones so that every defined index moves. probe(i) calls slot
// i of table 0 and adds table 1's slot i if not null.
func elementsModule() []byte {
	const (
		fA     = 2 // returns 10; 0 and 1 are imports
		fB     = 3 // returns 20
		fC     = 4 // returns 30
		fStart = 5 // computes global 1
		fProbe = 6
	)
	ret := func(v int32) enc.Func { return enc.Func{Type: 1, Code: enc.Code(enc.I32Const(v))} }
	offset := func(v int32) []byte { return enc.Cat(enc.I32Const(v), enc.End) }
	refFunc := func(f uint32) []byte { return enc.Cat(enc.RefFunc(f), enc.End) }
	funcs := func(fs ...uint32) []byte {
		var items [][]byte
		for _, f := range fs {
			items = append(items, enc.ULEB(uint64(f)))
		}
		return enc.Vec(items...)
	}
	exprs := func(fs ...uint32) []byte {
		var items [][]byte
		for _, f := range fs {
			items = append(items, refFunc(f))
		}
		return enc.Vec(items...)
	}
	max := uint32(16)
	m := enc.Module{
		Types: []enc.FuncType{
			{Params: []byte{enc.I32}, Results: []byte{enc.I32}}, // 0: probe, env.double
			{Results: []byte{enc.I32}},                          // 1: slots
			{},                                                  // 2: start
			{Params: []byte{enc.I32, enc.I32}, Results: []byte{enc.I32}},
		},
		Imports: []enc.Import{enc.FuncImport("env", "add", 3), enc.FuncImport("env", "double", 0)},
		Funcs:   []enc.Func{ret(10), ret(20), ret(30), {Type: 2, Code: nil}, {Type: 0, Code: nil}},
		Tables:  [][]byte{enc.Cat([]byte{enc.Funcref}, enc.Limits(16, &max)), enc.Cat([]byte{enc.Funcref}, enc.Limits(16, &max))},
		Globals: []enc.Global{
			{Type: enc.Funcref, Init: refFunc(fC)},
			{Type: enc.I32, Mutable: true, Init: offset(0)},
		},
		Exports: []enc.Export{
			{Name: "probe", Kind: enc.KindFunc, Index: fProbe},
			{Name: "b", Kind: enc.KindFunc, Index: fB},
			{Name: "started", Kind: enc.KindGlobal, Index: 1},
		},
		Elements: [][]byte{
			enc.Cat(enc.ULEB(0), offset(0), funcs(fA, fB)),                         // 0: active, table 0, indices
			enc.Cat(enc.ULEB(1), []byte{0}, funcs(fC, fA)),                         // 1: passive, indices
			enc.Cat(enc.ULEB(2), enc.ULEB(1), offset(0), []byte{0}, funcs(fB, fC)), // 2: active, table 1, indices
			enc.Cat(enc.ULEB(3), []byte{0}, funcs(fStart)),                         // 3: declarative, indices
			enc.Cat(enc.ULEB(4), offset(2), exprs(fC, fB)),                         // 4: active, table 0, expressions
			enc.Cat(enc.ULEB(5), []byte{enc.Funcref}, exprs(fB, fA)),               // 5: passive, expressions
			enc.Cat(enc.ULEB(6), enc.ULEB(1), offset(2), []byte{enc.Funcref},
				enc.Vec(refFunc(fA), enc.Cat([]byte{0xd0, enc.Funcref}, enc.End))), // 6: active, table 1, expressions
			enc.Cat(enc.ULEB(7), []byte{enc.Funcref}, exprs(fProbe)), // 7: declarative, expressions
		},
	}
	start := uint32(fStart)
	m.Start = &start
	// start: table.set 0 [4] (global 0); table.init 0 seg 1 at 5; table.init 0 seg 5 at 7;
	// global 1 = call_indirect slot 4 + env.add(1, 2) + env.double(3) + ref.func declared via seg 3.
	m.Funcs[3].Code = enc.Code(
		enc.I32Const(4), enc.GlobalGet(0), enc.Op(0x26, 0),
		enc.I32Const(5), enc.I32Const(0), enc.I32Const(2), enc.Op(0xfc, 12, 1, 0),
		enc.I32Const(7), enc.I32Const(0), enc.I32Const(2), enc.Op(0xfc, 12, 5, 0),
		enc.I32Const(4), enc.CallIndirect(1),
		enc.I32Const(1), enc.I32Const(2), enc.Call(0), enc.I32Add,
		enc.I32Const(3), enc.Call(1), enc.I32Add,
		enc.GlobalSet(1),
		enc.RefFunc(fStart), enc.Drop,
	)
	m.Funcs[4].Code = enc.Code(
		enc.LocalGet(0), enc.CallIndirect(1),
		enc.LocalGet(0), enc.Op(0x25, 1), enc.Op(0xd1), enc.I32Eqz,
		enc.If(enc.I32), enc.LocalGet(0), enc.Op(0x11, 1, 1), enc.Else, enc.I32Const(0), enc.End,
		enc.I32Add,
	)
	return m.Encode()
}

// TestIndexShift runs elementsModule plain and instrumented: every
// function index (calls, ref.func in code, globals and segments, exports,
// start) must still name the same function.
func TestIndexShift(t *testing.T) {
	t.Parallel()
	module := elementsModule()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			rt := newRuntime(t, e)
			plain := mustInstantiate(t, rt, module, nil)
			metered := mustInstantiate(t, rt, mustInstrument(t, module), NewMeter(hugeBudget))
			for _, in := range []*instance{plain, metered} {
				if got := api.DecodeI32(in.mod.ExportedGlobal("started").Get()); got != 30+3+6 {
					t.Errorf("start function computed %d", got)
				}
			}
			for i := range uint64(9) {
				want, wantErr := plain.call(t, "probe", i)
				got, gotErr := metered.call(t, "probe", i)
				wk, wt := Classify(wantErr)
				gk, gt := Classify(gotErr)
				if !slices.Equal(want, got) || wk != gk || wt != gt {
					t.Errorf("probe(%d): metered %v %v %s, plain %v %v %s", i, got, gk, gt, want, wk, wt)
				}
				t.Logf("probe(%d) = %v %v %s", i, want, wk, wt)
			}
			if r, err := metered.call(t, "b"); err != nil || r[0] != 20 {
				t.Errorf("exported b: %v %v", r, err)
			}
		})
	}
}
