package meter

import "fmt"

// Costs of schedule 1. Every operator not listed costs costOp.
const (
	costOp       = 1
	costCall     = 2 // call and call_indirect: 1, plus 1
	costPerLocal = 1 // per declared local, at function entry
	growShift    = 6 // memory.grow: 64 units per page (delta << 6)
	bulkShift    = 6 // memory.fill/copy/init: 1 unit per 64 bytes (n >> 6)
)

type frameKind uint8

const (
	frameFunc frameKind = iota
	frameBlock
	frameLoop
	frameIf
)

// frame is an open block, loop or if (or the function body).
type frame struct {
	kind        frameKind
	liveAtEntry bool // the first instruction inside is reachable
	targeted    bool // a reachable forward branch goes to this frame's end
	hasElse     bool
	thenLive    bool // the then arm's fall-through into end is reachable
}

// bodyRewriter walks one function body at a time into a funcIR. Its
// frame stack is reused for the next body.
type bodyRewriter struct {
	m      *moduleRewriter
	r      *reader
	ir     *funcIR
	frames []frame

	live bool // the current position is reachable
	cur  int  // ir.charges index of the open metered block; valid when live
}

// dynamicKind says how a bulk instruction's operand becomes a cost.
type dynamicKind uint8

const (
	perPage    dynamicKind = iota // operand << growShift
	per64Bytes                    // operand >> bulkShift
	perElement                    // operand
)

// walk reads the body in fr, of a function of type typeIdx.
func (b *bodyRewriter) walk(fr *reader, typeIdx uint32) (*funcIR, error) {
	groups, err := fr.count()
	if err != nil {
		return nil, err
	}
	groupsStart := fr.off
	var declared uint64
	for i := uint32(0); i < groups; i++ {
		n, err := fr.u32()
		if err != nil {
			return nil, err
		}
		if err := valueType(fr); err != nil {
			return nil, err
		}
		declared += uint64(n)
		if declared > MaxLocals {
			return nil, fmt.Errorf("%w: over %d locals declared", ErrLimit, MaxLocals)
		}
	}
	params := b.m.types[typeIdx].params
	ir := &funcIR{
		typeIdx: typeIdx,
		groups:  groups,
		locals:  fr.buf[groupsStart:fr.off],
		// The instrumentation's locals follow the function's.
		scratch: params + uint32(declared),
		code:    make([]byte, 0, fr.remaining()+fr.remaining()/2),
	}
	if ir.scratch < params {
		return nil, fmt.Errorf("%w: too many parameters and locals", ErrLimit)
	}
	b.r, b.ir = fr, ir
	b.frames = append(b.frames[:0], frame{kind: frameFunc, liveAtEntry: true})
	b.live = true
	b.startBlock()
	b.add(declared * costPerLocal)
	for len(b.frames) > 0 {
		if err := b.instruction(); err != nil {
			return nil, err
		}
	}
	if err := fr.end("function body"); err != nil {
		return nil, err
	}
	return ir, nil
}

// startBlock opens a metered block at the current position.
func (b *bodyRewriter) startBlock() {
	b.ir.charges = append(b.ir.charges, charge{pos: len(b.ir.code)})
	b.cur = len(b.ir.charges) - 1
}

// add charges c to the open metered block, if the code is reachable.
func (b *bodyRewriter) add(c uint64) {
	if b.live {
		b.ir.charges[b.cur].cost += c
	}
}

// label resolves a branch depth to the frame it names, marking a block or
// if as a merge point when the branch is reachable. A branch to a loop goes
// back to the loop's first metered block; one to the function is a return.
func (b *bodyRewriter) label(l uint32) error {
	if uint64(l) >= uint64(len(b.frames)) {
		return b.r.failf("branch depth %d with %d labels", l, len(b.frames))
	}
	f := &b.frames[len(b.frames)-1-int(l)]
	if b.live && (f.kind == frameBlock || f.kind == frameIf) {
		f.targeted = true
	}
	return nil
}

// copyFrom appends the input from start to the reader's position.
func (b *bodyRewriter) copyFrom(start int) {
	b.ir.code = append(b.ir.code, b.r.buf[start:b.r.off]...)
}

// instruction rewrites one instruction.
func (b *bodyRewriter) instruction() error {
	r := b.r
	at, start := r.pos(), r.off
	op, err := r.byte()
	if err != nil {
		return err
	}
	switch {
	case op == opUnreachable || op == opReturn:
		if op == opReturn && b.live {
			b.ir.returns = append(b.ir.returns, len(b.ir.code))
		}
		b.copyFrom(start)
		b.live = false
	case op == opNop || op == opDrop:
		b.copyFrom(start)
	case op == opBlock || op == opLoop || op == opIf:
		if err := b.blockType(); err != nil {
			return err
		}
		kind := frameBlock
		switch op {
		case opLoop:
			kind = frameLoop
		case opIf:
			kind = frameIf
			b.add(costOp)
		}
		b.copyFrom(start)
		b.frames = append(b.frames, frame{kind: kind, liveAtEntry: b.live})
		if op != opBlock && b.live {
			b.startBlock() // a loop header is a back-edge target; an if arm is conditional
		}
	case op == opElse:
		f := &b.frames[len(b.frames)-1]
		if f.kind != frameIf || f.hasElse {
			return r.failf("else outside an if")
		}
		f.hasElse, f.thenLive = true, b.live
		b.copyFrom(start)
		b.live = f.liveAtEntry
		if b.live {
			b.startBlock()
		}
	case op == opEnd:
		b.copyFrom(start)
		b.end()
	case op == opBr || op == opBrIf:
		l, err := r.u32()
		if err != nil {
			return err
		}
		if err := b.label(l); err != nil {
			return err
		}
		b.add(costOp)
		b.copyFrom(start)
		if op == opBr {
			b.live = false
		} else if b.live {
			b.startBlock() // the fall-through runs only when the branch is not taken
		}
	case op == opBrTable:
		n, err := r.count()
		if err != nil {
			return err
		}
		for i := uint64(0); i <= uint64(n); i++ { // the labels, then the default
			l, err := r.u32()
			if err != nil {
				return err
			}
			if err := b.label(l); err != nil {
				return err
			}
		}
		b.add(costOp)
		b.copyFrom(start)
		b.live = false
	case op == opCall:
		// A call does not end its metered block: the instructions after it
		// are charged with those before it, which is exact whenever the
		// callee returns.
		f, err := r.u32()
		if err != nil {
			return err
		}
		if uint64(f) >= uint64(b.m.funcImports)+uint64(len(b.m.funcTypes)) {
			return r.failf("call to function %d of %d", f, uint64(b.m.funcImports)+uint64(len(b.m.funcTypes)))
		}
		b.add(costCall)
		if b.live && f >= b.m.funcImports {
			// Written at assembly, when the callee's cost may be hoisted.
			b.ir.callsGuest = true
			b.ir.calls = append(b.ir.calls, callSite{pos: len(b.ir.code), block: b.cur, f: f})
		} else {
			b.ir.code = appendU32(append(b.ir.code, opCall), b.m.funcIndex(f))
		}
	case op == opCallIndirect:
		if _, err := r.u32(); err != nil { // type
			return err
		}
		if _, err := r.u32(); err != nil { // table
			return err
		}
		b.add(costCall)
		b.ir.callsGuest = b.ir.callsGuest || b.live
		b.copyFrom(start)
	case op == opSelect || op == opRefIsNull ||
		(op >= opFirstNumeric && op <= opLastNumeric):
		b.add(costOp)
		b.copyFrom(start)
	case op == opSelectTyped:
		if _, err := valueTypes(r); err != nil {
			return err
		}
		b.add(costOp)
		b.copyFrom(start)
	case op >= opLocalGet && op <= opTableSet: // local.*, global.*, table.get/set: one index
		if _, err := r.u32(); err != nil {
			return err
		}
		b.add(costOp)
		b.copyFrom(start)
	case op >= opFirstMemAccess && op <= opLastMemAccess:
		if err := b.memArg(); err != nil {
			return err
		}
		b.add(costOp)
		b.copyFrom(start)
	case op == opMemorySize || op == opMemoryGrow:
		if err := b.memoryIndex(); err != nil {
			return err
		}
		b.add(costOp)
		if op == opMemoryGrow {
			b.dynamic(perPage)
		}
		b.copyFrom(start)
	case op == opI32Const:
		_, err = r.sleb(32)
		b.constant(start, err)
		return err
	case op == opI64Const:
		_, err = r.sleb(64)
		b.constant(start, err)
		return err
	case op == opF32Const:
		_, err = r.bytes(4)
		b.constant(start, err)
		return err
	case op == opF64Const:
		_, err = r.bytes(8)
		b.constant(start, err)
		return err
	case op == opRefNull:
		if err := refType(r); err != nil {
			return err
		}
		b.add(costOp)
		b.copyFrom(start)
	case op == opRefFunc:
		f, err := r.u32()
		if err != nil {
			return err
		}
		b.add(costOp)
		b.ir.code = appendU32(append(b.ir.code, opRefFunc), b.m.funcIndex(f))
	case op == opPrefixMisc:
		return b.misc(at, start)
	default:
		return refused(op, at)
	}
	return nil
}

// constant finishes an instruction with an immediate and no other effect.
func (b *bodyRewriter) constant(start int, err error) {
	if err == nil {
		b.add(costOp)
		b.copyFrom(start)
	}
}

// refused classifies an opcode outside Features.
func refused(op byte, at int) error {
	switch op {
	case opTry, opCatch, opThrow, opRethrow, opThrowRef, opDelegate, opCatchAll, opTryTable:
		return unsupported(FeatureExceptions, at, "%#x", op)
	case opReturnCall, opReturnCallInd, opReturnCallRef:
		return unsupported(FeatureTailCalls, at, "%#x", op)
	case opCallRef, opRefAsNonNull, opBrOnNull, opRefEq, opBrOnNonNull, opPrefixGC:
		return unsupported(FeatureGC, at, "%#x", op)
	case opPrefixSIMD:
		return unsupported(FeatureSIMD, at, "%#x", op)
	case opPrefixAtomic:
		return unsupported(FeatureAtomics, at, "%#x", op)
	}
	return unsupported(FeatureUnknown, at, "%#x", op)
}

// end closes the innermost frame and decides whether the code after it
// continues the open metered block or starts a new one.
func (b *bodyRewriter) end() {
	f := b.frames[len(b.frames)-1]
	b.frames = b.frames[:len(b.frames)-1]
	fallLive := b.live
	switch f.kind {
	case frameFunc:
		b.live = false
	case frameBlock, frameLoop:
		// Reached by falling off the end, or by a branch to a block. A
		// loop's label is its start, so only fall-through reaches its end.
		b.live = fallLive || f.targeted
		if f.targeted && b.live {
			b.startBlock()
		}
	case frameIf:
		// Reached from the then arm, the else arm (or, without one, the
		// false condition), and branches: always a merge point.
		other := f.liveAtEntry
		if f.hasElse {
			other = f.thenLive
		}
		b.live = fallLive || other || f.targeted
		if b.live {
			b.startBlock()
		}
	}
}

// dynamic charges the i32 operand on top of the stack, which it leaves in
// place, through the scratch local:
//
//	local.tee t; global.get used; local.get t; i64.extend_i32_u; [i64.const 6; i64.shl|i64.shr_u]
//	i64.add; global.set used; global.get used; global.get limit; i64.gt_u; if; call refill; end
func (b *bodyRewriter) dynamic(k dynamicKind) {
	if !b.live {
		return
	}
	m := b.m
	b.ir.usesScratch = true
	c := b.ir.code
	c = appendU32(append(c, opLocalTee), b.ir.scratch)
	c = appendU32(append(c, opGlobalGet), m.usedGlobal)
	c = appendU32(append(c, opLocalGet), b.ir.scratch)
	c = append(c, opI64ExtendI32U)
	switch k {
	case perPage:
		c = append(c, opI64Const, growShift, opI64Shl)
	case per64Bytes:
		c = append(c, opI64Const, bulkShift, opI64ShrU)
	}
	c = append(c, opI64Add)
	b.ir.code = m.appendCheck(c)
	m.info.Dynamic++
}

// blockType reads the type of a block, loop or if: empty, one value type,
// or a type index (multi-value).
func (b *bodyRewriter) blockType() error {
	r := b.r
	at := r.pos()
	v, err := r.sleb(33)
	if err != nil {
		return err
	}
	if v >= 0 {
		if v >= int64(len(b.m.types)) {
			return r.failf("block type %d of %d", v, len(b.m.types))
		}
		return nil
	}
	if v < -64 {
		return r.failf("block type %d", v)
	}
	t := byte(v & 0x7f) // the one-byte encoding
	if t == blockTypeEmpty {
		return nil
	}
	return checkValueType(t, at, r)
}

// memArg reads alignment and offset. An alignment with bit 6 set announces
// a memory index (multi-memory).
func (b *bodyRewriter) memArg() error {
	r := b.r
	at := r.pos()
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align >= 64 {
		return unsupported(FeatureMultiMemory, at, "memory index in memarg")
	}
	_, err = r.u32()
	return err
}

// memoryIndex reads the memory index byte of memory.size/grow/fill and the
// like, which must be 0.
func (b *bodyRewriter) memoryIndex() error {
	at := b.r.pos()
	i, err := b.r.byte()
	if err != nil {
		return err
	}
	if i != 0 {
		return unsupported(FeatureMultiMemory, at, "memory index %d", i)
	}
	return nil
}

// misc rewrites an instruction with the 0xFC prefix.
func (b *bodyRewriter) misc(at, start int) error {
	r := b.r
	sub, err := r.u32()
	if err != nil {
		return err
	}
	var dyn dynamicKind
	charged := false
	switch sub {
	case miscMemoryInit: // data index, memory index
		if _, err := r.u32(); err != nil {
			return err
		}
		if err := b.memoryIndex(); err != nil {
			return err
		}
		dyn, charged = per64Bytes, true
	case miscMemoryCopy: // two memory indices
		if err := b.memoryIndex(); err != nil {
			return err
		}
		if err := b.memoryIndex(); err != nil {
			return err
		}
		dyn, charged = per64Bytes, true
	case miscMemoryFill:
		if err := b.memoryIndex(); err != nil {
			return err
		}
		dyn, charged = per64Bytes, true
	case miscTableInit, miscTableCopy: // two indices
		if _, err := r.u32(); err != nil {
			return err
		}
		if _, err := r.u32(); err != nil {
			return err
		}
		dyn, charged = perElement, true
	case miscTableGrow, miscTableFill:
		if _, err := r.u32(); err != nil {
			return err
		}
		dyn, charged = perElement, true
	case miscDataDrop, miscElemDrop, miscTableSize:
		if _, err := r.u32(); err != nil {
			return err
		}
	default:
		if sub > miscLastTruncSat {
			return unsupported(FeatureUnknown, at, "%#x %#x", opPrefixMisc, sub)
		}
	}
	b.add(costOp)
	if charged {
		b.dynamic(dyn)
	}
	b.copyFrom(start)
	return nil
}
