package audit

import (
	"context"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Features is the WebAssembly feature set a skill may use: WebAssembly 2.0
// without SIMD. Threads (shared memory and atomics), memory64, multiple
// memories, tail calls, exceptions and extended constant expressions are all
// outside it, so wazero refuses any instruction or type they add.
const Features = api.CoreFeaturesV2 &^ api.CoreFeatureSIMD

// compile asks wazero to decode, validate and compile the module with the
// feature set and memory cap the broker will run it with, and releases
// everything it made. The context bounds the work; wazero checks it between
// functions, not within one, which is why the per-function size is capped first.
func compile(ctx context.Context, module []byte, memoryLimitPages uint32) (err error) {
	// wazero panics on some malformed modules (local declarations that run
	// past their body, in v1.12.0): a refusal, never a crashed verifier.
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("wazero: the module made the compiler panic: %v", p)
		}
	}()
	cfg := wazero.NewRuntimeConfig().
		WithCoreFeatures(Features).
		WithMemoryLimitPages(memoryLimitPages).
		WithDebugInfoEnabled(false).
		WithCustomSections(false)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	defer rt.Close(context.Background())
	cm, err := rt.CompileModule(ctx, module)
	if err != nil {
		return fmt.Errorf("wazero: %w", err)
	}
	if err := ctx.Err(); err != nil {
		cm.Close(context.Background())
		return fmt.Errorf("wazero: %w", err)
	}
	return cm.Close(context.Background())
}
