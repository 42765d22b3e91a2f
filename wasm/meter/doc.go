// Package meter gives WebAssembly skills deterministic fuel and a bounded
// call depth. wazero has neither, so Instrument rewrites a module before it
// is compiled: the module then counts its own work in a global and calls
// into the host when it passes a limit. The runtime half of the package
// (NewHostModule, Meter, Classify) is what the executor uses to run such a
// module: it sets the budget, stops the guest when the budget is spent, a
// deadline passes or a watchdog calls Interrupt, and tells the outcomes
// apart.
//
// # What Instrument adds
//
// Two imported functions, after the module's own imports, so that every
// defined function's index grows by 2 (calls, ref.func in code and in
// constant expressions, element segments, exports and the start section are
// renumbered; custom sections, names included, are dropped):
//
//	stockade_meter.refill         () -> ()   the fuel slice ran out
//	stockade_meter.depth_exceeded () -> ()   the call depth limit was hit
//
// Three globals, after the module's own, exported:
//
//	__stockade_fuel_used  (mut i64) = 0   fuel charged so far; only the guest writes it
//	__stockade_fuel_limit (mut i64) = 0   when to call refill; only the host writes it
//	__stockade_depth      (mut i32) = 0   guest functions on the stack
//
// And types: () -> (), and () -> (results) for functions with parameters
// and several results (the block that wraps their body, below). A module
// that imports from "stockade_meter" or exports a name starting
// "__stockade_" is refused (ErrReserved).
//
// # Metered blocks
//
// Each function body is walked once with a stack of its blocks. A metered
// block is a run of instructions that, barring a trap, runs whole once
// entered. One starts at function entry; at the first instruction of a
// loop (a back-edge target); at the start of each arm of an if; after a
// br_if; after the end of an if; and after the end of a block that a
// reachable branch targets (a merge point). A block that no branch targets
// does not split its parent: its end continues the enclosing metered block.
// br, br_table, return and unreachable end a metered block, and the code
// after them up to the enclosing end or else is unreachable: it is copied
// uncharged. Calls do not end a metered block: the instructions after a
// call are charged with those before it, which is exact whenever the
// callee returns (and a callee that never returns is stopped by fuel or
// depth anyway).
//
// A block's cost is the sum of its instructions' costs (below), including
// the branch that ends it. It is charged at the block's start, by
//
//	global.get used; i64.const cost; i64.add; global.set used
//	global.get used; global.get limit; i64.gt_u; if; call refill; end
//
// so every instruction is paid for before it runs, and an instruction that
// does not run is not charged unless a trap cuts its block short. Blocks of
// cost 0 get no charge. Every cycle of control flow passes a loop header or
// a call, and each of those is charged at least 1, so no loop or recursion
// runs free.
//
// Hoisting: a small function (up to 512 bytes of code) that calls no guest
// function and is a single metered block (no loop, no branch) has its cost
// added to the metered block of each direct call to it, and those calls go
// to an uncharged copy of it appended to the module. Calls through a table,
// exports and the start function keep the charged original. Totals do not
// change; only the number of charges does.
//
// # Cost table, schedule 1
//
// Fuel is counted in the wasmtime convention, so budgets stay comparable:
//
//	instruction                                              cost
//	nop drop block loop end else unreachable return             0
//	call call_indirect                                          2
//	memory.grow                                                 1 + 64 per page requested
//	memory.fill memory.copy memory.init                         1 + 1 per 64 bytes (n >> 6)
//	table.fill table.copy table.init table.grow                 1 + 1 per element
//	any other instruction (if, br*, select, locals, globals,
//	  loads, stores, constants, numeric, ref.*, table.get/set/
//	  size, memory.size, data.drop, elem.drop, trunc_sat)       1
//	function entry                                              1 per declared local (not parameters)
//	host function                                               what it passes to Meter.Charge
//
// The dynamic part of memory.grow and the bulk instructions is charged just
// before the instruction, from its operand (kept with local.tee in a
// scratch local the instrumentation adds), with the same check as a block:
// a grow that fails, or a copy that traps out of bounds, has still been
// paid for. Segment initialisation at instantiation is not charged: the
// audit caps data and element segments. The instructions Instrument adds
// cost nothing. Any change to this table or to what is charged is a new
// Schedule.
//
// # Call depth
//
// A function that contains a reachable call to a defined function, or a
// call_indirect, starts with
//
//	global.get depth; i32.const 1; i32.add; global.set depth
//	global.get depth; i32.const MaxDepth; i32.gt_u; if; call depth_exceeded; end
//
// and its body is wrapped in a block whose end, where every branch to the
// function's label now lands, decrements depth again; so does each
// reachable return. Functions that call no guest code (leaves, and callers
// of host functions only) are not counted: they add at most one frame.
// MaxDepth (default 4096) is therefore the number of nested non-leaf guest
// frames. A trap leaves depth raised; Meter.Begin resets it. Tail calls are
// refused, which keeps the count sound. wazero's own stack ceiling stays
// behind it, and Classify reports both as KindDepth.
//
// # Refusals
//
// The walk decodes WebAssembly 2.0 without SIMD: MVP, multi-value, bulk
// memory and table instructions, reference types, sign extension and
// saturating truncation. It refuses, with a *FeatureError (ErrUnsupported),
// SIMD (0xFD and v128), atomics (0xFE, shared memories), exceptions
// (try/catch/throw, try_table, the tag section, exnref), tail calls
// (return_call*), GC and typed function references (0xFB, call_ref, typed
// references), multiple memories, memory64, extended constant expressions
// and any unknown opcode; and with ErrLimit a module over MaxModuleBytes or
// a function declaring more than MaxLocals locals.
//
// # Running an instrumented module
//
// The runtime must use Features and have NewHostModule instantiated; every
// call into the instance carries its Meter (WithMeter), including the
// instantiation when the module has a start function. refill, called when
// used passes limit, stops the guest by panicking with an error that
// api.Function.Call returns wrapped: the interruption's cause if Interrupt
// was called, ErrTimedOut (wrapping the deadline) or ErrInterrupted
// (wrapping the cause) if the context is done, ErrFuelExhausted if used
// passed Budget; otherwise it sets limit = min(Budget, used + Slice) and
// returns. So the guest returns to Go at least once per Slice (1,000,000 by
// default, a fraction of a millisecond), which lets the garbage collector
// and a watchdog run, and Interrupt, by setting limit to 0, stops a guest
// at its next metered block whether it loops or recurses. Fuel is
// deterministic: the same module, Config and input give the same Used on
// every run, on both wazero engines, whatever the Slice and the timing.
//
// # Security
//
// Who may send bytes: anyone. Modules come from skill archives and are
// hostile; Instrument may run before or without the audit.
//
// What Instrument checks before believing the bytes: its walk reads through
// a bounds-checked reader that refuses lengths and counts larger than the
// bytes left and over-long LEB128, and allocates nothing sized by a number
// from the input that the input's own size does not bound (locals are
// capped at MaxLocals). Every index it uses to look something up (types,
// functions called) is range-checked. Only a module the walk accepts is
// given to wazero, minus its custom sections, to validate with Features
// (wazero v1.12.0 sizes allocations by counts it has not checked yet, and
// panics on some malformed code sections; the walk refuses those first and
// validate recovers as a second line).
//
// What the output's soundness rests on: validation of the original proves
// it cannot name what the instrumentation appends (the globals and the
// copies are past the end of its index spaces, and the imports are reached
// only through renumbered indices), so guest code cannot write used, limit
// or depth, call refill or depth_exceeded, or take a reference to them.
// The exports make the globals visible to the host, and to any module
// linked against the instance: instantiate instrumented modules anonymously
// (WithName("")) and never let another module import from them.
//
// What the runtime trusts: wazero to run the instrumented module as
// written, and in particular its compiler to reload limit at each metered
// block, which Interrupt depends on (TestInterruptLatency guards it; with
// the interpreter, Interrupt's store is a data race by the Go memory model,
// see Meter.Interrupt); the
// embedder to attach the right Meter to each call's context and to call
// Begin before each top-level call. A missing or mismatched Meter stops the
// guest (ErrNoMeter) rather than letting it run unmetered. Host functions
// must Charge for the work they do on the guest's behalf.
package meter
