package meter

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Sizes for preallocating an assembled body.
const (
	chargeMaxLen = 46 // the longest charge sequence, in bytes
	depthMaxLen  = 12 // the longest depth epilogue
	callMaxLen   = 6
)

// hoistMaxCode is the largest body, in bytes of instructions, whose cost
// is hoisted into its direct callers (see funcIR.hoistable).
const hoistMaxCode = 512

// charge is a metered block: where its charge goes in the rewritten
// instructions, and the summed cost of its instructions.
type charge struct {
	pos  int
	cost uint64
}

// callSite is a reachable direct call to a defined function, written at
// assembly: to the function itself, or to its uncharged copy with the
// function's cost added to the calling block.
type callSite struct {
	pos   int
	block int    // the charges index of the block holding the call
	f     uint32 // the callee, as indexed in the original module
}

// funcIR is a walked function body: its instructions rewritten except for
// the insertions whose content depends on other functions or on the whole
// body, and what is needed to make them.
type funcIR struct {
	typeIdx     uint32
	groups      uint32 // local declaration groups
	locals      []byte // the groups, as read
	scratch     uint32 // index of the scratch local the instrumentation adds
	code        []byte
	charges     []charge
	returns     []int // positions of reachable returns
	calls       []callSite
	usesScratch bool // dynamic costs use the scratch local
	callsGuest  bool // a reachable call to a defined function or through a table
}

// hoistable reports whether the function's cost can be charged by its
// direct callers instead: a leaf (no call into the guest, so no recursion)
// that is a single metered block (no loop, no branch), and small, since
// it is copied. Its callers then call an uncharged copy, which is exact:
// the block runs whole once entered, unless it traps.
func (ir *funcIR) hoistable() bool {
	return !ir.callsGuest && len(ir.charges) == 1 && len(ir.code) <= hoistMaxCode
}

// hoistCosts adds to each block of ir the cost of the hoistable functions
// it calls directly. It runs once per function, before assemble.
func (w *moduleRewriter) hoistCosts(ir *funcIR) {
	for _, c := range ir.calls {
		if callee := w.funcs[c.f-w.funcImports]; callee.hoistable() {
			ir.charges[c.block].cost += callee.charges[0].cost
		}
	}
}

// insert kinds, in the order they are written at one position.
const (
	insCharge = iota
	insCall
	insReturn
)

type insert struct {
	pos  int
	kind int
	i    int // index into charges, calls or returns
}

// assemble appends the body of ir, size first, to out. As the uncharged
// copy of a hoisted function, it leaves the function's one charge out.
func (w *moduleRewriter) assemble(ir *funcIR, uncharged bool, out []byte) ([]byte, error) {
	inserts := make([]insert, 0, len(ir.charges)+len(ir.calls)+len(ir.returns))
	size := len(ir.locals) + len(ir.code) + 16 + 2*depthMaxLen + len(ir.calls)*callMaxLen
	for i, c := range ir.charges {
		if c.cost > 0 && !uncharged {
			inserts = append(inserts, insert{c.pos, insCharge, i})
			size += chargeMaxLen
		}
	}
	for i, c := range ir.calls {
		inserts = append(inserts, insert{c.pos, insCall, i})
	}
	if ir.callsGuest {
		for i, pos := range ir.returns {
			inserts = append(inserts, insert{pos, insReturn, i})
			size += depthMaxLen
		}
	}
	if size > math.MaxUint32 {
		return nil, fmt.Errorf("%w: instrumented function body over 4 GiB", ErrLimit)
	}
	slices.SortStableFunc(inserts, func(a, b insert) int {
		return cmp.Or(cmp.Compare(a.pos, b.pos), cmp.Compare(a.kind, b.kind))
	})

	// The locals: the function's, then the scratch local.
	body := make([]byte, 0, size)
	extra := uint32(0)
	if ir.usesScratch {
		extra = 1
	}
	if extra > 0 {
		body = appendU32(body, ir.groups+1)
		body = append(body, ir.locals...)
		body = append(body, byte(extra), valI32)
	} else {
		body = appendU32(body, ir.groups)
		body = append(body, ir.locals...)
	}

	// A function that calls guest code tracks the depth: a prologue, and
	// the body wrapped in a block whose end every exit but return passes.
	code := ir.code
	if ir.callsGuest {
		body = w.appendDepthPrologue(body)
		body = append(body, opBlock)
		body = w.blockTypeFor(ir.typeIdx, body)
		code = code[:len(code)-1] // the final end, written after the wrapper's
		w.info.Tracked++
	}
	prev := 0
	for _, in := range inserts {
		body = append(body, code[prev:in.pos]...)
		prev = in.pos
		switch in.kind {
		case insCharge:
			body = w.appendCharge(body, ir.charges[in.i].cost)
			w.info.Blocks++
		case insCall:
			f := ir.calls[in.i].f
			idx := w.funcIndex(f)
			if w.funcs[f-w.funcImports].hoistable() {
				idx = w.copyIndex[f-w.funcImports]
			}
			body = appendU32(append(body, opCall), idx)
		case insReturn:
			body = w.appendDepthEpilogue(body)
		}
	}
	body = append(body, code[prev:]...)
	if ir.callsGuest {
		body = append(body, opEnd) // the wrapper: branches to the function's label land here
		body = w.appendDepthEpilogue(body)
		body = append(body, opEnd)
	}
	out = appendU32(out, uint32(len(body)))
	return append(out, body...), nil
}

// appendDepthPrologue emits the depth limiter's entry, for a function that
// calls guest code:
//
//	global.get depth; i32.const 1; i32.add; global.set depth
//	global.get depth; i32.const MaxDepth; i32.gt_u; if; call depth_exceeded; end
func (m *moduleRewriter) appendDepthPrologue(code []byte) []byte {
	code = appendU32(append(code, opGlobalGet), m.depthGlobal)
	code = append(code, opI32Const, 1, opI32Add)
	code = appendU32(append(code, opGlobalSet), m.depthGlobal)
	code = appendU32(append(code, opGlobalGet), m.depthGlobal)
	code = appendSLEB(append(code, opI32Const), int64(m.cfg.MaxDepth))
	code = append(code, opI32GtU, opIf, blockTypeEmpty)
	code = appendU32(append(code, opCall), m.depthFunc)
	return append(code, opEnd)
}

// appendDepthEpilogue restores the depth on the way out: before a return,
// and after the block wrapping the body. (Decrementing rather than storing
// a saved value keeps nothing live across the function's calls.)
//
//	global.get depth; i32.const 1; i32.sub; global.set depth
func (m *moduleRewriter) appendDepthEpilogue(code []byte) []byte {
	code = appendU32(append(code, opGlobalGet), m.depthGlobal)
	code = append(code, opI32Const, 1, opI32Sub)
	return appendU32(append(code, opGlobalSet), m.depthGlobal)
}

// appendCharge emits the charge of a metered block of cost c:
//
//	global.get used; i64.const c; i64.add; global.set used
//	global.get used; global.get limit; i64.gt_u; if; call refill; end
func (m *moduleRewriter) appendCharge(code []byte, c uint64) []byte {
	code = appendU32(append(code, opGlobalGet), m.usedGlobal)
	code = appendSLEB(append(code, opI64Const), int64(c))
	code = append(code, opI64Add)
	return m.appendCheck(code)
}

// appendCheck stores the new used value from the stack and calls refill if
// it passed limit (compared unsigned).
func (m *moduleRewriter) appendCheck(code []byte) []byte {
	code = appendU32(append(code, opGlobalSet), m.usedGlobal)
	code = appendU32(append(code, opGlobalGet), m.usedGlobal)
	code = appendU32(append(code, opGlobalGet), m.limitGlobal)
	code = append(code, opI64GtU, opIf, blockTypeEmpty)
	code = appendU32(append(code, opCall), m.refillFunc)
	return append(code, opEnd)
}
