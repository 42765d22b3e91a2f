package meter

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
)

// fuelWorkloads are the modules of BenchmarkFuel, each run by one call.
var fuelWorkloads = []struct {
	name   string
	module string
	export string
	arg    uint64
	iters  float64 // loop iterations or guest calls per benchmark op, for ns/iter
}{
	{"loop", "bench_loop", "run", 1_000_000, 1_000_000},
	{"calls", "bench_calls", "run", 100_000, 100_000 * 4}, // step, add, mix, indirect
	{"fib", "fib", "fib", 25, 242_785},                    // calls of fib for fib(25)
}

// BenchmarkFuel compares each workload unmetered and metered in wazero's
// compiler, the engine the executor uses (targets: under 1.1x for loops,
// 1.4x for call-heavy code). Each iteration times one plain call and one
// metered call back to back, so both see the same machine load; the
// figures reported are per loop iteration or guest call, from the fastest
// of each kind (min) and from the medians, with the ratios of the two:
//
//	go test -run '^$' -bench BenchmarkFuel -benchtime 200x ./wasm/meter
func BenchmarkFuel(b *testing.B) {
	rt := newRuntime(b, engines[0])
	for _, w := range fuelWorkloads {
		b.Run(w.name, func(b *testing.B) {
			plainModule := fixture(b, w.module)
			plain := mustInstantiate(b, rt, plainModule, nil)
			m := NewMeter(1 << 62)
			metered := mustInstantiate(b, rt, mustInstrument(b, plainModule), m)
			pf, mf := plain.mod.ExportedFunction(w.export), metered.mod.ExportedFunction(w.export)
			var tp, tm []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := pf.Call(plain.ctx, w.arg); err != nil {
					b.Fatal(err)
				}
				tp = append(tp, time.Since(start))
				if err := m.Begin(); err != nil {
					b.Fatal(err)
				}
				start = time.Now()
				if _, err := mf.Call(metered.ctx, w.arg); err != nil {
					b.Fatal(err)
				}
				tm = append(tm, time.Since(start))
			}
			slices.Sort(tp)
			slices.Sort(tm)
			perIter := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / w.iters }
			b.ReportMetric(perIter(tp[0]), "plain-ns/iter")
			b.ReportMetric(perIter(tm[0]), "metered-ns/iter")
			b.ReportMetric(float64(tm[0])/float64(tp[0]), "ratio-min")
			b.ReportMetric(float64(tm[len(tm)/2])/float64(tp[len(tp)/2]), "ratio-median")
			b.ReportMetric(float64(m.Used())/float64(b.N), "fuel/op")
		})
	}
}

// BenchmarkInstrument measures instrumentation throughput on real compiler
// output from the module cache (skipped when absent) and on the largest
// fixture: "rewrite" is the walk and rewrite alone, "instrument" adds
// wazero's validation of the original (Instrument as callers use it).
//
//	go test -run '^$' -bench BenchmarkInstrument ./wasm/meter
func BenchmarkInstrument(b *testing.B) {
	inputs := []struct {
		name   string
		module func(testing.TB) []byte
	}{
		{"control.wat", fix("control")},
		{"tinygo-greet", func(t testing.TB) []byte { return readRealModule(t, realModules[1]) }},
		{"rust-wasi", func(t testing.TB) []byte { return readRealModule(t, realModules[3]) }},
		{"zig-wasi", func(t testing.TB) []byte { return readRealModule(t, realModules[4]) }},
	}
	for _, in := range inputs {
		for _, variant := range []string{"rewrite", "instrument"} {
			b.Run(in.name+"/"+variant, func(b *testing.B) {
				module := in.module(b)
				b.SetBytes(int64(len(module)))
				var info Info
				for b.Loop() {
					var err error
					if variant == "rewrite" {
						_, _, info, err = rewrite(module, Config{})
					} else {
						_, info, err = Instrument(module, Config{})
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(info.Growth, "growth")
			})
		}
	}
}

// BenchmarkCompile is the cost the instrumentation adds downstream: wazero's
// compiler on the original and on the instrumented module.
//
//	go test -run '^$' -bench BenchmarkCompile ./wasm/meter
func BenchmarkCompile(b *testing.B) {
	module := func(t testing.TB) []byte { return readRealModule(t, realModules[3]) }
	for _, variant := range []string{"plain", "metered"} {
		b.Run("rust-wasi/"+variant, func(b *testing.B) {
			m := module(b)
			if variant == "metered" {
				m = mustInstrument(b, m)
			}
			ctx := context.Background()
			for b.Loop() {
				rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCoreFeatures(Features))
				if _, err := rt.CompileModule(ctx, m); err != nil {
					b.Fatal(err)
				}
				rt.Close(ctx)
			}
		})
	}
}
