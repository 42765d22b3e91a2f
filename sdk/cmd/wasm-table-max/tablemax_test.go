package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stockade-dev/stockade/verifier/audit"
)

// module assembles a module from sections, each given as id and body.
func module(sections ...[]byte) []byte {
	b := wasmHeader[:]
	for _, s := range sections {
		b = append(b, s...)
	}
	return b
}

func section(id byte, body ...byte) []byte {
	return append(appendULEB([]byte{id}, uint64(len(body))), body...)
}

// paddedSection frames body with a size padded to 5 bytes, as Go's linker
// writes it.
func paddedSection(id byte, body ...byte) []byte {
	n := len(body)
	return append([]byte{id, byte(n&0x7f) | 0x80, byte(n>>7&0x7f) | 0x80, byte(n>>14&0x7f) | 0x80, byte(n>>21&0x7f) | 0x80, byte(n >> 28)}, body...)
}

var (
	typeSec   = section(1, 1, 0x60, 0, 0) // one type: [] -> []
	memorySec = section(5, 1, 0, 1)       // one memory, min 1, no max
	custom    = section(0, 3, 'a', 'b', 'c', 0xff)
)

type tableCase struct {
	name    string
	in      []byte
	want    []byte // nil: want in unchanged
	changed int
	refused bool
}

func tableCases() []tableCase {
	// Go's shape: a padded size, one funcref table of 6251 elements, no max.
	goTable := paddedSection(secTable, 1, refFunc, limitsMin, 0xeb, 0x30)
	return []tableCase{
		{name: "Go's table",
			in:   module(custom, typeSec, goTable, memorySec, custom),
			want: module(custom, typeSec, section(secTable, 1, refFunc, limitsMinMax, 0xeb, 0x30, 0xeb, 0x30), memorySec, custom), changed: 1},
		{name: "table of zero",
			in:   module(section(secTable, 1, refFunc, limitsMin, 0)),
			want: module(section(secTable, 1, refFunc, limitsMinMax, 0, 0)), changed: 1},
		{name: "two tables, one bounded",
			in:   module(section(secTable, 2, refFunc, limitsMinMax, 1, 2, refExtern, limitsMin, 0x80, 0x01)),
			want: module(section(secTable, 2, refFunc, limitsMinMax, 1, 2, refExtern, limitsMinMax, 0x80, 0x01, 0x80, 0x01)), changed: 1},
		{name: "largest minimum",
			in:   module(section(secTable, 1, refFunc, limitsMin, 0xff, 0xff, 0xff, 0xff, 0x0f)),
			want: module(section(secTable, 1, refFunc, limitsMinMax, 0xff, 0xff, 0xff, 0xff, 0x0f, 0xff, 0xff, 0xff, 0xff, 0x0f)), changed: 1},
		{name: "already bounded", in: module(typeSec, section(secTable, 1, refFunc, limitsMinMax, 1, 1))},
		{name: "no table", in: module(typeSec, memorySec)},
		{name: "empty module", in: module()},
		{name: "empty table section", in: module(section(secTable, 0))},

		{name: "no header", in: []byte("\x00asm"), refused: true},
		{name: "version 2", in: []byte("\x00asm\x02\x00\x00\x00"), refused: true},
		{name: "section past the end", in: append(module(), secTable, 10, 1), refused: true},
		{name: "size overflows 32 bits", in: append(module(), secTable, 0xff, 0xff, 0xff, 0xff, 0x1f), refused: true},
		{name: "size LEB too long", in: append(module(), secTable, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00), refused: true},
		{name: "unknown section", in: module(section(13, 0)), refused: true},
		{name: "repeated table section", in: module(section(secTable, 0), section(secTable, 0)), refused: true},
		{name: "out of order", in: module(memorySec, section(secTable, 0)), refused: true},
		{name: "shared limits", in: module(section(secTable, 1, refFunc, 0x03, 1, 1)), refused: true},
		{name: "table64", in: module(section(secTable, 1, refFunc, 0x04, 1)), refused: true},
		{name: "unknown element type", in: module(section(secTable, 1, 0x7f, limitsMin, 1)), refused: true},
		{name: "maximum below minimum", in: module(section(secTable, 1, refFunc, limitsMinMax, 2, 1)), refused: true},
		{name: "minimum overflows", in: module(section(secTable, 1, refFunc, limitsMin, 0xff, 0xff, 0xff, 0xff, 0x10)), refused: true},
		{name: "truncated table", in: module(section(secTable, 1, refFunc, limitsMin)), refused: true},
		{name: "count beyond the section", in: module(section(secTable, 200, refFunc)), refused: true},
		{name: "trailing bytes in the section", in: module(section(secTable, 1, refFunc, limitsMin, 1, 0)), refused: true},
	}
}

func TestSetTableMax(t *testing.T) {
	t.Parallel()
	for _, tc := range tableCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, changed, err := setTableMax(tc.in)
			if tc.refused {
				if !errors.Is(err, errUnsupported) {
					t.Fatalf("err %v, want %v", err, errUnsupported)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == nil {
				want = tc.in
			}
			if !bytes.Equal(got, want) || changed != tc.changed {
				t.Fatalf("got % x (%d changed)\nwant % x (%d)", got, changed, want, tc.changed)
			}
			checkRewrite(t, tc.in, got, changed)
		})
	}
}

// checkRewrite holds a successful rewrite to its properties: the output is
// understood too, the rewrite is idempotent, and only the table section
// changed.
func checkRewrite(t *testing.T, in, out []byte, changed int) {
	t.Helper()
	again, n, err := setTableMax(out)
	if err != nil || n != 0 || !bytes.Equal(again, out) {
		t.Fatalf("a second pass: %d changed, err %v", n, err)
	}
	if changed == 0 {
		if !bytes.Equal(in, out) {
			t.Fatal("nothing changed, but the bytes did")
		}
		return
	}
	// Only the table section differs.
	si, ei := tableSpan(t, in)
	so, eo := tableSpan(t, out)
	if si != so || !bytes.Equal(in[:si], out[:so]) || !bytes.Equal(in[ei:], out[eo:]) {
		t.Fatalf("bytes outside the table section changed (table at %d-%d, now %d-%d)", si, ei, so, eo)
	}
}

// tableSpan returns where the table section of an accepted module starts
// and ends.
func tableSpan(t *testing.T, b []byte) (start, end int) {
	t.Helper()
	r := &reader{buf: b, off: len(wasmHeader)}
	for r.remaining() > 0 {
		start := r.off
		id, _ := r.byte()
		size, err := r.u32()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.bytes(size); err != nil {
			t.Fatal(err)
		}
		if id == secTable {
			return start, r.off
		}
	}
	t.Fatal("no table section")
	return 0, 0
}

// TestAuditAfterRewrite: a table without a maximum fails the verifier's
// audit; rewritten, the same module passes it.
func TestAuditAfterRewrite(t *testing.T) {
	t.Parallel()
	in := module(section(secTable, 1, refFunc, limitsMin, 4))
	if r := audit.Audit(in, nil, audit.DefaultLimits()); r.OK() {
		t.Fatal("the audit passed a table without a maximum")
	}
	out, _, err := setTableMax(in)
	if err != nil {
		t.Fatal(err)
	}
	if r := audit.Audit(out, nil, audit.DefaultLimits()); !r.OK() {
		t.Fatalf("the audit refused the rewritten module: %v", r.Failed())
	}
}

// TestRun: the command writes the rewritten module, may write over its
// input, and writes nothing when it refuses.
func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.wasm"), filepath.Join(dir, "out.wasm")
	tc := tableCases()[0]
	if err := os.WriteFile(in, tc.in, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{out, in} {
		if err := run(in, dst); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(dst); !bytes.Equal(b, tc.want) {
			t.Fatalf("%s: % x", dst, b)
		}
	}
	bad := filepath.Join(dir, "bad.wasm")
	if err := os.WriteFile(bad, []byte("\x00asm\x01\x00\x00\x00\x0d\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := filepath.Join(dir, "refused.wasm")
	if err := run(bad, refused); !errors.Is(err, errUnsupported) {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(refused); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused module was written: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Fatalf("left behind: %v", entries)
	}
}

// FuzzSetTableMax feeds setTableMax arbitrary bytes: it never panics, and
// whatever it accepts it rewrites with the properties of checkRewrite. The
// seed corpus is the table of TestSetTableMax.
// Run: go test -fuzz=FuzzSetTableMax ./sdk/cmd/wasm-table-max/
func FuzzSetTableMax(f *testing.F) {
	for _, tc := range tableCases() {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, changed, err := setTableMax(in)
		if err != nil {
			if !errors.Is(err, errUnsupported) {
				t.Fatalf("error outside the class: %v", err)
			}
			return
		}
		checkRewrite(t, in, out, changed)
	})
}
