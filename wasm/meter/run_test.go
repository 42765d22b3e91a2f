package meter

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero/api"

	enc "github.com/stockade-dev/stockade/wasm/meter/internal/wasmenc"
)

// call is one top-level call in a differential case.
type call struct {
	export string
	args   []uint64
}

func calls(export string, argSets ...[]uint64) []call {
	var cs []call
	for _, a := range argSets {
		cs = append(cs, call{export, a})
	}
	return cs
}

func i32(v int32) uint64 { return api.EncodeI32(v) }

// differentialCases run in order on one instance each: the plain module and
// the instrumented one must agree on every result and error class.
var differentialCases = []struct {
	module string
	calls  []call
}{
	{"fib", calls("fib", []uint64{0}, []uint64{1}, []uint64{2}, []uint64{10}, []uint64{20})},
	{"control", slices.Concat(
		calls("switch", []uint64{0}, []uint64{1}, []uint64{2}, []uint64{3}, []uint64{4}, []uint64{5}, []uint64{i32(-1)}),
		calls("swap", []uint64{1, 2}, []uint64{i32(-7), 9}),
		calls("sum", []uint64{1}, []uint64{10}, []uint64{1000}),
		calls("classify", []uint64{i32(-5)}, []uint64{5}, []uint64{50}, []uint64{500}),
		calls("pick", []uint64{1, 2, 0}, []uint64{1, 2, 1}),
		calls("dead", []uint64{0}, []uint64{3}, []uint64{9}),
		calls("fact", []uint64{0}, []uint64{1}, []uint64{10}, []uint64{20}),
		calls("div", []uint64{7, 2}, []uint64{1, 0}, []uint64{i32(math.MinInt32), i32(-1)}),
		calls("trap_if", []uint64{0}, []uint64{1}),
	)},
	{"tables", slices.Concat(
		calls("dispatch", []uint64{0, 5}, []uint64{1, 5}, []uint64{2, 5}, []uint64{4, 5}),
		calls("setup", nil),
		calls("dispatch", []uint64{0, 5}, []uint64{1, 5}, []uint64{2, 5}, []uint64{3, 5}, []uint64{4, 5},
			[]uint64{5, 5}, []uint64{6, 5}, []uint64{7, 5}, []uint64{8, 5}, []uint64{9, 5}, []uint64{99, 5}),
		calls("externs", nil),
	)},
	{"start", calls("get", nil, nil)},
	{"memory", slices.Concat(
		calls("bytes", nil),
		calls("numeric", []uint64{0x1234ff, api.EncodeF64(2.25)}, []uint64{i32(-3), api.EncodeF64(-1e300)}, []uint64{7, api.EncodeF64(math.NaN())}),
		calls("grow", []uint64{1}, []uint64{10}, []uint64{0}),
		calls("oob", []uint64{8}, []uint64{65536 * 2}, []uint64{65536 * 8}),
	)},
	{"locals", calls("run", []uint64{2, 3})},
	{"imports", slices.Concat(calls("run", []uint64{4}), calls("twice", []uint64{3}), calls("double", []uint64{8}))},
	{"memory_grow", calls("grow_until_fail", nil)},
	{"bulk_memory", slices.Concat(calls("fill", []uint64{2}), calls("copy", []uint64{2}))},
	{"bench_loop", calls("run", []uint64{1000})},
	{"bench_calls", calls("run", []uint64{1000})},
	{"recursion_unbounded", calls("run", nil)},
}

// TestDifferential runs each fixture uninstrumented and instrumented with a
// budget that never runs out, on both engines, and requires the same
// results and the same error classes. The engine's own stack overflow and
// the depth limiter both classify as KindDepth.
func TestDifferential(t *testing.T) {
	t.Parallel()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			rt := newRuntime(t, e)
			for _, tc := range differentialCases {
				t.Run(tc.module, func(t *testing.T) {
					plainModule := fixture(t, tc.module)
					plain := mustInstantiate(t, rt, plainModule, nil)
					metered := mustInstantiate(t, rt, mustInstrument(t, plainModule), NewMeter(hugeBudget))
					for _, c := range tc.calls {
						want, wantErr := plain.call(t, c.export, c.args...)
						got, gotErr := metered.call(t, c.export, c.args...)
						wantKind, wantWhat := Classify(wantErr)
						gotKind, gotWhat := Classify(gotErr)
						if wantKind != gotKind || wantWhat != gotWhat {
							t.Errorf("%s%v: plain %v %s (%v), metered %v %s (%v)", c.export, c.args,
								wantKind, wantWhat, wantErr, gotKind, gotWhat, gotErr)
							continue
						}
						if !slices.Equal(want, got) {
							t.Errorf("%s%v = %v metered, %v plain", c.export, c.args, got, want)
						}
					}
					if metered.meter.Used() == 0 {
						t.Error("the metered instance charged nothing")
					}
				})
			}
		})
	}
}

// fibFuel is the fuel of fib(n) by hand, from the cost breakdown in fib.wat.
func fibFuel(n int) uint64 {
	if n < 2 {
		return 4 + 1
	}
	return 4 + 11 + fibFuel(n-1) + fibFuel(n-2)
}

// TestFuelByHand checks fuel totals computed by hand (in the .wat comments)
// against both engines.
func TestFuelByHand(t *testing.T) {
	t.Parallel()
	type fuelCase struct {
		name   string
		module string
		calls  []call
		want   uint64
	}
	cases := []fuelCase{
		// 63 grows of 16 pages succeed from 1 page to 1009; the 64th fails.
		// Each try: 5 + 16*64 in the loop header; each success 5 more; then 1.
		{"grow", "memory_grow", calls("grow_until_fail", nil), 63*(5+1024+5) + (5 + 1024) + 1},
		{"locals", "locals", calls("run", []uint64{2, 3}), 20},
		// $init: 1 local, then 10 iterations of 12; get: 1.
		{"start", "start", calls("get", nil), 1 + 10*12 + 1},
		// fill(1): loop header 3, body 13 + 64 MiB/64, header 3 again.
		{"fill", "bulk_memory", calls("fill", []uint64{1}), 3 + 13 + 1<<20 + 3},
		// Hoisted leaf calls, and the same leaves through a table.
		{"calls", "bench_calls", calls("run", []uint64{500}), 2 + 36*500 + 3*250 + 5*250 + 1},
	}
	for n := range 16 {
		cases = append(cases, fuelCase{"fib", "fib", calls("fib", []uint64{uint64(n)}), fibFuel(n)})
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			rt := newRuntime(t, e)
			for _, tc := range cases {
				in := mustInstantiate(t, rt, mustInstrument(t, fixture(t, tc.module)), NewMeter(hugeBudget))
				for _, c := range tc.calls {
					if _, err := in.call(t, c.export, c.args...); err != nil {
						t.Fatalf("%s: %v", tc.name, err)
					}
				}
				if got := in.meter.Used(); got != tc.want {
					t.Errorf("%s %v: fuel %d, want %d", tc.name, tc.calls, got, tc.want)
				}
			}
		})
	}
}

// TestFuelDeterministic runs the same call 100 times on fresh instances of
// both engines and requires the same fuel every time, for a completed call
// and for one that exhausts its budget.
func TestFuelDeterministic(t *testing.T) {
	t.Parallel()
	module := mustInstrument(t, fixture(t, "bench_calls"))
	fib := mustInstrument(t, fixture(t, "fib"))
	type result struct {
		used uint64
		kind Kind
	}
	var first map[string]result
	for _, e := range engines {
		rt := newRuntime(t, e)
		for run := range 100 {
			got := map[string]result{}
			for _, c := range []struct {
				name   string
				module []byte
				budget uint64
				call   call
			}{
				{"calls", module, hugeBudget, call{"run", []uint64{500}}},
				{"fib-exhausted", fib, 123_457, call{"fib", []uint64{30}}},
			} {
				in := mustInstantiate(t, rt, c.module, NewMeter(c.budget))
				_, err := in.call(t, c.call.export, c.call.args...)
				kind, _ := Classify(err)
				got[c.name] = result{in.meter.Used(), kind}
				in.mod.Close(t.Context())
			}
			if first == nil {
				first = got
				t.Logf("fuel: %+v", got)
				if got["fib-exhausted"].kind != KindFuel {
					t.Fatalf("fib(30) on 123457 fuel: %v", got["fib-exhausted"].kind)
				}
				continue
			}
			for k, v := range got {
				if first[k] != v {
					t.Fatalf("%s run %d %s: %+v, first run %+v", e.name, run, k, v, first[k])
				}
			}
		}
	}
}

// TestExhaustion: runaway guests end with the fuel or depth quota.
func TestExhaustion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		module   string
		cfg      Config
		budget   uint64
		call     call
		kind     Kind
		wantUsed uint64 // 0: not checked
		engine   string // "": both
	}{
		// One unit per iteration: the charge that crosses the budget is the
		// one that stops it.
		{"infinite loop", "loop_infinite", Config{}, 1_000_000, call{"run", nil}, KindFuel, 1_000_001, ""},
		{"loop-free recursion", "fib", Config{}, 10_000_000, call{"fib", []uint64{45}}, KindFuel, 0, ""},
		// Activations at depths 1..100 each charge 2 (the call); the 101st
		// stops in its prologue, before its charge.
		{"unbounded recursion", "recursion_unbounded", Config{MaxDepth: 100}, hugeBudget, call{"run", nil}, KindDepth, 100 * 2, ""},
		{"unbounded recursion, default depth", "recursion_unbounded", Config{}, hugeBudget, call{"run", nil}, KindDepth, 4096 * 2, "compiler"},
		// The interpreter's own ceiling (2000 frames) stops it first, which
		// classifies the same.
		{"unbounded recursion, default depth", "recursion_unbounded", Config{}, hugeBudget, call{"run", nil}, KindDepth, 0, "interpreter"},
		{"wide frames", "recursion_unbounded", Config{}, hugeBudget, call{"run_wide", []uint64{0}}, KindDepth, 0, ""},
		{"grow forever", "memory_grow", Config{}, 1_000_000, call{"grow_forever", nil}, KindFuel, 0, ""},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			rt := newRuntime(t, e)
			for _, tc := range cases {
				if tc.engine != "" && tc.engine != e.name {
					continue
				}
				out, _, err := Instrument(fixture(t, tc.module), tc.cfg)
				if err != nil {
					t.Fatal(err)
				}
				in := mustInstantiate(t, rt, out, NewMeter(tc.budget))
				_, err = in.call(t, tc.call.export, tc.call.args...)
				kind, _ := Classify(err)
				if kind != tc.kind {
					t.Errorf("%s: %v (%v), want %v", tc.name, kind, err, tc.kind)
				}
				used := in.meter.Used()
				if tc.wantUsed != 0 && used != tc.wantUsed {
					t.Errorf("%s: used %d, want %d", tc.name, used, tc.wantUsed)
				}
				if tc.kind == KindFuel && used <= tc.budget {
					t.Errorf("%s: exhausted at %d, within the budget %d", tc.name, used, tc.budget)
				}
			}
		})
	}
}

// TestBulkMemoryCharged: a 64 MiB memory.fill or memory.copy costs about a
// million units, so a 10,000,000 budget allows 9 of them and not 1,000.
func TestBulkMemoryCharged(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, engines[0])
	module := mustInstrument(t, fixture(t, "bulk_memory"))
	for _, op := range []string{"fill", "copy"} {
		in := mustInstantiate(t, rt, module, NewMeter(10_000_000))
		_, err := in.call(t, op, 1000)
		if kind, _ := Classify(err); kind != KindFuel {
			t.Fatalf("%s(1000) on 10M fuel: %v (%v)", op, kind, err)
		}
		if done := api.DecodeI32(in.mod.ExportedGlobal("done").Get()); done != 9 {
			t.Errorf("%s: %d rounds of 64 MiB on 10M fuel, want 9", op, done)
		}
	}
}

// TestHostCharge: a host function charging through Meter.Charge counts
// toward the budget and stops the guest when it passes it.
func TestHostCharge(t *testing.T) {
	t.Parallel()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			rt := newRuntime(t, e)
			_, err := rt.NewHostModuleBuilder("host").NewFunctionBuilder().
				WithFunc(func(ctx context.Context, n uint32) {
					if err := meterFrom(ctx).Charge(uint64(n)); err != nil {
						panic(err)
					}
				}).Export("work").Instantiate(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			module := hostChargeModule()
			// run(k): k calls of work(1000) in a loop.
			in := mustInstantiate(t, rt, mustInstrument(t, module), NewMeter(50_000))
			if _, err := in.call(t, "run", 10); err != nil {
				t.Fatal(err)
			}
			first := in.meter.Used()
			if first < 10_000 || first > 10_200 {
				t.Errorf("10 host charges of 1000: used %d", first)
			}
			_, err = in.call(t, "run", 100)
			if kind, _ := Classify(err); kind != KindFuel {
				t.Errorf("100 more: %v (%v)", kind, err)
			}
			if !errors.Is(err, ErrFuelExhausted) {
				t.Errorf("error %v does not wrap ErrFuelExhausted", err)
			}
		})
	}
}

// hostChargeModule imports host.work(i32) and exports run(k), which calls
// work(1000) k times.
func hostChargeModule() []byte {
	m := enc.Module{
		Types:   []enc.FuncType{{Params: []byte{enc.I32}}},
		Imports: []enc.Import{enc.FuncImport("host", "work", 0)},
		Funcs: []enc.Func{{Type: 0, Code: enc.Code(
			enc.Block(enc.BlockEmpty), enc.Loop(enc.BlockEmpty),
			enc.LocalGet(0), enc.I32Eqz, enc.BrIf(1),
			enc.I32Const(1000), enc.Call(0),
			enc.LocalGet(0), enc.I32Const(1), enc.I32Sub, enc.LocalSet(0),
			enc.Br(0), enc.End, enc.End,
		)}},
		Exports: []enc.Export{{Name: "run", Kind: enc.KindFunc, Index: 1}},
	}
	return m.Encode()
}
