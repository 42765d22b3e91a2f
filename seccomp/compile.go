package seccomp

import (
	"fmt"
	"strings"
)

// Compile builds the filter for arch.
//
// The program has three parts:
//
//  1. Load seccomp_data.arch; kill the process unless it is arch's audit
//     value (an i386 int 0x80 call on x86-64, or AArch32 on arm64, carries
//     another one). On amd64, load nr and kill any x32 call (bit 30 set).
//  2. A balanced binary search over the system call numbers, with "jge"
//     comparisons. The number line is cut into intervals of the same
//     outcome (numbers next to each other with the same action share one,
//     and so do the gaps that get Default), so a call costs about
//     log2(intervals) comparisons, never a walk along the whole table.
//  3. At each leaf, the outcome: a "ret", or for a system call with
//     conditions, its rules in order, each testing its arguments and
//     returning its action, then Default.
func (p *Profile) Compile(arch Arch) (*Program, error) {
	info, err := lookupArch(arch)
	if err != nil {
		return nil, err
	}
	calls, err := p.resolve(arch)
	if err != nil {
		return nil, err
	}
	c := &compiler{a: newAssembler(), arch: arch, info: info, def: p.Default}
	c.header()
	c.tree(c.intervals(calls))
	insns, notes, err := c.a.assemble()
	if err != nil {
		return nil, fmt.Errorf("profile %q for %s: %w", p.Name, arch, err)
	}
	if err := validate(insns); err != nil {
		return nil, fmt.Errorf("profile %q for %s: %w", p.Name, arch, err)
	}
	return &Program{profile: p.Name, arch: arch, insns: insns, notes: notes}, nil
}

type compiler struct {
	a    *assembler
	arch Arch
	info *archInfo
	def  Action
}

// outcome is what happens to the system calls of one interval: a single
// action, or the rules of one system call.
type outcome struct {
	action Action
	call   *syscallRules // when not nil, the interval is this one call
}

type interval struct {
	lo    uint32 // first number; the interval ends where the next starts
	out   outcome
	names []string // system calls with rules in the interval
}

func (c *compiler) header() {
	a := c.a
	a.load(offArch, "")
	archOK := a.newLabel()
	a.jump(bpfJEQ, c.info.audit, archOK, next, "audit arch "+string(c.arch))
	a.ret(ActKillProcess, "another architecture or ABI")
	a.bind(archOK)
	a.load(offNr, "")
	if c.info.x32Bit != 0 {
		native := a.newLabel()
		a.jump(bpfJGE, c.info.x32Bit, next, native, "x32 syscall bit")
		a.ret(ActKillProcess, "x32 ABI")
		a.bind(native)
	}
}

// intervals cuts the number line [0, 2^32) by outcome.
func (c *compiler) intervals(calls []syscallRules) []interval {
	ivs := []interval{{lo: 0, out: outcome{action: c.def}}}
	add := func(lo uint32, out outcome, name string) {
		if n := len(ivs); ivs[n-1].lo == lo {
			ivs = ivs[:n-1] // the previous interval is empty
		}
		if n := len(ivs); n > 0 && out.call == nil && ivs[n-1].out.call == nil && ivs[n-1].out.action == out.action {
			if name != "" {
				ivs[n-1].names = append(ivs[n-1].names, name)
			}
			return
		}
		iv := interval{lo: lo, out: out}
		if name != "" {
			iv.names = []string{name}
		}
		ivs = append(ivs, iv)
	}
	for i := range calls {
		call := &calls[i]
		out := outcome{call: call}
		if first := call.rules[0]; len(first.When) == 0 {
			out = outcome{action: first.Action}
		}
		add(uint32(call.nr), out, call.name)
		add(uint32(call.nr)+1, outcome{action: c.def}, "")
	}
	return ivs
}

// tree emits a balanced search over ivs; A holds the system call number.
func (c *compiler) tree(ivs []interval) {
	if len(ivs) == 1 {
		c.leaf(ivs[0])
		return
	}
	mid := len(ivs) / 2
	right := c.a.newLabel()
	c.a.jump(bpfJGE, ivs[mid].lo, right, next, c.numberNote(ivs[mid].lo))
	c.tree(ivs[:mid])
	c.a.bind(right)
	c.tree(ivs[mid:])
}

func (c *compiler) numberNote(nr uint32) string {
	if name, ok := c.info.numbers[int(nr)]; ok {
		return name
	}
	return ""
}

func (c *compiler) leaf(iv interval) {
	if iv.out.call == nil {
		note := "default"
		if len(iv.names) > 0 {
			note = strings.Join(iv.names, " ")
		}
		c.a.ret(iv.out.action, note)
		return
	}
	call := iv.out.call
	for _, r := range call.rules {
		if len(r.When) == 0 {
			c.a.ret(r.Action, call.name)
			return
		}
		fail := c.a.newLabel()
		for _, cond := range r.When {
			c.cond(cond, fail, call.name)
		}
		c.a.ret(r.Action, call.name+": "+condsNote(r.When))
		c.a.bind(fail)
	}
	c.a.ret(c.def, call.name+": default")
}

func condsNote(conds []Cond) string {
	parts := make([]string, len(conds))
	for i, c := range conds {
		parts[i] = c.String()
	}
	return strings.Join(parts, " && ")
}

// cond emits a test of one condition: on to the next instruction when it
// holds, to fail when it does not. A 64-bit argument is two 32-bit words;
// a word the mask leaves out is not loaded at all.
func (c *compiler) cond(cond Cond, fail label, name string) {
	type word struct {
		off         uint32
		mask, value uint32
		note        string
	}
	var words []word
	if m := uint32(cond.Mask >> 32); m != 0 {
		words = append(words, word{argHi(cond.Arg), m, uint32(cond.Value >> 32), fmt.Sprintf("%s: args[%d] hi", name, cond.Arg)})
	}
	if m := uint32(cond.Mask); m != 0 {
		words = append(words, word{argLo(cond.Arg), m, uint32(cond.Value), fmt.Sprintf("%s: args[%d] lo", name, cond.Arg)})
	}
	// Equal needs every word to match; NotEqual needs one word to differ.
	// The instruction after the last word's test is where the condition
	// holds; an earlier word of NotEqual that differs jumps there.
	holds, holdsUsed := c.a.newLabel(), false
	for i, w := range words {
		match, differ := next, fail // where to go when this word matches / differs
		if cond.Op == OpNotEqual {
			match, differ = next, next
			if i == len(words)-1 {
				match = fail
			} else {
				differ, holdsUsed = holds, true
			}
		}
		c.a.load(w.off, w.note)
		if w.value == 0 {
			// jset: "any of the mask's bits set" is "differs from 0".
			c.a.jump(bpfJSET, w.mask, differ, match, "")
			continue
		}
		if w.mask != 0xffffffff {
			c.a.and(w.mask)
		}
		c.a.jump(bpfJEQ, w.value, match, differ, "")
	}
	if holdsUsed {
		c.a.bind(holds)
	}
}
