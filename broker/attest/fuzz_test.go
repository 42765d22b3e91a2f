package attest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The fuzz targets check properties of the decoders of untrusted bytes:
//
//   - FuzzDecode: whatever Decode accepts re-encodes to the same bytes (one
//     encoding per record); whatever it refuses is ErrInvalidRecord.
//   - FuzzReadLog: a log file's bytes, as `stockade attest verify` and
//     `show` read them: Reader and the verifier never panic, every error is
//     a *VerifyError, records come back in order within the bytes, and the
//     verifier accepts a file only if the Reader reads it to a clean end.
//   - FuzzOpenLog: the broker's recovery on a damaged newest file either
//     refuses it with a typed error or leaves a file that reads to a clean
//     end and takes a new record that chains.
//
// Each is seeded with f.Add from the same tables as the tests, and from the
// committed corpus in testdata/fuzz/<FuzzName>/, which `go test` runs too.
// Regenerate the corpus and testdata/vector-v1.txt after changing the
// encoding or the tables with
//
//	go test ./broker/attest -run 'TestFuzzSeedCorpus|TestVector' -update
//
// and run one target with, for example,
//
//	go test -run='^$' -fuzz='^FuzzReadLog$' -fuzztime=30s ./broker/attest/
var update = flag.Bool("update", false, "rewrite testdata/vector-v1.txt and the fuzz seed corpus")

// seedLog is a small log file of the fixed test key: three records.
func seedLog(t testing.TB) []byte {
	k := testKey(t, 1)
	var b []byte
	b = appendHeader(b, k.Public())
	var prev Digest
	for i := range 3 {
		r := allowRecord(i)
		if i == 1 {
			r = denyRecord(i)
		}
		r = sealed(r, uint64(i+1), prev, k)
		enc, err := Encode(&r)
		if err != nil {
			t.Fatal(err)
		}
		b = appendFrame(b, enc, k.sign(enc))
		prev = HashRecord(enc)
	}
	return b
}

func decodeSeeds(t testing.TB) map[string][]byte {
	seeds := map[string][]byte{}
	for _, c := range recordCases(testKey(t, 1)) {
		b, err := Encode(&c.rec)
		if err != nil {
			t.Fatal(err)
		}
		seeds["record-"+c.name] = b
		seeds["bad-prefix-"+c.name] = b[:len(b)/2]
		seeds["bad-trailing-"+c.name] = append(bytes.Clone(b), 0)
	}
	seeds["bad-list-bomb"] = append(append([]byte{1}, make([]byte, 8+32)...), 0xff, 0xff, 0xff, 0xff)
	seeds["bad-empty"] = []byte{}
	return seeds
}

func logSeeds(t testing.TB) map[string][]byte {
	log := seedLog(t)
	seeds := map[string][]byte{
		"log":             log,
		"header-only":     log[:headerSize],
		"torn-header":     log[:headerSize/2],
		"torn-last":       log[:len(log)-10],
		"torn-length":     log[:headerSize+2],
		"zero-length":     append(log[:headerSize:headerSize], 0, 0, 0, 0),
		"huge-length":     append(log[:headerSize:headerSize], 0xff, 0xff, 0xff, 0xff),
		"over-max-length": append(log[:headerSize:headerSize], 0, 1, 0, 1),
		"empty":           {},
	}
	flip := bytes.Clone(log)
	flip[len(flip)-100] ^= 1
	seeds["flipped-signature"] = flip
	flip = bytes.Clone(log)
	flip[headerSize+4+20] ^= 1
	seeds["flipped-record"] = flip
	zeros := bytes.Clone(log)
	clear(zeros[len(zeros)-64:])
	seeds["zeroed-signature"] = zeros
	other := append(appendHeader(nil, testKey(t, 2).Public()), log[headerSize:]...)
	seeds["other-header"] = other
	return seeds
}

func FuzzDecode(f *testing.F) {
	for _, b := range decodeSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("error is not ErrInvalidRecord: %v", err)
			}
			return
		}
		enc, err := Encode(r)
		if err != nil {
			t.Fatalf("decoded but does not encode: %v", err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("two encodings of one record:\n%x\n%x", b, enc)
		}
	})
}

func FuzzReadLog(f *testing.F) {
	for _, b := range logSeeds(f) {
		f.Add(b)
	}
	pub := testKey(f, 1).Public()
	f.Fuzz(func(t *testing.T, b []byte) {
		// The Reader alone.
		clean := false
		n := 0
		rd, err := NewReader("fuzz", bytes.NewReader(b))
		if err == nil {
			last := rd.Offset()
			for {
				s, err := rd.Next()
				if err == io.EOF {
					clean = true
					break
				}
				if err != nil {
					var ve *VerifyError
					if !errors.As(err, &ve) || ve.Index != n || ve.Offset != last {
						t.Fatalf("record %d at %d: %v", n, last, err)
					}
					break
				}
				if rd.Offset() <= last || rd.Offset() > int64(len(b)) {
					t.Fatalf("offset %d after %d of %d", rd.Offset(), last, len(b))
				}
				if enc, err := Encode(&s.Record); err != nil || !bytes.Equal(enc, s.Encoded) {
					t.Fatal("a record read does not re-encode to its bytes")
				}
				last = rd.Offset()
				n++
			}
		} else if !errors.As(err, new(*VerifyError)) {
			t.Fatalf("header: %v", err)
		}
		// The verifier, with the key and with the key from the file.
		for _, key := range [][]byte{pub, nil} {
			v := &verifier{pub: key, want: Link{Seq: 1}}
			err := v.reader("fuzz", bytes.NewReader(b))
			if err == nil && (!clean || v.n != n) {
				t.Fatalf("verified %d records of a file the reader read %d of (clean %v)", v.n, n, clean)
			}
			if err != nil && !errors.As(err, new(*VerifyError)) {
				t.Fatalf("verifier: %v", err)
			}
		}
	})
}

func FuzzOpenLog(f *testing.F) {
	for _, b := range logSeeds(f) {
		f.Add(b)
	}
	k := testKey(f, 1)
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, logName(1))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := OpenLog(dir, k, Options{})
		if err != nil {
			if !errors.Is(err, ErrLogCorrupt) && !errors.Is(err, ErrForeignKey) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		head := l.Head()
		s, err := l.Append(allowRecord(9))
		l.Close()
		if err != nil || s.Record.Seq != head.Seq+1 || s.Record.Prev != head.Hash {
			t.Fatalf("append after recovery: %+v %v", s.Record, err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		rd, err := NewReader(path, fh)
		if err != nil {
			t.Fatal(err)
		}
		var last Signed
		for {
			s, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("recovered file does not read: %v", err)
			}
			last = s
		}
		if last.Hash != HashRecord(s.Encoded) {
			t.Fatal("the new record is not the file's last")
		}
	})
}

// TestFuzzSeedCorpus keeps testdata/fuzz in step with the seed tables.
func TestFuzzSeedCorpus(t *testing.T) {
	t.Parallel()
	targets := map[string]map[string][]byte{
		"FuzzDecode":  decodeSeeds(t),
		"FuzzReadLog": logSeeds(t),
		"FuzzOpenLog": logSeeds(t),
	}
	for target, seeds := range targets {
		dir := filepath.Join("testdata", "fuzz", target)
		if *update {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for name, b := range seeds {
			file := filepath.Join(dir, "seed-"+name)
			want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
			if *update {
				if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if got, err := os.ReadFile(file); err != nil || string(got) != want {
				t.Errorf("%s is missing or stale (regenerate: go test ./broker/attest -run TestFuzzSeedCorpus -update)", file)
			}
		}
	}
}

// vectorFile is the language-neutral test vector of the encoding, the
// hash, the signature and the log file format (docs/ATTESTATIONS.md).
const vectorFile = "testdata/vector-v1.txt"

// TestVector checks the committed vector against the code: a fixed key, a
// fixed record, its encoding, hash and signature, and a three-record log
// file. An independent verifier can check itself against the same file.
// Regenerate with
//
//	go test ./broker/attest -run TestVector -update
func TestVector(t *testing.T) {
	t.Parallel()
	k := testKey(t, 1)
	r := sealed(allowRecord(0), 1, Digest{}, k)
	enc, err := Encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{
		"# Stockade attestation v1 test vector (docs/ATTESTATIONS.md).",
		"# Regenerate: go test ./broker/attest -run TestVector -update",
		"# The key's seed is 32 bytes of 0x01. Hex throughout.",
		"seed: " + strings.Repeat("01", 32),
		"public_key: " + FormatPublicKey(k.Public()),
		"key_id: " + k.ID(),
		"record_json: " + string(js),
		"encoding: " + hex.EncodeToString(enc),
		"hash: " + HashRecord(enc).String(),
		"signature: " + hex.EncodeToString(k.sign(enc)),
		"# A log file of three records (seq 1 allowed, 2 denied, 3 allowed).",
		"log_file: " + hex.EncodeToString(seedLog(t)),
	}
	want := strings.Join(lines, "\n") + "\n"
	if *update {
		if err := os.WriteFile(vectorFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(vectorFile)
	if err != nil || string(got) != want {
		t.Fatalf("%s is missing or differs (regenerate: go test ./broker/attest -run TestVector -update)", vectorFile)
	}
	// The vector's log verifies, and its record is the vector's record.
	var logHex string
	for _, line := range strings.Split(string(got), "\n") {
		if s, ok := strings.CutPrefix(line, "log_file: "); ok {
			logHex = s
		}
	}
	b, _ := hex.DecodeString(logHex)
	path := filepath.Join(t.TempDir(), logName(1))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := Verify([]string{path}, k.Public()); err != nil || n != 3 {
		t.Fatalf("vector log: %d %v", n, err)
	}
	if !slices.Equal(b[headerSize+4:headerSize+4+len(enc)], enc) {
		t.Fatal("the vector log's first record is not the vector's record")
	}
}
