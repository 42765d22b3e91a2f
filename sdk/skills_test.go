//go:build !wasip1

package sdk

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/stockade-dev/stockade/executor/wasm"
	"github.com/stockade-dev/stockade/verifier/audit"
	"github.com/stockade-dev/stockade/verifier/skill"
)

// exampleSkills are the Go SDK's examples in testdata/skills, each built
// from its src/ into modules/<name>.wasm by `make skills` (sdk.mk).
var exampleSkills = []string{"gohello", "gokv"}

// goRuntimeWASI are the wasi_snapshot_preview1 functions a Go 1.26 wasip1
// module imports: the runtime's (args, environment, clocks, random,
// fd_write, poll_oneoff, proc_exit, sched_yield) and those of the os and
// syscall packages, which encoding/json brings in through fmt. The host's
// restricted WASI provides them all; a new Go release that imports more
// shows up here first.
var goRuntimeWASI = []string{
	"args_get", "args_sizes_get", "clock_time_get", "environ_get", "environ_sizes_get",
	"fd_close", "fd_fdstat_get", "fd_fdstat_set_flags", "fd_prestat_dir_name", "fd_prestat_get",
	"fd_read", "fd_write", "poll_oneoff", "proc_exit", "random_get", "sched_yield",
}

// capabilityImports says which host functions each capability of the
// manifest unlocks, as the ABI pairs them (handle kinds): the audit's
// table (verifier/audit/hostabi.go) must allow at least this.
func capabilityImports(c skill.Capabilities) []string {
	names := []string{wasm.FnABIVersion, wasm.FnLog, wasm.FnHandle, wasm.FnResultRead}
	if len(c.HTTP) > 0 {
		names = append(names, wasm.FnHTTPRequest)
	}
	if len(c.Secrets) > 0 {
		names = append(names, wasm.FnSecretGet)
	}
	if c.Storage {
		names = append(names, wasm.FnKVGet, wasm.FnKVPut, wasm.FnKVDelete, wasm.FnKVList)
	}
	if len(c.Channels) > 0 {
		names = append(names, wasm.FnChannelSend)
	}
	return names
}

// TestSkillsBuild rebuilds each example skill as sdk.mk does (go build,
// then the post-link step sdk/cmd/wasm-table-max) and checks the
// committed module: equal to the fresh build byte for byte when both
// come from the same Go release (the build is reproducible: -trimpath,
// -buildvcs=false, and Go's content-derived build ID), and in any case
// within the ABI: imports only from the ABI's functions (and only those
// the manifest's capabilities unlock) and from the WASI functions of
// goRuntimeWASI, each with the ABI's signature; exports memory,
// stockade_alloc, _initialize and every tool export of skill.toml with
// the ABI's signatures; compiled with the audit's feature set.
//
// Regenerate the committed modules with `make skills`.
func TestSkillsBuild(t *testing.T) {
	t.Parallel()
	sigs := abiSignatures(t)
	for _, name := range exampleSkills {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("..", "testdata", "skills", name)
			committed, err := os.ReadFile(filepath.Join(dir, "modules", name+".wasm"))
			if err != nil {
				t.Fatalf("%v (make skills)", err)
			}
			fresh := filepath.Join(t.TempDir(), name+".wasm")
			mustBuild(t, "./testdata/skills/"+name+"/src", fresh)
			built, err := os.ReadFile(fresh)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d bytes (committed %d)", name, len(built), len(committed))

			ctx := context.Background()
			r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCustomSections(true))
			defer r.Close(ctx)
			producers := func(b []byte) []byte {
				cm, err := r.CompileModule(ctx, b)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range cm.CustomSections() {
					if s.Name() == "producers" {
						return s.Data()
					}
				}
				t.Fatal("no producers section")
				return nil
			}
			switch {
			case bytes.Equal(committed, built):
			case bytes.Equal(producers(committed), producers(built)):
				t.Errorf("modules/%s.wasm differs from a fresh build by the same Go release: run make skills", name)
			default:
				t.Logf("modules/%s.wasm was built by another Go release (producers %q, now %q): bytes not compared",
					name, producers(committed), producers(built))
			}

			manifestBytes, err := os.ReadFile(filepath.Join(dir, skill.ManifestPath))
			if err != nil {
				t.Fatal(err)
			}
			man, err := skill.ParseManifest(manifestBytes)
			if err != nil {
				t.Fatal(err)
			}
			checkModuleABI(t, committed, man, sigs)
		})
	}
}

func checkModuleABI(t *testing.T, module []byte, man *skill.Manifest, sigs map[string]wasmSig) {
	t.Helper()
	ctx := context.Background()
	// The audit's feature set: WebAssembly 2.0 without SIMD.
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(audit.Features))
	defer r.Close(ctx)
	cm, err := r.CompileModule(ctx, module)
	if err != nil {
		t.Fatalf("compile with audit.Features: %v", err)
	}
	sigOf := func(d api.FunctionDefinition) wasmSig {
		var s wasmSig
		for _, p := range d.ParamTypes() {
			s.params = append(s.params, api.ValueTypeName(p))
		}
		for _, p := range d.ResultTypes() {
			s.results = append(s.results, api.ValueTypeName(p))
		}
		return s
	}
	unlocked := capabilityImports(man.Capabilities)
	for _, imp := range cm.ImportedFunctions() {
		mod, name, _ := imp.Import()
		switch mod {
		case wasm.HostModule:
			if !slices.Contains(unlocked, name) {
				t.Errorf("imports %s.%s, which its capabilities do not unlock", mod, name)
			}
			if got, want := sigOf(imp), sigs[name]; !got.equal(want) {
				t.Errorf("imports %s.%s as %s, the ABI says %s", mod, name, got, want)
			}
		case "wasi_snapshot_preview1":
			if !slices.Contains(goRuntimeWASI, name) {
				t.Errorf("imports %s.%s, which goRuntimeWASI does not list", mod, name)
			}
		default:
			t.Errorf("imports %s.%s: a module outside the ABI", mod, name)
		}
	}
	if len(cm.ImportedMemories()) != 0 {
		t.Errorf("imports a memory")
	}
	if _, ok := cm.ExportedMemories()[wasm.ExportMemory]; !ok {
		t.Errorf("does not export %q", wasm.ExportMemory)
	}
	exports := cm.ExportedFunctions()
	want := map[string]wasmSig{wasm.ExportAlloc: sigs[wasm.ExportAlloc], wasm.ExportInitialize: sigs[wasm.ExportInitialize]}
	for _, tool := range man.Tools {
		want[tool.Export] = sigs["<tool export>"]
		if tool.Module != "modules/"+strings.TrimSuffix(filepath.Base(tool.Module), ".wasm")+".wasm" {
			t.Errorf("tool %s: module %s", tool.Name, tool.Module)
		}
	}
	for name, sig := range want {
		d, ok := exports[name]
		if !ok {
			t.Errorf("does not export %s", name)
			continue
		}
		if got := sigOf(d); !got.equal(sig) {
			t.Errorf("exports %s as %s, the ABI says %s", name, got, sig)
		}
	}
	for name := range exports {
		if _, ok := want[name]; !ok {
			t.Errorf("exports %s, which is neither the ABI's nor a tool's", name)
		}
	}
}
