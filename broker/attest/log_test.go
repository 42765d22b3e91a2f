package attest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stockade-dev/stockade/ipc"
)

// TestAppendAndVerify: records appended across files verify as one chain,
// with the key pinned or taken from the log, and reopening continues it.
func TestAppendAndVerify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := testKey(t, 1)
	signed := writeLog(t, dir, k, 10, 3000)
	files, err := LogFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d files; rotation should have made several", len(files))
	}
	for i, s := range signed {
		if s.Record.Seq != uint64(i+1) || s.Record.KeyID != k.ID() || (i > 0 && s.Record.Prev != signed[i-1].Hash) {
			t.Fatalf("record %d: seq %d prev %s", i, s.Record.Seq, s.Record.Prev)
		}
		if _, err := VerifyRecord(s.Encoded, s.Signature, k.Public()); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	for _, pub := range [][]byte{k.Public(), nil} {
		sum, err := VerifyFiles(files, pub, VerifyOptions{})
		if err != nil || sum.Records != 10 || sum.Files != len(files) || sum.KeyFromLog != (pub == nil) ||
			sum.Head != (Link{10, signed[9].Hash}) || sum.First != (Link{1, signed[0].Hash}) || sum.KeyID != k.ID() {
			t.Fatalf("pub %x: %+v %v", pub, sum, err)
		}
	}
	// Reopen: the chain continues where it stopped.
	l, err := OpenLog(dir, k, Options{MaxFileSize: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if l.Head() != (Link{10, signed[9].Hash}) || l.Recovered() != nil {
		t.Fatalf("head %v, recovered %+v", l.Head(), l.Recovered())
	}
	s, err := l.Append(allowRecord(10))
	if err != nil || s.Record.Seq != 11 || s.Record.Prev != signed[9].Hash {
		t.Fatalf("%+v %v", s.Record, err)
	}
	l.Close()
	if _, err := l.Append(allowRecord(11)); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("append after close: %v", err)
	}
	files, _ = LogFiles(dir)
	if n, err := Verify(files, k.Public()); err != nil || n != 11 {
		t.Fatalf("%d %v", n, err)
	}
}

// TestFlipEveryByte: changing any byte of any file makes verification fail
// at that file's header or at the record holding the byte.
func TestFlipEveryByte(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	k := testKey(t, 1)
	writeLog(t, dir, k, 4, 1800) // two records a file
	names, files := readLogDir(t, dir)
	if len(files) != 2 {
		t.Fatalf("%d files", len(files))
	}
	work := t.TempDir()
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(work, n)
		if err := os.WriteFile(paths[i], files[i], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for fi, orig := range files {
		starts := splitLog(t, paths[fi]).frameStarts()
		for off := range orig {
			wantIndex := -1
			for i, s := range starts {
				if off >= s {
					wantIndex = i
				}
			}
			// One bit a byte, a different one from byte to byte.
			b := bytes.Clone(orig)
			b[off] ^= 1 << (off % 8)
			if err := os.WriteFile(paths[fi], b, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Verify(paths, k.Public())
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.File != paths[fi] || ve.Index != wantIndex {
				t.Fatalf("file %d byte %d: want a failure at record %d, got %v", fi, off, wantIndex, err)
			}
			if _, err := Verify(paths, nil); err == nil {
				t.Fatalf("file %d byte %d: verifies with the key from the log", fi, off)
			}
			checked++
		}
		if err := os.WriteFile(paths[fi], orig, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := Verify(paths, k.Public()); err != nil || n != 4 {
		t.Fatalf("restored log: %d %v", n, err)
	}
	t.Logf("%d flips, each detected at its record", checked)
}

// TestEditRecords: records deleted, repeated, moved, or spliced in from
// another log are detected at the first record out of place.
func TestEditRecords(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	other := testKey(t, 2)
	dir := t.TempDir()
	signed := writeLog(t, dir, k, 6, 1<<20) // one file
	files, _ := LogFiles(dir)
	lf := splitLog(t, files[0])
	// A record of another log, signed by another key at the same place.
	odir := t.TempDir()
	writeLog(t, odir, other, 6, 1<<20)
	ofiles, _ := LogFiles(odir)
	olf := splitLog(t, ofiles[0])
	// A record signed by another key that claims this key's id.
	forged := sealed(allowRecord(99), 3, signed[1].Hash, k)
	enc, err := Encode(&forged)
	if err != nil {
		t.Fatal(err)
	}
	forgedFrame := appendFrame(nil, enc, other.sign(enc))

	cases := []struct {
		name   string
		frames func([][]byte) [][]byte
		index  int
		reason Reason
	}{
		{"delete-first", func(f [][]byte) [][]byte { return slices.Delete(f, 0, 1) }, 0, ReasonStart},
		{"delete-middle", func(f [][]byte) [][]byte { return slices.Delete(f, 2, 3) }, 2, ReasonGap},
		{"duplicate", func(f [][]byte) [][]byte { return slices.Insert(f, 3, f[2]) }, 3, ReasonDuplicate},
		{"duplicate-last", func(f [][]byte) [][]byte { return append(f, f[5]) }, 6, ReasonDuplicate},
		{"swap", func(f [][]byte) [][]byte { f[2], f[3] = f[3], f[2]; return f }, 2, ReasonGap},
		{"move-back", func(f [][]byte) [][]byte { return slices.Insert(slices.Delete(f, 1, 2), 3, f[1]) }, 1, ReasonGap},
		{"replay-earlier", func(f [][]byte) [][]byte { return slices.Insert(f, 4, f[1]) }, 4, ReasonOrder},
		{"other-key", func(f [][]byte) [][]byte { f[2] = olf.frames[2]; return f }, 2, ReasonKey},
		{"forged-key-id", func(f [][]byte) [][]byte { f[2] = forgedFrame; return f }, 2, ReasonSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			edited := logFile{header: lf.header, frames: c.frames(slices.Clone(lf.frames))}
			path := filepath.Join(t.TempDir(), logName(1))
			if err := os.WriteFile(path, edited.bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Verify([]string{path}, k.Public())
			var ve *VerifyError
			if !errors.As(err, &ve) || ve.Index != c.index || !errors.Is(err, c.reason) {
				t.Fatalf("want %q at record %d, got %v", c.reason, c.index, err)
			}
		})
	}
	// The whole other log: its header names another key.
	if _, err := Verify(ofiles, k.Public()); !errors.Is(err, ReasonKey) {
		t.Fatalf("other log: %v", err)
	}
	// Cutting the last record off leaves a valid chain; an anchor on it (an
	// attestation an agent holds) detects the cut.
	cut := logFile{header: lf.header, frames: lf.frames[:5]}
	path := filepath.Join(t.TempDir(), logName(1))
	if err := os.WriteFile(path, cut.bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify([]string{path}, k.Public()); err != nil {
		t.Fatalf("a cut chain is still a chain: %v", err)
	}
	last := Link{Seq: 6, Hash: signed[5].Hash}
	if _, err := VerifyFiles([]string{path}, k.Public(), VerifyOptions{Contains: []Link{last}}); !errors.Is(err, ReasonMissing) {
		t.Fatalf("cut end with an anchor: %v", err)
	}
	if _, err := VerifyFiles(files, k.Public(), VerifyOptions{Contains: []Link{last, {Seq: 2, Hash: signed[1].Hash}}}); err != nil {
		t.Fatalf("anchors in the log: %v", err)
	}
	if _, err := VerifyFiles(files, k.Public(), VerifyOptions{Contains: []Link{{Seq: 6, Hash: signed[4].Hash}}}); !errors.Is(err, ReasonMismatch) {
		t.Fatalf("anchor with another hash: %v", err)
	}
}

// TestFiles: files removed or swapped are detected; a log whose early
// files are gone verifies only from an anchor.
func TestFiles(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	dir := t.TempDir()
	signed := writeLog(t, dir, k, 9, 1800)
	files, _ := LogFiles(dir)
	if len(files) < 4 {
		t.Fatalf("%d files", len(files))
	}
	cases := []struct {
		name   string
		files  []string
		reason Reason
	}{
		{"drop-middle", slices.Delete(slices.Clone(files), 1, 2), ReasonGap},
		{"swap", append([]string{files[0], files[2], files[1]}, files[3:]...), ReasonGap},
		{"repeat", append([]string{files[0], files[0]}, files[1:]...), ReasonOrder},
		{"drop-first", files[1:], ReasonStart},
		{"missing", []string{files[0], filepath.Join(dir, "nonexistent.log")}, ReasonIO},
		{"not-a-log", []string{files[0], "/etc/hostname"}, ReasonHeader},
	}
	for _, c := range cases {
		if _, err := Verify(c.files, k.Public()); !errors.Is(err, c.reason) {
			t.Errorf("%s: want %q, got %v", c.name, c.reason, err)
		}
	}
	// Anchored on the last record of the first file.
	first := splitLog(t, files[0])
	after := signed[len(first.frames)-1]
	anchor := &Link{Seq: after.Record.Seq, Hash: after.Hash}
	if n, err := VerifyFiles(files[1:], k.Public(), VerifyOptions{After: anchor}); err != nil || n.Records != 9-len(first.frames) {
		t.Fatalf("anchored: %+v %v", n, err)
	}
	bad := &Link{Seq: anchor.Seq, Hash: signed[0].Hash}
	if _, err := VerifyFiles(files[1:], k.Public(), VerifyOptions{After: bad}); !errors.Is(err, ReasonChain) {
		t.Fatalf("anchored on the wrong hash: %v", err)
	}
}

// TestTornTail cuts the newest file at every offset of its last record
// (and, when that record is alone in a new file, of the header too):
// reopening cuts the torn bytes off and saves them, every earlier record
// stays byte for byte, and the chain goes on from the last whole record.
func TestTornTail(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	for _, c := range []struct {
		name    string
		n       int
		maxFile int64
	}{
		{"within-a-file", 3, 1 << 20},
		{"first-of-a-new-file", 3, 1800},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			signed := writeLog(t, dir, k, c.n, c.maxFile)
			names, files := readLogDir(t, dir)
			last := len(files) - 1
			lf := splitLog(t, filepath.Join(dir, names[last]))
			from := lf.frameStarts()[len(lf.frames)-1]
			if len(lf.frames) == 1 {
				from = 0
			}
			for cutAt := from; cutAt < len(files[last]); cutAt++ {
				cutFiles := slices.Clone(files)
				cutFiles[last] = files[last][:cutAt]
				d, _ := writeLogDir(t, names, cutFiles)
				l, err := OpenLog(d, k, Options{MaxFileSize: c.maxFile})
				if err != nil {
					t.Fatalf("cut at %d: %v", cutAt, err)
				}
				// Nothing to cut at a frame's start or right after the
				// header; a torn header is cut from 0.
				wantCut := cutAt != from && cutAt != headerSize
				wantOff := int64(from)
				if from == 0 && cutAt > headerSize {
					wantOff = int64(headerSize)
				}
				if rec := l.Recovered(); (rec != nil) != wantCut || rec != nil && rec.Offset != wantOff {
					t.Fatalf("cut at %d: recovered %+v, want a cut at %d: %v", cutAt, rec, wantOff, wantCut)
				}
				if rec := l.Recovered(); rec != nil {
					saved, err := os.ReadFile(rec.SavedAs)
					if err != nil || !bytes.Equal(saved, files[last][rec.Offset:cutAt]) {
						t.Fatalf("cut at %d: saved bytes differ (%v)", cutAt, err)
					}
				}
				if h := l.Head(); h != (Link{uint64(c.n - 1), signed[c.n-2].Hash}) {
					t.Fatalf("cut at %d: head %v", cutAt, h)
				}
				s, err := l.Append(allowRecord(100))
				l.Close()
				if err != nil || s.Record.Seq != uint64(c.n) {
					t.Fatalf("cut at %d: append %v %v", cutAt, s.Record.Seq, err)
				}
				paths, _ := LogFiles(d)
				if n, err := Verify(paths, k.Public()); err != nil || n != c.n {
					t.Fatalf("cut at %d: %d %v", cutAt, n, err)
				}
				// Every earlier record is still there, byte for byte.
				_, got := readLogDir(t, d)
				for i := range last {
					if !bytes.Equal(got[i], files[i]) {
						t.Fatalf("cut at %d: file %d changed", cutAt, i)
					}
				}
				if keep := max(from, headerSize); !bytes.Equal(got[last][:keep], files[last][:keep]) {
					t.Fatalf("cut at %d: the last file's earlier records changed", cutAt)
				}
			}
		})
	}
}

// TestTornWholeFrame: a crash can leave a whole last frame whose end never
// reached the disk (zeros); it is cut off like a torn one.
func TestTornWholeFrame(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	dir := t.TempDir()
	signed := writeLog(t, dir, k, 3, 1<<20)
	files, _ := LogFiles(dir)
	b, _ := os.ReadFile(files[0])
	for _, zeros := range []int{1, 64, 200} {
		z := bytes.Clone(b)
		clear(z[len(z)-zeros:])
		d, _ := writeLogDir(t, []string{logName(1)}, [][]byte{z})
		l, err := OpenLog(d, k, Options{})
		if err != nil {
			t.Fatalf("%d zeros: %v", zeros, err)
		}
		if l.Recovered() == nil || l.Head() != (Link{2, signed[1].Hash}) {
			t.Fatalf("%d zeros: %+v %v", zeros, l.Recovered(), l.Head())
		}
		l.Close()
	}
}

// TestDamageIsNotCut: damage that a crash cannot leave stops OpenLog with
// ErrLogCorrupt, and the files stay as they were.
func TestDamageIsNotCut(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	dir := t.TempDir()
	writeLog(t, dir, k, 5, 1<<20)
	files, _ := LogFiles(dir)
	orig, _ := os.ReadFile(files[0])
	lf := splitLog(t, files[0])
	starts := lf.frameStarts()
	cases := map[string][]byte{}
	flip := bytes.Clone(orig)
	flip[starts[2]+20] ^= 1 // a record in the middle
	cases["flip-middle"] = flip
	flip2 := bytes.Clone(orig)
	flip2[starts[3]+20] ^= 1 // the last but one: the last no longer chains
	cases["flip-last-but-one"] = flip2
	cases["delete-middle"] = logFile{header: lf.header, frames: slices.Delete(slices.Clone(lf.frames), 3, 4)}.bytes()
	cases["garbage-tail"] = append(bytes.Clone(orig), make([]byte, maxFrameSize+1)...)
	cases["valid-after-garbage"] = append(append(bytes.Clone(orig), 1, 2, 3), lf.frames[4]...)
	bad := bytes.Clone(orig)
	bad[starts[3]+4+10] ^= 1 // the last but one record, and the last is fine
	cases["two-bad"] = bad
	for name, b := range cases {
		d, _ := writeLogDir(t, []string{logName(1)}, [][]byte{b})
		if _, err := OpenLog(d, k, Options{}); !errors.Is(err, ErrLogCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
		after, _ := os.ReadFile(filepath.Join(d, logName(1)))
		if !bytes.Equal(after, b) {
			t.Errorf("%s: the file changed", name)
		}
	}
	// Another key: refused, not cut.
	if _, err := OpenLog(dir, testKey(t, 2), Options{}); !errors.Is(err, ErrForeignKey) {
		t.Errorf("other key: %v", err)
	}
	// A header that is not a log's.
	d, _ := writeLogDir(t, []string{logName(1)}, [][]byte{[]byte("not a log")})
	if _, err := OpenLog(d, k, Options{}); !errors.Is(err, ErrLogCorrupt) {
		t.Errorf("short foreign header: %v", err)
	}
}

// TestEmptyNewestFile: a crash right after a rotation leaves a file with a
// header (or part of one) and no record; the chain continues from the file
// before.
func TestEmptyNewestFile(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	for _, size := range []int{0, 10, headerSize} {
		dir := t.TempDir()
		signed := writeLog(t, dir, k, 3, 1<<20)
		header := appendHeader(nil, k.Public())
		if err := os.WriteFile(filepath.Join(dir, logName(2)), header[:size], 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := OpenLog(dir, k, Options{})
		if err != nil {
			t.Fatalf("header of %d bytes: %v", size, err)
		}
		if l.Head() != (Link{3, signed[2].Hash}) {
			t.Fatalf("header of %d bytes: head %v", size, l.Head())
		}
		if _, err := l.Append(allowRecord(3)); err != nil {
			t.Fatal(err)
		}
		l.Close()
		files, _ := LogFiles(dir)
		if n, err := Verify(files, k.Public()); err != nil || n != 4 || len(files) != 2 {
			t.Fatalf("header of %d bytes: %d %v %v", size, n, err, files)
		}
	}
}

// TestConcurrentAppend: appends from many goroutines form one chain.
func TestConcurrentAppend(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	dir := t.TempDir()
	l, err := OpenLog(dir, k, Options{MaxFileSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	const workers, each = 8, 25
	seqs := make(chan uint64, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				s, err := l.Append(allowRecord(w*each + i))
				if err != nil {
					t.Error(err)
					return
				}
				seqs <- s.Record.Seq
			}
		})
	}
	wg.Wait()
	close(seqs)
	l.Close()
	var got []uint64
	for s := range seqs {
		got = append(got, s)
	}
	slices.Sort(got)
	for i, s := range got {
		if s != uint64(i+1) {
			t.Fatalf("seq %d at %d", s, i)
		}
	}
	files, _ := LogFiles(dir)
	if n, err := Verify(files, k.Public()); err != nil || n != workers*each {
		t.Fatalf("%d %v", n, err)
	}
}

// TestAppendRefusesInvalid: an invalid record changes nothing.
func TestAppendRefusesInvalid(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	dir := t.TempDir()
	l, err := OpenLog(dir, k, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	bad := allowRecord(0)
	bad.Result.Error = ipc.ClassInternal
	if _, err := l.Append(bad); !errors.Is(err, ErrInvalidRecord) {
		t.Fatal(err)
	}
	if s, err := l.Append(allowRecord(1)); err != nil || s.Record.Seq != 1 {
		t.Fatalf("%v %v", s.Record.Seq, err)
	}
}

// TestLogBusy: one writer per directory.
func TestLogBusy(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	dir := t.TempDir()
	l, err := OpenLog(dir, k, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLog(dir, k, Options{}); !errors.Is(err, ErrLogBusy) {
		t.Fatalf("second writer: %v", err)
	}
	l.Close()
	l2, err := OpenLog(dir, k, Options{})
	if err != nil {
		t.Fatalf("after close: %v", err)
	}
	l2.Close()
}

func TestParseLogName(t *testing.T) {
	t.Parallel()
	good := map[string]uint64{"attest-00000001.log": 1, "attest-123456789.log": 123456789}
	for name, n := range good {
		if got, ok := parseLogName(name); !ok || got != n {
			t.Errorf("%s: %d %v", name, got, ok)
		}
	}
	for _, name := range []string{"attest-1.log", "attest-00000000.log", "attest-+0000001.log", "attest-00000001.log.torn-60",
		"attest-000000001.log", "x-00000001.log", "attest-0000000a.log"} {
		if _, ok := parseLogName(name); ok {
			t.Errorf("%s accepted", name)
		}
	}
}

// TestFailedWriteSticks: once a write fails the log takes no more records
// (a broker then runs no more calls), and reopening it recovers.
func TestFailedWriteSticks(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	dir := t.TempDir()
	l, err := OpenLog(dir, k, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(allowRecord(0)); err != nil || l.Err() != nil {
		t.Fatal(err, l.Err())
	}
	l.f.Close() // the disk goes away under the log
	for range 2 {
		if _, err := l.Append(allowRecord(1)); !errors.Is(err, ErrLogFailed) {
			t.Fatalf("append on a failed log: %v", err)
		}
	}
	if !errors.Is(l.Err(), ErrLogFailed) {
		t.Fatalf("Err: %v", l.Err())
	}
	l.Close()
	l, err = OpenLog(dir, k, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := l.Append(allowRecord(2)); err != nil || s.Record.Seq != 2 {
		t.Fatalf("after reopening: %v %v", s.Record.Seq, err)
	}
	l.Close()
	if !errors.Is(l.Err(), ErrLogClosed) {
		t.Fatalf("Err after Close: %v", l.Err())
	}
}
