package wasm

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/experimental"

	"github.com/stockade-dev/stockade/wasm/meter"
)

// BenchmarkInstantiate measures instantiating and closing an instance from
// a compiled module, as Run does it (pooled memory, shared config), without
// calling anything:
//
//	go test -run '^$' -bench BenchmarkInstantiate -benchmem ./executor/wasm
func BenchmarkInstantiate(b *testing.B) {
	for _, name := range []string{"echo", "host", "goecho"} {
		b.Run(name, func(b *testing.B) {
			var m *Module
			if name == "goecho" {
				m, _ = goEcho(b)
			} else {
				m = fixtures(b)[name]
			}
			ctx := context.Background()
			reserve := uint64(min(DefaultMemoryPages, m.memMax)) * pageSize
			for b.Loop() {
				r, err := m.e.pool.reserve(reserve)
				if err != nil {
					b.Fatal(err)
				}
				mem := &instanceMemory{r: r, limit: reserve}
				mod, err := m.e.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, allocatorFor(mem)), m.cm, instanceConfig)
				if err != nil {
					b.Fatal(err)
				}
				mod.Close(ctx)
			}
		})
	}
}

// BenchmarkRun measures whole calls in process: instantiate, _initialize
// (goecho), stockade_alloc, the tool, reading the output, close. It
// reports the median and 99th percentile besides the mean:
//
//	go test -run '^$' -bench BenchmarkRun -benchmem ./executor/wasm
func BenchmarkRun(b *testing.B) {
	input := []byte(`{"q":"a trivial call"}`)
	for _, tc := range []struct{ name, module, export string }{
		{"noop", "echo", "noop"},
		{"echo", "echo", "echo"},
		{"host_abi", "host", "abi"},
		{"goecho", "goecho", "echo"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var m *Module
			if tc.module == "goecho" {
				m, _ = goEcho(b)
			} else {
				m = fixtures(b)[tc.module]
			}
			ctx := context.Background()
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, err := m.Run(ctx, tc.export, input, Limits{}, Grants{}, nil); err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

// BenchmarkFuelOverhead compares loop-heavy and call-heavy code
// (testdata/wasm/bench_*.wasm) uninstrumented and instrumented, in the
// Engine's runtime. The overhead is the ratio of the two ns/op:
//
//	go test -run '^$' -bench BenchmarkFuelOverhead -count 5 ./executor/wasm
func BenchmarkFuelOverhead(b *testing.B) {
	e := newEngine(b, EngineConfig{})
	for _, w := range []struct {
		name, module string
		arg          uint64
		iters        float64
	}{
		{"loop", "bench_loop", 1_000_000, 1_000_000},
		{"calls", "bench_calls", 100_000, 400_000}, // step, add, mix, indirect
	} {
		plain := readFixture(b, fixtureDir+"/../"+w.module+".wasm")
		for _, variant := range []string{"plain", "metered"} {
			b.Run(w.name+"/"+variant, func(b *testing.B) {
				ctx := context.Background()
				module, mt := plain, (*meter.Meter)(nil)
				if variant == "metered" {
					var err error
					if module, _, err = meter.Instrument(plain, meter.Config{}); err != nil {
						b.Fatal(err)
					}
					mt = meter.NewMeter(1 << 62)
					ctx = meter.WithMeter(ctx, mt)
				}
				cm, err := e.rt.CompileModule(ctx, module)
				if err != nil {
					b.Fatal(err)
				}
				defer cm.Close(ctx)
				mod, err := e.rt.InstantiateModule(ctx, cm, instanceConfig)
				if err != nil {
					b.Fatal(err)
				}
				defer mod.Close(ctx)
				if mt != nil {
					if err := mt.Bind(mod); err != nil {
						b.Fatal(err)
					}
				}
				f := mod.ExportedFunction("run")
				for b.Loop() {
					if mt != nil {
						if err := mt.Begin(); err != nil {
							b.Fatal(err)
						}
					}
					if _, err := f.Call(ctx, w.arg); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/w.iters, "ns/iter")
			})
		}
	}
}
