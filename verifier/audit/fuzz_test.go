package audit

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
)

// FuzzParse feeds the section walk and the audit arbitrary bytes. It checks
// that the walk never panics, that it allocates no more than a small multiple
// of its input (nothing sized by a count read from the bytes), that the parse
// check agrees with the walk, and that the audit never passes a module
// wazero's interpreter refuses (the audit itself compiles with the default,
// usually the compiler, so this is also a differential check between the two).
// Both run with debug info off, as compile does: with it on, wazero v1.12.0
// refused a module ending in a custom section with an empty payload (the seed
// 4a895c546a145e9c), which the specification allows.
//
// The seed corpus is the table of TestAudit plus testdata/fuzz/FuzzParse.
// Run: go test -fuzz=FuzzParse ./verifier/audit/
func FuzzParse(f *testing.F) {
	for _, tc := range auditCases(f) {
		if len(tc.module) <= 64<<10 {
			f.Add(tc.module)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := parse(data, allowed())
		runtime.ReadMemStats(&after)
		if alloc, bound := after.TotalAlloc-before.TotalAlloc, 2*uint64(len(data))+64<<10; alloc > bound {
			t.Fatalf("parse of %d bytes allocated %d bytes, bound %d", len(data), alloc, bound)
		}

		r := Audit(data, allowed(), DefaultLimits())
		if c, _ := r.Check(CheckParse); c.OK != (err == nil) && len(data) <= DefaultLimits().ModuleBytes {
			t.Fatalf("parse check %v, parse error %v", c.OK, err)
		}
		if !r.OK() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().
			WithCoreFeatures(Features).WithMemoryLimitPages(DefaultLimits().MemoryMax).
			WithDebugInfoEnabled(false).WithCustomSections(false))
		defer rt.Close(ctx)
		if _, err := rt.CompileModule(ctx, data); err != nil {
			t.Fatalf("audit passed a module the interpreter refuses: %v", err)
		}
	})
}
