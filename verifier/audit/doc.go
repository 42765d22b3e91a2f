// Package audit decides whether a WebAssembly module is fit to run as a skill:
// small enough to compile cheaply, importing only the host functions its
// manifest's capabilities allow, and using no feature the sandbox does not
// account for. Audit returns a Report listing every check with the value found
// and the limit it was held to; the verifier quarantines a skill whose report
// is not OK and shows the report to the admin.
//
// The checks, in order: module size; structure (parse); imports allowed and
// counted; exports; defined functions; the largest function body; no start
// function; at most one memory, not shared (threads) and not 64-bit; the
// memory's initial and maximum pages (a memory without a maximum passes with
// Limits.MemoryMax imposed, reported in Report.MemoryMaxPages); tables counted,
// each with a declared maximum under the cap (wazero bounds table.grow only by
// the declared maximum); data segments, counted and summed; custom sections,
// counted and summed; last, that wazero compiles the module with Features and
// the same memory cap the broker will use.
//
// The start function is refused: it runs inside instantiation, before the
// broker has attached a call's context, capabilities and fuel, so its work
// could not be accounted to a call or stopped by one. A skill initialises
// through an ordinary export that the broker calls under the usual limits.
//
// # Security
//
// Who may send bytes: anyone. Modules come out of skill archives, and a signed
// archive may be signed by an attacker's own key (trust on first use), so
// every byte of a module is hostile.
//
// What this package trusts: wazero to decode and validate a module exactly,
// and to refuse every instruction outside Features (this is how atomics are
// refused, along with SIMD, tail calls and the rest: the section walk here
// does not decode function bodies). It does not trust wazero to bound its own
// work: compilation runs only after every cap has passed, under a context with
// Limits.CompileTimeout.
//
// What it checks before believing the bytes: the module size first, before
// anything is read; then a single walk over the sections with a reader that
// checks every length against the bytes left (section sizes, vector counts,
// names), refuses over-long or overflowing LEB128, requires sections in
// order, at most once each, and consumed exactly, and allocates nothing sized
// by a number read from the input. What the walk keeps is a fixed set of
// counters, so a hostile module cannot make the audit use more memory than a
// small multiple of its own size (names are copied while compared).
//
// Names taken from the module appear in a report quoted to ASCII and cut
// short, so a report printed on a terminal cannot carry control sequences.
package audit
