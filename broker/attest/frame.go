package attest

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"io"
)

// A log file, all integers big-endian:
//
//	header   "stockade attestation log v1\n"   28 bytes
//	         public key                         32 bytes (Ed25519)
//	frame*   length n                           u32, 1 ≤ n ≤ MaxRecordSize
//	         record                             n bytes, the canonical encoding
//	         signature                          64 bytes, Ed25519 over RecordContext || record
//
// The broker writes a frame with one write and syncs it before Append
// returns; a crash can leave only a prefix of the last frame, which the
// broker cuts off when it opens the log again (see OpenLog).

// logMagic opens every log file.
const logMagic = "stockade attestation log v1\n"

const (
	headerSize    = len(logMagic) + ed25519.PublicKeySize
	frameOverhead = 4 + ed25519.SignatureSize
	maxFrameSize  = frameOverhead + MaxRecordSize
)

// Signed is a record with its canonical encoding, its signature and its
// hash. From [Log.Append] and [VerifyRecord] it is verified; from [Reader]
// it is only parsed.
type Signed struct {
	Record Record
	// Encoded is the record's canonical encoding: what the signature covers
	// (after RecordContext), and what the agent receives.
	Encoded []byte
	// Signature is the attestation key's Ed25519 signature (64 bytes).
	Signature []byte
	// Hash is [HashRecord] of Encoded, the next record's Prev.
	Hash Digest
}

// Link names one record of a chain: its sequence number and its hash.
type Link struct {
	Seq  uint64
	Hash Digest
}

func (l Link) String() string { return fmt.Sprintf("%d:%s", l.Seq, l.Hash) }

func appendHeader(b []byte, pub ed25519.PublicKey) []byte {
	return append(append(b, logMagic...), pub...)
}

func appendFrame(b, encoded, sig []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(encoded)))
	return append(append(b, encoded...), sig...)
}

// Reader reads the records of one log file in order. It parses; it does
// not check signatures or the chain ([VerifyFiles] does). The bytes are
// untrusted: a frame's length is bounded before anything is allocated.
type Reader struct {
	name  string
	r     *bufio.Reader
	pub   ed25519.PublicKey
	off   int64
	index int
}

// NewReader reads the header of a log file; name is used in errors.
// Errors are *[VerifyError].
func NewReader(name string, r io.Reader) (*Reader, error) {
	rd := &Reader{name: name, r: bufio.NewReaderSize(r, 64<<10)}
	h := make([]byte, headerSize)
	n, err := io.ReadFull(rd.r, h)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, rd.fail(-1, 0, ReasonHeader, "the file ends after %d bytes, inside the %d-byte header", n, headerSize)
	case err != nil:
		return nil, rd.fail(-1, 0, ReasonIO, "%v", err)
	case string(h[:len(logMagic)]) != logMagic:
		return nil, rd.fail(-1, 0, ReasonHeader, "not a Stockade attestation log (bad magic)")
	}
	rd.pub = ed25519.PublicKey(h[len(logMagic):])
	rd.off = int64(headerSize)
	return rd, nil
}

// PublicKey is the key the file's header names. It is a claim of the file,
// not a trusted key.
func (rd *Reader) PublicKey() ed25519.PublicKey { return bytes.Clone(rd.pub) }

// Offset is where the next frame starts.
func (rd *Reader) Offset() int64 { return rd.off }

// Index is the index of the next frame in the file, from 0.
func (rd *Reader) Index() int { return rd.index }

// Next returns the next record, or io.EOF after the last complete frame
// when the file ends exactly there. An incomplete frame at the end is
// ReasonTruncated. Errors are *[VerifyError]; after one the Reader is done.
func (rd *Reader) Next() (Signed, error) {
	enc, sig, err := rd.nextFrame()
	if err != nil {
		return Signed{}, err
	}
	r, err := Decode(enc)
	if err != nil {
		return Signed{}, rd.fail(rd.index, rd.off, ReasonMalformed, "%v", err)
	}
	s := Signed{Record: *r, Encoded: enc, Signature: sig, Hash: HashRecord(enc)}
	rd.off += int64(frameOverhead + len(enc))
	rd.index++
	return s, nil
}

// nextFrame reads one frame's record and signature; Next advances off and
// index once the record decodes. After an error the Reader is done.
func (rd *Reader) nextFrame() (enc, sig []byte, err error) {
	var lb [4]byte
	n, err := io.ReadFull(rd.r, lb[:])
	switch {
	case err == io.EOF:
		return nil, nil, io.EOF
	case err == io.ErrUnexpectedEOF:
		return nil, nil, rd.fail(rd.index, rd.off, ReasonTruncated, "the file ends %d bytes into a frame", n)
	case err != nil:
		return nil, nil, rd.fail(rd.index, rd.off, ReasonIO, "%v", err)
	}
	size := binary.BigEndian.Uint32(lb[:])
	if size == 0 || size > MaxRecordSize {
		return nil, nil, rd.fail(rd.index, rd.off, ReasonMalformed, "frame length %d is outside 1..%d", size, MaxRecordSize)
	}
	body := make([]byte, int(size)+ed25519.SignatureSize)
	m, err := io.ReadFull(rd.r, body)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return nil, nil, rd.fail(rd.index, rd.off, ReasonTruncated, "the file ends %d bytes into a %d-byte frame", 4+m, frameOverhead+int(size))
	case err != nil:
		return nil, nil, rd.fail(rd.index, rd.off, ReasonIO, "%v", err)
	}
	return body[:size:size], body[size:], nil
}

func (rd *Reader) fail(index int, off int64, reason Reason, format string, a ...any) *VerifyError {
	return &VerifyError{File: rd.name, Index: index, Offset: off, Reason: reason, Detail: fmt.Sprintf(format, a...)}
}

// parseFrame parses one complete frame at the start of b, for the
// recovery scan. It reports ok only for a frame that decodes to a valid
// record whose signature verifies with pub.
func parseFrame(b []byte, pub ed25519.PublicKey) (s Signed, size int, ok bool) {
	if len(b) < frameOverhead || len(pub) != ed25519.PublicKeySize {
		return Signed{}, 0, false
	}
	n := binary.BigEndian.Uint32(b)
	if n == 0 || n > MaxRecordSize || uint64(len(b)) < uint64(frameOverhead)+uint64(n) {
		return Signed{}, 0, false
	}
	enc := b[4 : 4+n]
	sig := b[4+n : 4+n+ed25519.SignatureSize]
	r, err := Decode(enc)
	if err != nil || !ed25519.Verify(pub, signedMessage(enc), sig) {
		return Signed{}, 0, false
	}
	return Signed{Record: *r, Encoded: bytes.Clone(enc), Signature: bytes.Clone(sig), Hash: HashRecord(enc)}, frameOverhead + int(n), true
}
