package wasm

// Import names a host function a module may import.
type Import struct {
	Module, Name string
}

// Imports lists every host function this package provides to skills: the
// "stockade" module and the restricted "wasi_snapshot_preview1", in a fixed
// order. verifier/audit repeats these names in its own table (roles do not
// import each other); sdk's TestAuditImportsMatchRuntime keeps the two
// equal. The "stockade_meter" functions are not in it: only
// wasm/meter.Instrument adds imports of them, and it refuses modules that
// already have one.
func Imports() []Import {
	list := make([]Import, 0, len(stockadeFuncs)+len(wasiFuncs))
	for _, f := range stockadeFuncs {
		list = append(list, Import{HostModule, f.name})
	}
	for _, f := range wasiFuncs {
		list = append(list, Import{wasiModule, f.name})
	}
	return list
}
