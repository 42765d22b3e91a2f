package meter

import (
	"errors"
	"fmt"
)

// Errors from Instrument. Each refusal wraps exactly one of these classes.
var (
	// ErrMalformed: the bytes are not a WebAssembly module this package can
	// decode (bad header, lengths, LEB128, section order, unbalanced blocks).
	ErrMalformed = errors.New("meter: malformed module")
	// ErrUnsupported: the module uses a feature outside WebAssembly 2.0
	// without SIMD. The error is a *FeatureError naming the feature.
	ErrUnsupported = errors.New("meter: unsupported feature")
	// ErrReserved: the module imports from the "stockade_meter" module or
	// exports a name starting "__stockade_", which are the instrumentation's.
	ErrReserved = errors.New("meter: reserved name")
	// ErrLimit: the module is over a limit of this package (MaxModuleBytes,
	// MaxLocals).
	ErrLimit = errors.New("meter: module over a limit")
	// ErrInvalid: wazero refused to validate the original module.
	ErrInvalid = errors.New("meter: module does not validate")
	// ErrConfig: the Config is out of range.
	ErrConfig = errors.New("meter: bad configuration")
)

// Feature names carried by FeatureError.
const (
	FeatureSIMD          = "simd"
	FeatureAtomics       = "atomics"        // the threads proposal: shared memory, 0xFE opcodes
	FeatureExceptions    = "exceptions"     // try/catch/throw, try_table, the tag section, exnref
	FeatureTailCalls     = "tail-calls"     // return_call, return_call_indirect
	FeatureGC            = "gc"             // GC and typed function references: 0xFB, call_ref, typed refs
	FeatureMultiMemory   = "multi-memory"   // a memory index other than 0
	FeatureMemory64      = "memory64"       // 64-bit memories and tables
	FeatureExtendedConst = "extended-const" // arithmetic in constant expressions
	FeatureUnknown       = "unknown-opcode" // an opcode no proposal we know of defines
)

// FeatureError is the ErrUnsupported refusal: the feature, and the opcode
// (or type byte) that used it and where.
type FeatureError struct {
	Feature string
	Opcode  string // e.g. "0xfd", "0xfc 0x12"
	Offset  int    // in the module
}

func (e *FeatureError) Error() string {
	return fmt.Sprintf("meter: unsupported feature %s (%s at byte %d)", e.Feature, e.Opcode, e.Offset)
}

func (e *FeatureError) Unwrap() error { return ErrUnsupported }

func unsupported(feature string, offset int, format string, args ...any) error {
	return &FeatureError{Feature: feature, Opcode: fmt.Sprintf(format, args...), Offset: offset}
}
