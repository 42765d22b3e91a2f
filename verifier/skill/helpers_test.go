package skill

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// helloDir is the tiny test skill: skill.toml, modules/hello.wasm (38 bytes
// written by hand, see TestHelloModuleBytes) and assets/greeting.txt.
const helloDir = "../../testdata/skills/hello"

// testKey returns a real Ed25519 key derived from label, the same in every
// run.
func testKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("stockade verifier/skill test key: " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

var (
	publisherKey = testKey("publisher")
	otherKey     = testKey("other")
)

func fingerprint(k ed25519.PrivateKey) Fingerprint {
	return FingerprintOf(k.Public().(ed25519.PublicKey))
}

// acceptOnly accepts the keys given and refuses every other.
func acceptOnly(keys ...ed25519.PrivateKey) func(Fingerprint) error {
	return func(fp Fingerprint) error {
		for _, k := range keys {
			if fingerprint(k) == fp {
				return nil
			}
		}
		return errors.New("key not accepted by the test")
	}
}

// buildHello builds the hello skill with the publisher key.
func buildHello(t testing.TB) (archive, envelope []byte) {
	t.Helper()
	a, e, err := Build(helloDir, publisherKey)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return a, e
}

// helloFiles reads the hello skill's source files.
func helloFiles(t testing.TB) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(helloDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(helloDir, p)
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// helloStatement is a statement with the hello skill's id, version and
// sequence, signed by key, over archive and files.
func helloStatement(key ed25519.PrivateKey, archive []byte, files map[string][]byte) *Statement {
	st := &Statement{
		ID: "stockade.hello", Version: Version{Major: 1}, Sequence: 1,
		Publisher: fingerprint(key),
		Archive:   FileDigest{Size: int64(len(archive)), SHA256: sha256.Sum256(archive)},
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		st.Files = append(st.Files, FileDigest{Path: p, Size: int64(len(files[p])), SHA256: sha256.Sum256(files[p])})
	}
	return st
}

// signStatement signs st with key and returns the envelope's bytes.
func signStatement(t testing.TB, key ed25519.PrivateKey, st *Statement) []byte {
	t.Helper()
	payload, err := st.Marshal()
	if err != nil {
		t.Fatalf("Marshal statement: %v", err)
	}
	return signPayload(t, key, payload)
}

func signPayload(t testing.TB, key ed25519.PrivateKey, payload []byte) []byte {
	t.Helper()
	env, err := Sign(PayloadType, payload, key)
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signArchive signs a hello statement listing files over archive: the
// signature and the archive digest are right, so whatever Open refuses is
// in the archive's structure.
func signArchive(t testing.TB, archive []byte, files map[string][]byte) []byte {
	t.Helper()
	return signStatement(t, publisherKey, helloStatement(publisherKey, archive, files))
}

// entry is one file of a crafted archive, written with archive/zip's
// Writer.CreateRaw (so without a data descriptor) unless descriptor is set.
type entry struct {
	name       string
	data       []byte
	deflate    bool
	mode       fs.FileMode // 0: a 0644 regular file
	flags      uint16
	method     uint16 // overrides the method written in the headers
	extra      []byte
	comment    string
	creator    uint16 // overrides CreatorVersion
	needed     uint16 // overrides ReaderVersion
	dosAttrs   uint32 // or'ed into ExternalAttrs
	descriptor bool   // write with CreateHeader: Go sets flag 0x8
}

// craftZip writes entries with archive/zip's Writer.
func craftZip(t testing.TB, comment string, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	if comment != "" {
		if err := zw.SetComment(comment); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range entries {
		fh := &zip.FileHeader{Name: e.name, ModifiedDate: buildDOSDate, Extra: e.extra, Comment: e.comment}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		fh.SetMode(mode)
		fh.CreatorVersion = buildCreator
		fh.ReaderVersion = buildVersion
		if e.creator != 0 {
			fh.CreatorVersion = e.creator
		}
		if e.needed != 0 {
			fh.ReaderVersion = e.needed
		}
		fh.ExternalAttrs |= e.dosAttrs
		fh.Flags = e.flags
		if e.descriptor {
			fh.Method = zip.Store
			w, err := zw.CreateHeader(fh)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(e.data)
			continue
		}
		body := e.data
		fh.Method = zip.Store
		if e.deflate {
			var c bytes.Buffer
			fw, _ := flate.NewWriter(&c, flate.BestCompression)
			fw.Write(e.data)
			fw.Close()
			body = c.Bytes()
			fh.Method = zip.Deflate
		}
		if e.method != 0 {
			fh.Method = e.method
		}
		fh.CRC32 = crc32.ChecksumIEEE(e.data)
		fh.CompressedSize64 = uint64(len(body))
		fh.UncompressedSize64 = uint64(len(e.data))
		w, err := zw.CreateRaw(fh)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(body)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// helloEntries are the hello skill's files as crafted entries, sorted.
func helloEntries(t testing.TB) []entry {
	files := helloFiles(t)
	var es []entry
	for _, p := range slices.Sorted(maps.Keys(files)) {
		es = append(es, entry{name: p, data: files[p], deflate: p == ManifestPath})
	}
	return es
}

// Byte patching of crafted archives (whose layout is simple and known).

type layout struct {
	eocd      int
	count     int
	dirSize   int
	dirOffset int
	central   map[string]int // name → offset of its central record
	local     map[string]int // name → offset of its local header
}

func readLayout(t testing.TB, b []byte) layout {
	t.Helper()
	eocd := bytes.LastIndex(b, []byte{'P', 'K', 5, 6})
	if eocd < 0 {
		t.Fatal("no end record")
	}
	l := layout{
		eocd: eocd, count: int(binary.LittleEndian.Uint16(b[eocd+10:])),
		dirSize: int(binary.LittleEndian.Uint32(b[eocd+12:])), dirOffset: int(binary.LittleEndian.Uint32(b[eocd+16:])),
		central: map[string]int{}, local: map[string]int{},
	}
	pos := l.dirOffset
	for i := 0; i < l.count; i++ {
		n := int(binary.LittleEndian.Uint16(b[pos+28:]))
		x := int(binary.LittleEndian.Uint16(b[pos+30:]))
		c := int(binary.LittleEndian.Uint16(b[pos+32:]))
		name := string(b[pos+46 : pos+46+n])
		l.central[name] = pos
		l.local[name] = int(binary.LittleEndian.Uint32(b[pos+42:]))
		pos += 46 + n + x + c
	}
	return l
}

func put16(b []byte, off int, v uint16) { binary.LittleEndian.PutUint16(b[off:], v) }
func put32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
func get32(b []byte, off int) uint32    { return binary.LittleEndian.Uint32(b[off:]) }

// removeCentral drops name's central record, leaving its local header and
// data in place: bytes no central record covers.
func removeCentral(t testing.TB, b []byte, name string) []byte {
	l := readLayout(t, b)
	at := l.central[name]
	n := 46 + int(binary.LittleEndian.Uint16(b[at+28:]))
	out := append(slices.Clone(b[:at]), b[at+n:]...)
	eocd := l.eocd - n
	put16(out, eocd+8, uint16(l.count-1))
	put16(out, eocd+10, uint16(l.count-1))
	put32(out, eocd+12, uint32(l.dirSize-n))
	return out
}

// shiftOffsets adds d to every local header offset and to the central
// directory's offset, as "zip -A" does after data was put in front.
func shiftOffsets(t testing.TB, b []byte, d int) []byte {
	out := slices.Clone(b)
	l := readLayout(t, out)
	for _, at := range l.central {
		put32(out, at+42, get32(out, at+42)+uint32(d))
	}
	put32(out, l.eocd+16, uint32(l.dirOffset+d))
	return out
}

// insertBeforeEnd puts n zero bytes between the central directory and the
// end record.
func insertBeforeEnd(t testing.TB, b []byte, n int) []byte {
	l := readLayout(t, b)
	out := append(slices.Clone(b[:l.eocd]), make([]byte, n)...)
	return append(out, b[l.eocd:]...)
}

func mustOpen(t testing.TB, archive, envelope []byte) *Skill {
	t.Helper()
	s, err := Open(archive, envelope, acceptOnly(publisherKey))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// wantReason fails unless err carries reason.
func wantReason(t testing.TB, err error, reason Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want refusal %s", reason)
	}
	if !errors.Is(err, reason) || ReasonOf(err) != reason {
		t.Fatalf("refused with %v; want %s", err, reason)
	}
}
