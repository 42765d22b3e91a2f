// Package compiled is the compiled-code cache of Tier A: the broker (a
// trusted role) compiles each instrumented module once, into a directory
// only it can write; executors read the machine code from there instead
// of compiling.
//
// # Security
//
// wazero's cache files carry a CRC, not a signature: whoever can write the
// directory can make every executor that loads a module run their code.
// So only the broker writes it (it is the broker's, 0755, files 0644, and
// in multi-uid mode executors run under other uids), and an executor opens
// it read-only (Landlock). The key of an entry is the SHA-256 of the
// module's bytes (with wazero's version and the CPU's features), so an
// entry serves only the module it was compiled from. In single-user mode
// every role runs as one uid and this separation does not hold.
package compiled

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tetratelabs/wazero"

	"github.com/stockade-dev/stockade/wasm/meter"
)

// RuntimeConfig is the wazero configuration Tier A compiles and runs with.
// The broker's precompilation and the executors must use the same one:
// the cache holds code for one configuration.
func RuntimeConfig() wazero.RuntimeConfig {
	// The memory limit is each call's, enforced by the executor's
	// allocator. Context cancellation is the meter's job:
	// WithCloseOnContextDone slows loops and does not stop recursion.
	return wazero.NewRuntimeConfig().
		WithCoreFeatures(meter.Features).
		WithCloseOnContextDone(false).
		WithCustomSections(false).
		WithDebugInfoEnabled(false)
}

// Open returns the cache in dir (an executor's view: it only reads it).
func Open(dir string) (wazero.CompilationCache, error) {
	return wazero.NewCompilationCacheWithDir(dir)
}

// Precompile compiles module (instrumented) into the cache in dir and
// makes the entries readable by executors of other uids.
func Precompile(ctx context.Context, dir string, module []byte) error {
	cache, err := Open(dir)
	if err != nil {
		return fmt.Errorf("compiled-code cache %s: %w", dir, err)
	}
	defer cache.Close(ctx)
	rt := wazero.NewRuntimeWithConfig(ctx, RuntimeConfig().WithCompilationCache(cache))
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, module)
	if err != nil {
		return fmt.Errorf("precompiling: %w", err)
	}
	cm.Close(ctx)
	// wazero makes its directories 0700 and its files 0600.
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return os.Chmod(p, mode)
	})
}
