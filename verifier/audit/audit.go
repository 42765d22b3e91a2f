package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Import names one host function a module may import.
type Import struct {
	Module, Name string
}

// Imports is a set of host functions: those the manifest's capabilities
// allow. The nil set allows nothing.
type Imports map[Import]struct{}

// NewImports returns the set of the given imports.
func NewImports(list ...Import) Imports {
	s := make(Imports, len(list))
	for _, i := range list {
		s[i] = struct{}{}
	}
	return s
}

// Allows reports whether i is in the set.
func (s Imports) Allows(i Import) bool {
	_, ok := s[i]
	return ok
}

// PageSize is the size of a WebAssembly memory page.
const PageSize = 64 << 10

// Limits are the caps a module must fit. Every field must be set: a zero
// caps the quantity at zero. DefaultLimits gives the values from the project's
// research note on Tier A (peers-wasm.md, §6).
type Limits struct {
	ModuleBytes       int    // size of the whole module
	Imports           int    // number of imports
	Exports           int    // number of exports
	Functions         int    // number of functions the module defines
	FunctionBodyBytes int    // size of each function body
	MemoryInitial     uint32 // declared initial memory, in pages
	// MemoryMax caps the declared maximum memory, in pages. A memory that
	// declares no maximum gets this one imposed; the broker must run the
	// module with it (wazero's WithMemoryLimitPages).
	MemoryMax      uint32
	Tables         int    // number of tables, defined and imported
	TableElements  uint32 // each table's declared maximum (one is required)
	DataSegments   int    // number of data segments
	DataBytes      int    // bytes in all data segments together
	CustomSections int    // number of custom sections
	CustomBytes    int    // bytes in all custom sections together
	// CompileTimeout bounds wazero's compilation.
	CompileTimeout time.Duration
}

// DefaultLimits returns the caps for skills.
func DefaultLimits() Limits {
	return Limits{
		ModuleBytes:       8 << 20,
		Imports:           256,
		Exports:           128,
		Functions:         50_000,
		FunctionBodyBytes: 1 << 20,
		MemoryInitial:     256,  // 16 MiB
		MemoryMax:         1024, // 64 MiB
		Tables:            1,
		TableElements:     100_000,
		// Go's linker writes one active segment per run of non-zero data
		// (a run ends at 8 or more zero bytes), so a small Go skill has
		// about 40,000 of them; it stops splitting at 100,000
		// (cmd/link/internal/wasm: writeDataSec, maxNumSegments), the
		// limit V8 also applies. What segments cost is bounded elsewhere:
		// each takes at least 3 bytes of a module of at most ModuleBytes,
		// the audit keeps a counter, not a list, and the bytes they copy
		// into memory at each instantiation are capped by DataBytes.
		DataSegments:   100_000,
		DataBytes:      4 << 20,
		CustomSections: 16,
		CustomBytes:    1 << 20,
		CompileTimeout: 30 * time.Second,
	}
}

// Check is one line of a Report: what was checked, whether it passed, what
// was found and the limit it was held to. Found and Limit are for people;
// Name is stable and is what programs should match.
type Check struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Found string `json:"found"`
	Limit string `json:"limit,omitempty"`
}

// The names of the checks, in the order a Report lists them.
const (
	CheckModuleSize     = "module.size"
	CheckParse          = "module.parse"
	CheckImports        = "imports.allowed"
	CheckImportCount    = "imports.count"
	CheckExports        = "exports.count"
	CheckFunctions      = "functions.count"
	CheckFunctionBody   = "functions.body_bytes"
	CheckStart          = "start.absent"
	CheckMemories       = "memory.count"
	CheckThreads        = "memory.shared"
	CheckMemory64       = "memory.memory64"
	CheckMemoryInitial  = "memory.initial_pages"
	CheckMemoryMax      = "memory.max_pages"
	CheckTables         = "tables.count"
	CheckTableElements  = "tables.max_elements"
	CheckDataSegments   = "data.segments"
	CheckDataBytes      = "data.bytes"
	CheckCustomSections = "custom.sections"
	CheckCustomBytes    = "custom.bytes"
	CheckValid          = "module.valid"
)

// Report is the outcome of an audit. It always lists every check, in the
// order of the constants above; a check that could not run (because the
// module could not be parsed, or an earlier cap failed) is listed as failed.
type Report struct {
	Checks []Check `json:"checks"`
	// MemoryMaxPages is the maximum memory the module runs with, declared or
	// imposed; zero if it has no memory.
	MemoryMaxPages uint32 `json:"memory_max_pages"`
	// MemoryMaxImposed is set when the module declared no maximum and
	// MemoryMaxPages was imposed.
	MemoryMaxImposed bool `json:"memory_max_imposed"`
}

// OK reports whether the report has checks and every one of them passed.
func (r Report) OK() bool {
	if len(r.Checks) == 0 {
		return false
	}
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Failed returns the names of the checks that failed.
func (r Report) Failed() []string {
	var names []string
	for _, c := range r.Checks {
		if !c.OK {
			names = append(names, c.Name)
		}
	}
	return names
}

// Check returns the check with the given name.
func (r Report) Check(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// MarshalJSON encodes the report with its overall verdict as "ok".
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		OK bool `json:"ok"`
		plain
	}{r.OK(), plain(r)})
}

// notRun is the Found of a check that could not run.
const notRun = "not checked"

// Audit checks a module against the allowed imports and the limits, and
// returns a report of every check. It never returns an error: a module that
// cannot be read fails the parse check, and everything after it fails as not
// checked. Wazero compiles the module only if every other check passed, so
// the caps bound the cost of compiling.
func Audit(module []byte, allowed Imports, limits Limits) Report {
	var r Report
	add := func(name string, ok bool, found, limit string) {
		r.Checks = append(r.Checks, Check{Name: name, OK: ok, Found: found, Limit: limit})
	}
	itoa := strconv.Itoa
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }

	sizeOK := len(module) <= limits.ModuleBytes
	add(CheckModuleSize, sizeOK, itoa(len(module))+" bytes", itoa(limits.ModuleBytes)+" bytes")

	var m *moduleInfo
	var perr error = errors.New("module too large to parse")
	if sizeOK {
		m, perr = parse(module, allowed)
	}
	if perr != nil {
		add(CheckParse, false, perr.Error(), "")
		for _, name := range []string{CheckImports, CheckImportCount, CheckExports, CheckFunctions,
			CheckFunctionBody, CheckStart, CheckMemories, CheckThreads, CheckMemory64,
			CheckMemoryInitial, CheckMemoryMax, CheckTables, CheckTableElements,
			CheckDataSegments, CheckDataBytes, CheckCustomSections, CheckCustomBytes, CheckValid} {
			add(name, false, notRun, "")
		}
		return r
	}
	add(CheckParse, true, "well-formed", "")

	found := "none outside the allowed set"
	if m.refusedImports > 0 {
		found = fmt.Sprintf("%d refused: %s", m.refusedImports, joinNames(m.offenders, m.refusedImports))
	}
	add(CheckImports, m.refusedImports == 0, found, "host functions allowed by the manifest")
	add(CheckImportCount, m.imports <= limits.Imports, itoa(m.imports), itoa(limits.Imports))
	add(CheckExports, m.exports <= limits.Exports, itoa(m.exports), itoa(limits.Exports))
	add(CheckFunctions, m.funcs <= limits.Functions, itoa(m.funcs), itoa(limits.Functions))
	found = "no functions"
	if m.funcs > 0 {
		found = fmt.Sprintf("%d bytes (function %d)", m.maxBody, m.maxBodyIndex)
	}
	add(CheckFunctionBody, m.maxBody <= limits.FunctionBodyBytes, found, itoa(limits.FunctionBodyBytes)+" bytes")
	found = "absent"
	if m.start {
		found = "present"
	}
	add(CheckStart, !m.start, found, "absent")
	add(CheckMemories, m.memories <= 1, itoa(m.memories), "1")
	found = "no"
	if m.anyShared {
		found = "shared memory"
	}
	add(CheckThreads, !m.anyShared, found, "no shared memory")
	found = "no"
	if m.any64 {
		found = "64-bit memory"
	}
	add(CheckMemory64, !m.any64, found, "32-bit memory only")

	mem := m.memory
	if m.memories == 0 {
		add(CheckMemoryInitial, true, "no memory", u(uint64(limits.MemoryInitial))+" pages")
		add(CheckMemoryMax, true, "no memory", u(uint64(limits.MemoryMax))+" pages")
	} else {
		add(CheckMemoryInitial, mem.min <= uint64(limits.MemoryInitial), u(mem.min)+" pages", u(uint64(limits.MemoryInitial))+" pages")
		switch {
		case !mem.hasMax:
			r.MemoryMaxPages, r.MemoryMaxImposed = limits.MemoryMax, true
			add(CheckMemoryMax, true, "none declared; imposed "+u(uint64(limits.MemoryMax))+" pages", u(uint64(limits.MemoryMax))+" pages")
		case mem.max < mem.min:
			add(CheckMemoryMax, false, u(mem.max)+" pages, below the initial "+u(mem.min), u(uint64(limits.MemoryMax))+" pages")
		default:
			ok := mem.max <= uint64(limits.MemoryMax)
			if ok {
				r.MemoryMaxPages = uint32(mem.max)
			}
			add(CheckMemoryMax, ok, u(mem.max)+" pages", u(uint64(limits.MemoryMax))+" pages")
		}
	}

	add(CheckTables, m.tables <= limits.Tables, itoa(m.tables), itoa(limits.Tables))
	switch {
	case m.tables == 0:
		add(CheckTableElements, true, "no tables", u(uint64(limits.TableElements)))
	case m.tableNoMax:
		add(CheckTableElements, false, "a table declares no maximum", u(uint64(limits.TableElements)))
	default:
		add(CheckTableElements, m.tableLargest <= uint64(limits.TableElements), u(m.tableLargest), u(uint64(limits.TableElements)))
	}
	add(CheckDataSegments, m.dataSegments <= limits.DataSegments, itoa(m.dataSegments), itoa(limits.DataSegments))
	add(CheckDataBytes, m.dataBytes <= uint64(limits.DataBytes), u(m.dataBytes)+" bytes", itoa(limits.DataBytes)+" bytes")
	add(CheckCustomSections, m.customSections <= limits.CustomSections, itoa(m.customSections), itoa(limits.CustomSections))
	add(CheckCustomBytes, m.customBytes <= uint64(limits.CustomBytes), u(m.customBytes)+" bytes", itoa(limits.CustomBytes)+" bytes")

	if !r.OK() {
		add(CheckValid, false, "not compiled: an earlier check failed", "compiled by wazero")
		return r
	}
	pages := limits.MemoryMax
	if pages == 0 || pages > 65536 {
		// wazero panics on a limit above 65536 pages; refuse to compile
		// rather than pass it an impossible cap.
		add(CheckValid, false, "not compiled: memory limit "+u(uint64(pages))+" pages out of range", "compiled by wazero")
		return r
	}
	ctx, cancel := context.WithTimeout(context.Background(), limits.CompileTimeout)
	defer cancel()
	if err := compile(ctx, module, pages); err != nil {
		add(CheckValid, false, err.Error(), "compiled by wazero")
		return r
	}
	add(CheckValid, true, "compiled by wazero", "compiled by wazero")
	return r
}

func joinNames(names []string, total int) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	if total > len(names) {
		s += fmt.Sprintf(" and %d more", total-len(names))
	}
	return s
}
