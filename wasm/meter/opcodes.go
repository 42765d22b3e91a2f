package meter

// Opcodes the instrumentation decodes specially or emits. The rest of the
// WebAssembly 2.0 set is classified by range in bodyRewriter.instruction.
const (
	opUnreachable    = 0x00
	opNop            = 0x01
	opBlock          = 0x02
	opLoop           = 0x03
	opIf             = 0x04
	opElse           = 0x05
	opEnd            = 0x0b
	opBr             = 0x0c
	opBrIf           = 0x0d
	opBrTable        = 0x0e
	opReturn         = 0x0f
	opCall           = 0x10
	opCallIndirect   = 0x11
	opDrop           = 0x1a
	opSelect         = 0x1b
	opSelectTyped    = 0x1c
	opLocalGet       = 0x20
	opLocalSet       = 0x21
	opLocalTee       = 0x22
	opGlobalGet      = 0x23
	opGlobalSet      = 0x24
	opTableGet       = 0x25
	opTableSet       = 0x26
	opFirstMemAccess = 0x28 // i32.load
	opLastMemAccess  = 0x3e // i64.store32
	opMemorySize     = 0x3f
	opMemoryGrow     = 0x40
	opI32Const       = 0x41
	opI64Const       = 0x42
	opF32Const       = 0x43
	opF64Const       = 0x44
	opFirstNumeric   = 0x45 // i32.eqz
	opLastNumeric    = 0xc4 // i64.extend32_s (sign-extension)
	opRefNull        = 0xd0
	opRefIsNull      = 0xd1
	opRefFunc        = 0xd2
	opPrefixGC       = 0xfb
	opPrefixMisc     = 0xfc
	opPrefixSIMD     = 0xfd
	opPrefixAtomic   = 0xfe

	// Numeric opcodes the emitted sequences use.
	opI32GtU        = 0x4b
	opI64GtU        = 0x56
	opI32Add        = 0x6a
	opI32Sub        = 0x6b
	opI64Add        = 0x7c
	opI64Shl        = 0x86
	opI64ShrU       = 0x88
	opI64ExtendI32U = 0xad

	blockTypeEmpty = 0x40
)

// Sub-opcodes after opPrefixMisc.
const (
	miscLastTruncSat = 7 // 0-7: i32/i64.trunc_sat_f32/f64_s/u
	miscMemoryInit   = 8
	miscDataDrop     = 9
	miscMemoryCopy   = 10
	miscMemoryFill   = 11
	miscTableInit    = 12
	miscElemDrop     = 13
	miscTableCopy    = 14
	miscTableGrow    = 15
	miscTableSize    = 16
	miscTableFill    = 17
)

// Opcodes of proposals outside Features, refused by name.
const (
	opTry           = 0x06
	opCatch         = 0x07
	opThrow         = 0x08
	opRethrow       = 0x09
	opThrowRef      = 0x0a
	opReturnCall    = 0x12
	opReturnCallInd = 0x13
	opCallRef       = 0x14
	opReturnCallRef = 0x15
	opDelegate      = 0x18
	opCatchAll      = 0x19
	opTryTable      = 0x1f
	opRefAsNonNull  = 0xd3
	opBrOnNull      = 0xd4
	opRefEq         = 0xd5
	opBrOnNonNull   = 0xd6
)
