package skill

import (
	"io/fs"
	"maps"
	"slices"
	"testing"
)

// hostileCase is a crafted archive that is correctly signed (the statement
// names its real SHA-256 and size) and must still be refused, for reason.
type hostileCase struct {
	name    string
	reason  Reason
	archive []byte
	signed  map[string][]byte // the files the statement lists
	limits  Limits
}

// hostileCases crafts the archives with archive/zip's Writer, patching bytes
// where the Writer cannot be made to write the hazard.
func hostileCases(t testing.TB) []hostileCase {
	files := helloFiles(t)
	hello := helloEntries(t)
	wasm := files["modules/hello.wasm"]
	with := func(extra ...entry) []byte { return craftZip(t, "", append(slices.Clone(hello), extra...)...) }
	plus := func(name string, data []byte) map[string][]byte {
		m := maps.Clone(files)
		m[name] = data
		return m
	}
	base := craftZip(t, "", hello...)
	patched := func(b []byte, patch func(b []byte, l layout)) []byte {
		b = slices.Clone(b)
		patch(b, readLayout(t, b))
		return b
	}
	zeros := make([]byte, 1<<20)
	same := []byte("the same bytes twice\n")

	cs := []hostileCase{
		// Names.
		{name: "traversal", reason: ReasonPathTraversal, archive: with(entry{name: "../evil.wasm", data: wasm})},
		{name: "traversal inside", reason: ReasonPathTraversal, archive: with(entry{name: "modules/../../evil.wasm", data: wasm})},
		{name: "absolute path", reason: ReasonPathAbsolute, archive: with(entry{name: "/etc/cron.d/evil", data: wasm})},
		{name: "backslash", reason: ReasonPathBackslash, archive: with(entry{name: `modules\..\..\evil.wasm`, data: wasm})},
		{name: "NUL", reason: ReasonPathNUL, archive: with(entry{name: "modules/evil.wasm\x00.txt", data: wasm})},
		{name: "drive letter", reason: ReasonPathDrive, archive: with(entry{name: "C:/Windows/evil.dll", data: wasm})},
		{name: "non-ASCII name", reason: ReasonPathInvalid, archive: with(entry{name: "assets/caf\u00e9.txt", data: wasm})},
		{name: "hidden file", reason: ReasonPathInvalid, archive: with(entry{name: "assets/.hidden", data: wasm})},
		{name: "duplicate name", reason: ReasonDuplicate, archive: with(entry{name: ManifestPath, data: []byte("id = \"evil.skill\"\n")})},
		{name: "case-folded duplicate", reason: ReasonCaseDuplicate, archive: with(entry{name: "modules/HELLO.wasm", data: wasm})},

		// Entry types.
		{name: "symlink", reason: ReasonNotRegular, archive: with(entry{name: "assets/link", data: []byte("../../../../etc/shadow"), mode: fs.ModeSymlink | 0o777})},
		{name: "directory", reason: ReasonNotRegular, archive: with(entry{name: "assets/dir/", mode: fs.ModeDir | 0o755})},
		{name: "directory with data", reason: ReasonNotRegular, archive: with(entry{name: "assets/dir/", data: wasm, mode: fs.ModeDir | 0o755})},
		{name: "directory by mode", reason: ReasonNotRegular, archive: with(entry{name: "assets/dir", data: wasm, mode: fs.ModeDir | 0o755})},
		{name: "character device", reason: ReasonNotRegular, archive: with(entry{name: "assets/tty", mode: fs.ModeDevice | fs.ModeCharDevice | 0o644})},
		{name: "named pipe", reason: ReasonNotRegular, archive: with(entry{name: "assets/fifo", mode: fs.ModeNamedPipe | 0o644})},
		{name: "setuid", reason: ReasonNotRegular, archive: with(entry{name: "assets/suid", data: wasm, mode: fs.ModeSetuid | 0o755}), signed: plus("assets/suid", wasm)},
		{name: "MS-DOS directory attribute", reason: ReasonNotRegular, archive: with(entry{name: "assets/d", data: wasm, creator: 20, dosAttrs: 0x10})},
		{name: "unknown host system", reason: ReasonUnsupported, archive: with(entry{name: "assets/m", data: wasm, creator: 7<<8 | 20}), signed: plus("assets/m", wasm)},

		// Bombs and sizes.
		{name: "bomb by ratio", reason: ReasonRatio, archive: with(entry{name: "assets/zeros", data: zeros, deflate: true}), signed: plus("assets/zeros", zeros)},
		{name: "declared size over signed", reason: ReasonEntrySize, archive: base, signed: plus("assets/greeting.txt", []byte("short\n"))},
		{name: "too many entries", reason: ReasonTooManyEntries, archive: base, limits: Limits{Entries: 2}},
		{name: "file too large", reason: ReasonFileTooLarge, archive: base, limits: Limits{FileBytes: 30}},
		{name: "total too large", reason: ReasonTotalTooLarge, archive: base, limits: Limits{TotalBytes: 100}},
		{name: "archive too large", reason: ReasonArchiveTooLarge, archive: base, limits: Limits{ArchiveBytes: 100}},
		{name: "stored entry sizes disagree", reason: ReasonEntrySize, archive: patched(base, func(b []byte, l layout) {
			c, h := l.central["assets/greeting.txt"], l.local["assets/greeting.txt"]
			put32(b, c+24, get32(b, c+24)+1)
			put32(b, h+22, get32(b, h+22)+1)
		})},

		// Layout.
		{name: "overlapping entries", reason: ReasonOverlap, signed: plus("assets/b.txt", same), archive: patched(
			craftZip(t, "", append(slices.Clone(hello), entry{name: "assets/a.txt", data: same}, entry{name: "assets/b.txt", data: same})...),
			func(b []byte, l layout) { put32(b, l.central["assets/b.txt"]+42, uint32(l.local["assets/a.txt"])) })},
		{name: "entry overlapping the directory", reason: ReasonOverlap, archive: patched(base, func(b []byte, l layout) {
			c := l.central[ManifestPath] // the last entry
			put32(b, c+20, get32(b, c+20)+10)
		})},
		{name: "prepended data", reason: ReasonPrependedData, archive: append([]byte("#!/bin/sh\nexec evil\n"), base...)},
		{name: "prepended data, offsets adjusted", reason: ReasonPrependedData, archive: append([]byte("#!/bin/sh\nexec evil\n"), shiftOffsets(t, base, 20)...)},
		{name: "prepended local header", reason: ReasonPrependedData, archive: append(append([]byte("PK\x03\x04"), make([]byte, 40)...), base...)},
		{name: "trailing data", reason: ReasonTrailingData, archive: append(slices.Clone(base), "trailing bytes after the end record"...)},
		{name: "hidden entry", reason: ReasonHiddenData, archive: removeCentral(t, with(entry{name: "assets/extra.txt", data: same}), "assets/extra.txt")},
		{name: "data before the end record", reason: ReasonHiddenData, archive: insertBeforeEnd(t, base, 16)},
		{name: "archive comment", reason: ReasonComment, archive: craftZip(t, "a comment", hello...)},
		{name: "entry comment", reason: ReasonComment, archive: with(entry{name: "assets/c.txt", data: same, comment: "hi"}), signed: plus("assets/c.txt", same)},
		{name: "extra field", reason: ReasonExtraField, archive: with(entry{name: "assets/x.txt", data: same, extra: []byte{0xfe, 0xca, 0, 0}}), signed: plus("assets/x.txt", same)},
		{name: "no end record", reason: ReasonEndRecord, archive: base[:len(base)-endRecordLen]},
		{name: "directory past the end record", reason: ReasonEndRecord, archive: patched(base, func(b []byte, l layout) { put32(b, l.eocd+12, uint32(l.dirSize+1)) })},
		{name: "several disks", reason: ReasonUnsupported, archive: patched(base, func(b []byte, l layout) { put16(b, l.eocd+4, 1) })},
		{name: "zip64 version", reason: ReasonUnsupported, archive: with(entry{name: "assets/z.txt", data: same, needed: 45}), signed: plus("assets/z.txt", same)},
		{name: "local header names another file", reason: ReasonLocalHeader, archive: patched(base, func(b []byte, l layout) {
			b[l.local["assets/greeting.txt"]+30+len("assets/greet")] = 'X'
		})},
		{name: "local header method differs", reason: ReasonLocalHeader, archive: patched(base, func(b []byte, l layout) {
			put16(b, l.local["modules/hello.wasm"]+8, 8)
		})},

		// Flags and methods.
		{name: "encrypted", reason: ReasonEncrypted, archive: with(entry{name: "assets/e.txt", data: same, flags: 0x1}), signed: plus("assets/e.txt", same)},
		{name: "strong encryption", reason: ReasonEncrypted, archive: with(entry{name: "assets/e.txt", data: same, flags: 0x40}), signed: plus("assets/e.txt", same)},
		{name: "data descriptor", reason: ReasonFlags, archive: with(entry{name: "assets/d.txt", data: same, descriptor: true}), signed: plus("assets/d.txt", same)},
		{name: "unknown flag", reason: ReasonFlags, archive: with(entry{name: "assets/f.txt", data: same, flags: 0x20}), signed: plus("assets/f.txt", same)},
		{name: "method bzip2", reason: ReasonMethod, archive: with(entry{name: "assets/m.txt", data: same, method: 12}), signed: plus("assets/m.txt", same)},
		{name: "method AES", reason: ReasonMethod, archive: with(entry{name: "assets/m.txt", data: same, method: 99}), signed: plus("assets/m.txt", same)},

		// Contents.
		{name: "unsigned entry", reason: ReasonUnsigned, archive: with(entry{name: "assets/extra.txt", data: same})},
		{name: "missing entry", reason: ReasonMissing, archive: base, signed: plus("assets/gone.txt", same)},
		{name: "empty archive", reason: ReasonMissing, archive: craftZip(t, "")},
		{name: "bad CRC", reason: ReasonEntryRead, archive: patched(base, func(b []byte, l layout) {
			c, h := l.central["modules/hello.wasm"], l.local["modules/hello.wasm"]
			put32(b, c+16, get32(b, c+16)^1)
			put32(b, h+14, get32(b, h+14)^1)
		})},
		{name: "corrupt deflate stream", reason: ReasonEntryRead, archive: patched(base, func(b []byte, l layout) {
			d := l.local[ManifestPath] + 30 + len(ManifestPath)
			b[d] = 0xff // BFINAL, then the reserved block type 3
		})},
	}
	for i := range cs {
		if cs[i].signed == nil {
			cs[i].signed = files
		}
	}
	return cs
}

// TestCraftedControl opens an archive crafted the way the hostile ones are,
// without a hazard: the refusals below are the hazards', not the crafting's.
func TestCraftedControl(t *testing.T) {
	files := helloFiles(t)
	archive := craftZip(t, "", helloEntries(t)...)
	s := mustOpen(t, archive, signArchive(t, archive, files))
	if len(s.Files) != len(files) {
		t.Fatalf("%d files; want %d", len(s.Files), len(files))
	}
}

func TestHostileArchives(t *testing.T) {
	t.Parallel()
	for _, c := range hostileCases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := signArchive(t, c.archive, c.signed)
			s, err := c.limits.Open(c.archive, env, acceptOnly(publisherKey))
			if s != nil {
				t.Fatal("Open returned a skill with an error")
			}
			wantReason(t, err, c.reason)
		})
	}
}
