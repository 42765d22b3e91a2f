package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"
)

var hostLog = Import{Module: "stockade", Name: "log"}

type auditCase struct {
	name   string
	module []byte
	// fail lists the checks that must fail, apart from module.valid, which
	// fails whenever another check does. CheckParse alone means every check
	// after it fails as not checked.
	fail []string
}

func auditCases(tb testing.TB) []auditCase {
	hello, err := os.ReadFile("../../testdata/skills/hello/modules/hello.wasm")
	if err != nil {
		tb.Fatal(err)
	}
	nop := bytes.Repeat([]byte{0x01}, 1<<20) // a 1 MiB run of nop
	customs := make([][]byte, 17)
	for i := range customs {
		customs[i] = custom("c", nil)
	}
	exports := make([][]byte, 129)
	for i := range exports {
		exports[i] = export(string(rune('a'+i%26))+string(rune('a'+i/26)), 0)
	}
	return []auditCase{
		{name: "hello", module: hello},
		{name: "valid", module: valid()},
		{name: "allowed import", module: wasm(typeI32(),
			section(secImport, vec(funcImport(hostLog.Module, hostLog.Name))),
			funcs(1), code(ret42()))},
		{name: "import outside the allowed set", module: wasm(typeI32(),
			section(secImport, vec(funcImport(hostLog.Module, hostLog.Name), funcImport("env", "exec\x1b[2J"))),
			funcs(1), code(ret42())),
			fail: []string{CheckImports}},
		{name: "imported memory", module: wasm(
			section(secImport, vec(cat(str("stockade"), str("memory"), []byte{kindMemory, 1, 1, 1})))),
			fail: []string{CheckImports}},
		{name: "too many exports", module: wasm(typeI32(), funcs(1), section(secExport, vec(exports...)), code(ret42())),
			fail: []string{CheckExports}},
		{name: "too many functions", module: wasm(typeI32(), funcs(50_001), section(secCode, repeat(50_001, ret42()))),
			fail: []string{CheckFunctions}},
		{name: "huge function body", module: wasm(typeI32(), funcs(1), code(body(cat(nop, []byte{0x41, 0, 0x0b})...))),
			fail: []string{CheckFunctionBody}},
		{name: "start function", module: wasm(section(secType, vec([]byte{0x60, 0, 0})), funcs(1),
			section(secStart, uleb(0)), code(body(0x0b))),
			fail: []string{CheckStart}},
		{name: "memory without maximum", module: wasm(memory(0, 1))},
		{name: "memory maximum over the cap", module: wasm(memory(1, 1, 0xd0, 0x0f)), // max 2000
			fail: []string{CheckMemoryMax}},
		{name: "memory initial over the cap", module: wasm(memory(1, 0xac, 0x02, 0xac, 0x02)), // 300, 300
			fail: []string{CheckMemoryInitial}},
		{name: "memory maximum below initial", module: wasm(memory(1, 2, 1)),
			fail: []string{CheckMemoryMax}},
		{name: "shared memory", module: wasm(memory(3, 1, 1)),
			fail: []string{CheckThreads}},
		{name: "memory64", module: wasm(memory(5, 1, 1)),
			fail: []string{CheckMemory64}},
		{name: "two memories", module: wasm(section(secMemory, vec([]byte{1, 1, 1}, []byte{1, 1, 1}))),
			fail: []string{CheckMemories}},
		{name: "table over the cap", module: wasm(section(secTable, vec(cat([]byte{0x70, 1, 1}, uleb(200_000))))),
			fail: []string{CheckTableElements}},
		{name: "table without maximum", module: wasm(section(secTable, vec([]byte{0x70, 0, 1}))),
			fail: []string{CheckTableElements}},
		{name: "two tables", module: wasm(section(secTable, vec([]byte{0x70, 1, 1, 1}, []byte{0x70, 1, 1, 1}))),
			fail: []string{CheckTables}},
		{name: "huge data segment", module: wasm(memory(1, 1, 1), section(secData, vec(passive(make([]byte, 4<<20+1))))),
			fail: []string{CheckDataBytes}},
		{name: "too many data segments", module: wasm(memory(1, 1, 1), section(secData, repeat(100_001, passive([]byte{1})))),
			fail: []string{CheckDataSegments}},
		{name: "too many custom sections", module: wasm(customs...),
			fail: []string{CheckCustomSections}},
		{name: "huge custom section", module: wasm(custom("debug", make([]byte, 1<<20))),
			fail: []string{CheckCustomBytes}},
		{name: "module too large", module: wasm(custom("x", make([]byte, 8<<20))),
			fail: []string{CheckModuleSize, CheckParse}},
		{name: "atomics without shared memory", module: wasm(typeI32(), funcs(1), memory(1, 1, 1),
			code(body(0x41, 0, 0xfe, 0x10, 2, 0, 0x0b))), // i32.const 0; i32.atomic.load
			fail: []string{}}, // only wazero refuses: see TestAudit
		{name: "truncated", module: hello[:len(hello)-3], fail: []string{CheckParse}},
		{name: "garbage", module: []byte("\x00asm\x01\x00\x00\x00\xff\xff\xff\xff\xff"), fail: []string{CheckParse}},
		{name: "not wasm", module: []byte("#!/bin/sh\nrm -rf /\n"), fail: []string{CheckParse}},
		{name: "empty", module: nil, fail: []string{CheckParse}},
		{name: "overlong LEB128", module: wasm([]byte{secCustom, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00}), fail: []string{CheckParse}},
		{name: "LEB128 over 32 bits", module: wasm([]byte{secCustom, 0xff, 0xff, 0xff, 0xff, 0x1f}), fail: []string{CheckParse}},
		{name: "section past the end", module: wasm([]byte{secType, 0x10, 0x00}), fail: []string{CheckParse}},
		{name: "sections out of order", module: wasm(funcs(0), typeI32()), fail: []string{CheckParse}},
		{name: "section repeated", module: wasm(typeI32(), typeI32()), fail: []string{CheckParse}},
		{name: "count over the section", module: wasm(section(secExport, uleb(1_000_000))), fail: []string{CheckParse}},
		{name: "bytes after a section's content", module: wasm(section(secMemory, vec([]byte{0, 1}), []byte{0})), fail: []string{CheckParse}},
		{name: "bodies do not match functions", module: wasm(typeI32(), funcs(2), code(ret42())), fail: []string{CheckParse}},
		{name: "unknown section", module: wasm(section(13, vec())), fail: []string{CheckParse}},
	}
}

func allowed() Imports { return NewImports(hostLog) }

func TestAudit(t *testing.T) {
	t.Parallel()
	allChecks := []string{CheckModuleSize, CheckParse, CheckImports, CheckImportCount, CheckExports,
		CheckFunctions, CheckFunctionBody, CheckStart, CheckMemories, CheckThreads, CheckMemory64,
		CheckMemoryInitial, CheckMemoryMax, CheckTables, CheckTableElements, CheckDataSegments,
		CheckDataBytes, CheckCustomSections, CheckCustomBytes, CheckValid}
	for _, tc := range auditCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := Audit(tc.module, allowed(), DefaultLimits())
			var names []string
			for _, c := range r.Checks {
				names = append(names, c.Name)
			}
			if !slices.Equal(names, allChecks) {
				t.Fatalf("checks = %v, want %v", names, allChecks)
			}
			failed := r.Failed()
			switch {
			case tc.fail == nil:
				if !r.OK() {
					t.Fatalf("refused, want accepted: %v\n%s", failed, dump(r))
				}
			case slices.Contains(tc.fail, CheckParse):
				if r.OK() {
					t.Fatalf("accepted, want refused by the parser")
				}
				want := allChecks[slices.Index(allChecks, CheckParse):]
				if slices.Contains(tc.fail, CheckModuleSize) {
					want = allChecks
				}
				if !slices.Equal(failed, want) {
					t.Fatalf("failed = %v, want %v", failed, want)
				}
				if slices.Contains(tc.fail, CheckModuleSize) {
					return // well-formed, just too big
				}
				// wazero must refuse it too (the audit does not ask it to).
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := compile(ctx, tc.module, 1024); err == nil {
					t.Fatalf("wazero compiled a module the parser refused")
				}
			default:
				want := append(slices.Clone(tc.fail), CheckValid)
				if !slices.Equal(failed, want) {
					t.Fatalf("failed = %v, want %v\n%s", failed, want, dump(r))
				}
			}
		})
	}
}

func dump(r Report) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

func TestMemoryMaximum(t *testing.T) {
	t.Parallel()
	r := Audit(wasm(memory(0, 1)), nil, DefaultLimits())
	c, _ := r.Check(CheckMemoryMax)
	if !r.OK() || !r.MemoryMaxImposed || r.MemoryMaxPages != 1024 || c.Found != "none declared; imposed 1024 pages" {
		t.Fatalf("no maximum: imposed=%v pages=%d found=%q", r.MemoryMaxImposed, r.MemoryMaxPages, c.Found)
	}
	r = Audit(valid(), nil, DefaultLimits())
	if !r.OK() || r.MemoryMaxImposed || r.MemoryMaxPages != 2 {
		t.Fatalf("declared maximum: imposed=%v pages=%d", r.MemoryMaxImposed, r.MemoryMaxPages)
	}
	l := DefaultLimits()
	l.MemoryMax = 4
	r = Audit(wasm(memory(0, 1)), nil, l)
	if !r.OK() || r.MemoryMaxPages != 4 {
		t.Fatalf("lower cap: pages=%d", r.MemoryMaxPages)
	}
}

func TestImportReportIsQuoted(t *testing.T) {
	t.Parallel()
	m := wasm(typeI32(), section(secImport, vec(funcImport("env", "a\x1b[2Jb"), funcImport("env", "x"),
		funcImport("env", "y"), funcImport("env", "z"), funcImport("env", "w"))))
	r := Audit(m, nil, DefaultLimits())
	c, _ := r.Check(CheckImports)
	if c.OK || !bytes.Contains([]byte(c.Found), []byte(`"env.a\x1b[2Jb"`)) || !bytes.Contains([]byte(c.Found), []byte("and 1 more")) {
		t.Fatalf("found = %q", c.Found)
	}
	for _, b := range []byte(c.Found) {
		if b < 0x20 || b > 0x7e {
			t.Fatalf("unprintable byte %#x in %q", b, c.Found)
		}
	}
}

func TestAuditDoesNotCompileOverCaps(t *testing.T) {
	t.Parallel()
	// A module over a cap is refused without reaching wazero: the report
	// says so rather than carrying a wazero error.
	r := Audit(wasm(memory(3, 1, 1)), nil, DefaultLimits())
	c, _ := r.Check(CheckValid)
	if c.OK || c.Found != "not compiled: an earlier check failed" {
		t.Fatalf("module.valid = %+v", c)
	}
}

func TestAtomicsRefusedByWazero(t *testing.T) {
	t.Parallel()
	m := wasm(typeI32(), funcs(1), memory(1, 1, 1), code(body(0x41, 0, 0xfe, 0x10, 2, 0, 0x0b)))
	r := Audit(m, nil, DefaultLimits())
	if r.OK() || !slices.Equal(r.Failed(), []string{CheckValid}) {
		t.Fatalf("failed = %v", r.Failed())
	}
}

func TestReportJSON(t *testing.T) {
	t.Parallel()
	for _, m := range [][]byte{valid(), wasm(memory(3, 1, 1))} {
		r := Audit(m, nil, DefaultLimits())
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			OK     bool    `json:"ok"`
			Checks []Check `json:"checks"`
			Pages  uint32  `json:"memory_max_pages"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.OK != r.OK() || !slices.Equal(got.Checks, r.Checks) || got.Pages != r.MemoryMaxPages {
			t.Fatalf("JSON %s does not match the report", b)
		}
	}
}

func TestBigModulesPass(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1 << 20, 8 << 20} {
		for _, m := range [][]byte{bigModule(size), bigCodeModule(size)} {
			if len(m) != size {
				t.Fatalf("module of %d bytes, want %d", len(m), size)
			}
			r := Audit(m, nil, benchLimits())
			if !r.OK() {
				t.Fatalf("%d bytes: refused: %v\n%s", size, r.Failed(), dump(r))
			}
		}
	}
}

// benchLimits are the defaults with room for a data segment filling an
// 8 MiB module.
func benchLimits() Limits {
	l := DefaultLimits()
	l.DataBytes = 8 << 20
	return l
}

func TestLEB128(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []byte
		bits uint
		want uint64
		ok   bool
	}{
		{[]byte{0x00}, 32, 0, true},
		{[]byte{0x7f}, 32, 127, true},
		{[]byte{0x80, 0x01}, 32, 128, true},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 32, 1<<32 - 1, true},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x1f}, 32, 0, false},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 32, 0, false},
		{[]byte{0x80}, 32, 0, false},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 64, 1<<64 - 1, true},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 64, 0, false},
	} {
		r := &reader{buf: tc.in}
		got, err := r.uleb(tc.bits)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("uleb(%x, %d) = %d, %v; want %d, ok=%v", tc.in, tc.bits, got, err, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		in   []byte
		bits uint
		ok   bool
	}{
		{[]byte{0x7f}, 32, true},                          // -1
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x7f}, 32, true},  // -1, padded
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x78}, 32, true},  // -2^31
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x07}, 32, true},  // 2^31-1
		{[]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 32, false}, // 2^32-1
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x70}, 32, false},
		{[]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 32, false},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, 64, true},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}, 64, true},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 64, false},
	} {
		r := &reader{buf: tc.in}
		if err := r.sleb(tc.bits); (err == nil) != tc.ok || (tc.ok && r.remaining() != 0) {
			t.Errorf("sleb(%x, %d) = %v; want ok=%v", tc.in, tc.bits, err, tc.ok)
		}
	}
}

// TestAuditTinyBombs: modules of a few bytes that made wazero allocate
// gigabytes or panic are refused by the audit's own parse, before wazero
// sees them, and a panic inside the compile is a refusal.
func TestAuditTinyBombs(t *testing.T) {
	rawBody := func(b ...byte) []byte { return cat(uleb(uint64(len(b))), b) }
	for _, tc := range []struct {
		name   string
		module []byte
	}{
		// One group of 2^30 i32 locals.
		{"2^30 locals", wasm(typeI32(), funcs(1), code(rawBody(cat([]byte{1}, uleb(1<<30), []byte{0x7f, 0x41, 0, 0x0b})...)))},
		// Two groups whose sum passes the cap.
		{"locals summed past the cap", wasm(typeI32(), funcs(1), code(rawBody(cat([]byte{2}, uleb(40_000), []byte{0x7f}, uleb(40_000), []byte{0x7f, 0x41, 0, 0x0b})...)))},
		// Local declarations that run past their body.
		{"locals past the body", wasm(typeI32(), funcs(1), code(rawBody(3, 1, 0x7f)))},
		// Counts far beyond the bytes of their sections.
		{"element count", wasm(section(secElement, uleb(1<<25)))},
		{"type count", wasm(section(secType, uleb(1<<25)))},
		{"export count", wasm(section(secExport, uleb(1<<25)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Audit(tc.module, allowed(), DefaultLimits())
			if r.OK() {
				t.Fatal("accepted")
			}
			if c := r.Checks[1]; c.Name != CheckParse || c.OK {
				t.Fatalf("refused, but not by the parse: %+v", r.Checks)
			}
		})
	}
	// A panic in wazero's compile is reported, not propagated.
	if err := func() (err error) {
		defer func() {
			if recover() != nil {
				err = nil
				t.Fatal("the panic escaped")
			}
		}()
		return compile(t.Context(), []byte("\x00asm\x01\x00\x00\x00\x01"), 16)
	}(); err == nil {
		t.Fatal("a truncated module compiled")
	}
}
