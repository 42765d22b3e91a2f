package attest

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/stockade-dev/stockade/ipc"
)

// The canonical encoding of a record, version 1 (docs/ATTESTATIONS.md has
// the table). Every field is present, in a fixed order, without names:
//
//	u8   big-endian fixed width: u8, u32, u64; i64 is two's complement
//	str  u32 length, then that many bytes (any bytes; no terminator)
//	d32  32 raw bytes (a SHA-256 digest; all zeros means none)
//	list u32 count, then count items
//	bool u8, 0 or 1
//
// A decoder accepts exactly what the encoder produces: every length and
// count must fit in what remains, booleans are 0 or 1, the version is 1,
// nothing trails, and the record passes [Record.Validate]. So an accepted
// encoding has one decoding and re-encodes to the same bytes, and the hash
// and the signature of a record are properties of the record, not of one
// of several spellings of it.

// Version is the encoding version, the first byte of every encoded record.
const Version = 1

// MaxRecordSize bounds an encoded record. The broker's own limits (run ids
// and tool names of 128 bytes, a handful of policy ids and layers) keep
// real records near 1 KiB; the bound is what a reader of an untrusted log
// allocates at most per record.
const MaxRecordSize = 64 << 10

// Domain-separation prefixes. A record's hash and its signature are over
// RecordContext || encoding; input digests over InputContext || encoding.
// The key id is over KeyContext || public key.
const (
	RecordContext = "stockade/attestation/v1\x00"
	InputContext  = "stockade/attestation/input/v1\x00"
	KeyContext    = "stockade/attestation/key/v1\x00"
)

// Encode returns the canonical encoding of r after [Record.Validate].
func Encode(r *Record) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	e := encoder{b: make([]byte, 0, 1024)}
	e.u8(Version)
	e.u64(r.Seq)
	e.digest(r.Prev)
	e.str(r.KeyID)
	e.str(r.CallID)
	e.str(r.RunID)
	e.u32(r.Principal.UID)
	e.str(r.Principal.Name)
	e.str(r.Tool)
	e.u8(uint8(r.Decision))
	e.strs(r.Policies)
	e.str(r.Tier)

	rc := &r.Receipt
	e.str(rc.Tier)
	e.str(rc.Backend)
	e.i64(int64(rc.LandlockABI))
	e.str(rc.Seccomp)
	e.str(rc.SeccompDigest)
	e.strs(rc.Namespaces)
	e.str(rc.BwrapVersion)
	e.str(rc.Cgroup)
	e.strs(rc.Layers)

	l := &r.Limits
	e.u64(l.Rlimits.CPUSeconds)
	e.u64(l.Rlimits.AddressSpace)
	e.u64(l.Rlimits.NoFile)
	e.u64(l.Rlimits.NProc)
	e.u64(l.Rlimits.FileSize)
	e.u64(l.Rlimits.Pids)
	e.u64(l.Rlimits.Memory)
	e.i64(l.TimeoutMS)
	e.i64(l.MaxOutput)
	e.u64(l.Fuel)
	e.str(l.FuelSchedule)

	a := &r.Artifact
	e.str(a.Kind)
	e.str(a.Name)
	e.digest(a.Digest)
	e.u32(clampU32(len(a.Modules)))
	for _, m := range a.Modules {
		e.str(m.Name)
		e.digest(m.Digest)
		e.digest(m.Instrumented)
	}

	e.digest(r.Input)
	e.digest(r.Stdout)
	e.digest(r.Stderr)

	e.str(string(r.Result.Status))
	e.i64(r.Result.ExitCode)
	e.str(r.Result.Signal)
	e.str(string(r.Result.Error))
	e.bool(r.Result.Truncated)

	u := &r.Usage
	e.u64(u.UserMicros)
	e.u64(u.SystemMicros)
	e.u64(u.MaxRSSKiB)
	e.u64(u.OutputBytes)
	e.u64(u.Fuel)

	e.i64(r.Start)
	e.i64(r.End)
	if len(e.b) > MaxRecordSize {
		return nil, invalid("encoding is %d bytes, over %d", len(e.b), MaxRecordSize)
	}
	return e.b, nil
}

// Decode parses a canonical encoding strictly (see [Encode]). The bytes are
// untrusted: lengths are checked against what remains before anything is
// allocated, so a record costs at most about its own size in memory.
func Decode(b []byte) (*Record, error) {
	if len(b) > MaxRecordSize {
		return nil, invalid("encoding is %d bytes, over %d", len(b), MaxRecordSize)
	}
	d := decoder{b: b}
	if v := d.u8(); d.err == nil && v != Version {
		return nil, invalid("encoding version %d, want %d", v, Version)
	}
	r := &Record{}
	r.Seq = d.u64()
	r.Prev = d.digest()
	r.KeyID = d.str()
	r.CallID = d.str()
	r.RunID = d.str()
	r.Principal.UID = d.u32()
	r.Principal.Name = d.str()
	r.Tool = d.str()
	r.Decision = Decision(d.u8())
	r.Policies = d.strs()
	r.Tier = d.str()

	rc := &r.Receipt
	rc.Tier = d.str()
	rc.Backend = d.str()
	rc.LandlockABI = d.int()
	rc.Seccomp = d.str()
	rc.SeccompDigest = d.str()
	rc.Namespaces = d.strs()
	rc.BwrapVersion = d.str()
	rc.Cgroup = d.str()
	rc.Layers = d.strs()

	l := &r.Limits
	l.Rlimits.CPUSeconds = d.u64()
	l.Rlimits.AddressSpace = d.u64()
	l.Rlimits.NoFile = d.u64()
	l.Rlimits.NProc = d.u64()
	l.Rlimits.FileSize = d.u64()
	l.Rlimits.Pids = d.u64()
	l.Rlimits.Memory = d.u64()
	l.TimeoutMS = d.i64()
	l.MaxOutput = d.i64()
	l.Fuel = d.u64()
	l.FuelSchedule = d.str()

	a := &r.Artifact
	a.Kind = d.str()
	a.Name = d.str()
	a.Digest = d.digest()
	if n := d.count(4 + 32 + 32); n > 0 {
		a.Modules = make([]Module, n)
		for i := range a.Modules {
			a.Modules[i] = Module{Name: d.str(), Digest: d.digest(), Instrumented: d.digest()}
		}
	}

	r.Input = d.digest()
	r.Stdout = d.digest()
	r.Stderr = d.digest()

	r.Result.Status = ipc.Status(d.str())
	r.Result.ExitCode = d.i64()
	r.Result.Signal = d.str()
	r.Result.Error = ipc.ErrorClass(d.str())
	r.Result.Truncated = d.bool()

	u := &r.Usage
	u.UserMicros = d.u64()
	u.SystemMicros = d.u64()
	u.MaxRSSKiB = d.u64()
	u.OutputBytes = d.u64()
	u.Fuel = d.u64()

	r.Start = d.i64()
	r.End = d.i64()
	if d.err != nil {
		return nil, d.err
	}
	if d.off != len(b) {
		return nil, invalid("%d bytes trail the record", len(b)-d.off)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// HashRecord is a record's hash: SHA-256 over [RecordContext] and its
// encoding. The next record's Prev is this hash.
func HashRecord(encoded []byte) Digest {
	h := sha256.New()
	h.Write([]byte(RecordContext))
	h.Write(encoded)
	var d Digest
	h.Sum(d[:0])
	return d
}

// signedMessage is what the attestation key signs: the same bytes the
// record hash is computed over.
func signedMessage(encoded []byte) []byte {
	m := make([]byte, 0, len(RecordContext)+len(encoded))
	return append(append(m, RecordContext...), encoded...)
}

// DigestBytes is the plain SHA-256 of b, as sha256sum prints it. Stdout and
// stderr are digested this way, so an auditor holding the output can check
// it with standard tools.
func DigestBytes(b []byte) Digest { return sha256.Sum256(b) }

// InputDigest digests a call's input: the arguments the agent supplied and
// its input document. It is SHA-256 over [InputContext] followed by a list
// of the arguments and then the document as a str, in the record's encoding
// (u32 count, then each argument as u32 length and bytes; then u32 length
// and the document's bytes).
func InputDigest(args []string, input string) Digest {
	e := encoder{b: make([]byte, 0, len(InputContext)+64)}
	e.b = append(e.b, InputContext...)
	e.strs(args)
	e.str(input)
	return sha256.Sum256(e.b)
}

type encoder struct{ b []byte }

func (e *encoder) u8(v uint8)   { e.b = append(e.b, v) }
func (e *encoder) u32(v uint32) { e.b = binary.BigEndian.AppendUint32(e.b, v) }
func (e *encoder) u64(v uint64) { e.b = binary.BigEndian.AppendUint64(e.b, v) }
func (e *encoder) i64(v int64)  { e.u64(uint64(v)) }
func (e *encoder) digest(d Digest) {
	e.b = append(e.b, d[:]...)
}
func (e *encoder) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// str writes a length and bytes. A string over 4 GiB cannot occur: the
// record is refused as over MaxRecordSize first (its bytes are counted), so
// the truncated length never reaches a log.
func (e *encoder) str(s string) {
	e.u32(clampU32(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) strs(ss []string) {
	e.u32(clampU32(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func clampU32(n int) uint32 {
	if uint64(n) > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(n)
}

// decoder reads the encoding; the first error sticks and every later read
// returns zero values.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.err = invalid("%s at byte %d: %d bytes wanted, %d left", what, d.off, n, len(d.b)-d.off)
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *decoder) u8() uint8 {
	if p := d.take(1, "u8"); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if p := d.take(4, "u32"); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if p := d.take(8, "u64"); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (d *decoder) i64() int64 { return int64(d.u64()) }

// int reads an i64 that must fit the platform's int.
func (d *decoder) int() int {
	v := d.i64()
	if d.err == nil && (v < math.MinInt || v > math.MaxInt) {
		d.err = invalid("integer %d does not fit an int", v)
	}
	return int(v)
}

func (d *decoder) bool() bool {
	off := d.off
	switch v := d.u8(); {
	case d.err != nil:
		return false
	case v > 1:
		d.err = invalid("boolean %d at byte %d", v, off)
	default:
		return v == 1
	}
	return false
}

func (d *decoder) digest() Digest {
	var dg Digest
	if p := d.take(len(dg), "digest"); p != nil {
		copy(dg[:], p)
	}
	return dg
}

func (d *decoder) str() string {
	n := d.u32()
	if d.err != nil {
		return ""
	}
	if uint64(n) > uint64(len(d.b)-d.off) {
		d.err = invalid("string of %d bytes at byte %d, %d left", n, d.off, len(d.b)-d.off)
		return ""
	}
	return string(d.take(int(n), "string"))
}

// count reads a list's count, which must fit in what remains at minSize
// bytes an item.
func (d *decoder) count(minSize int) int {
	n := d.u32()
	if d.err != nil {
		return 0
	}
	if uint64(n)*uint64(minSize) > uint64(len(d.b)-d.off) {
		d.err = invalid("list of %d items at byte %d exceeds the %d bytes left", n, d.off, len(d.b)-d.off)
		return 0
	}
	return int(n)
}

func (d *decoder) strs() []string {
	n := d.count(4)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.str()
	}
	return ss
}

// DigestFile is the SHA-256 of the file at path: for a native tool, the
// resolved binary. It hashes what is at the path when it is called; see
// docs/ATTESTATIONS.md for what that does and does not prove.
func DigestFile(path string) (Digest, error) {
	f, err := os.Open(path)
	if err != nil {
		return Digest{}, fmt.Errorf("attest: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Digest{}, fmt.Errorf("attest: %w", err)
	}
	var d Digest
	h.Sum(d[:0])
	return d, nil
}
