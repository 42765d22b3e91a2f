package attest

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Reason is why a log failed verification. It is an error, so
// errors.Is(err, ReasonSignature) picks out one reason.
type Reason string

func (r Reason) Error() string { return "attest: " + string(r) }

// The reasons a log fails verification, the checks in the order they are
// made for each record.
const (
	ReasonIO        Reason = "unreadable"          // the file cannot be opened or read
	ReasonHeader    Reason = "bad header"          // no header, or not a log file
	ReasonKey       Reason = "wrong key"           // the header's or a record's key is not the verifying key
	ReasonTruncated Reason = "truncated frame"     // the file ends inside a frame
	ReasonMalformed Reason = "malformed record"    // bad frame length, or the record does not decode
	ReasonSignature Reason = "bad signature"       // the signature does not verify
	ReasonStart     Reason = "chain start"         // the first record is not the expected start
	ReasonDuplicate Reason = "duplicate record"    // the sequence number repeats
	ReasonOrder     Reason = "out of order"        // the sequence number goes back
	ReasonGap       Reason = "sequence gap"        // the sequence number skips
	ReasonChain     Reason = "broken chain"        // the previous-record hash does not match
	ReasonMismatch  Reason = "record mismatch"     // a record to look for is in the log with another hash
	ReasonMissing   Reason = "record not in files" // a record to look for is not in the files
)

// VerifyError names the first bad record: the file, the record's index in
// the file (from 0; -1 for the file's header, or for a check of the whole
// log), the frame's byte offset, its sequence number when it could be read
// (0 otherwise), and the reason.
type VerifyError struct {
	File   string
	Index  int
	Offset int64
	Seq    uint64
	Reason Reason
	Detail string
}

func (e *VerifyError) Error() string {
	var b strings.Builder
	b.WriteString("attest: ")
	if e.File != "" {
		b.WriteString(e.File + ": ")
	}
	switch {
	case e.Index >= 0:
		fmt.Fprintf(&b, "record %d (offset %d", e.Index, e.Offset)
		if e.Seq != 0 {
			fmt.Fprintf(&b, ", seq %d", e.Seq)
		}
		b.WriteString("): ")
	case e.File != "":
		b.WriteString("header: ")
	case e.Seq != 0:
		fmt.Fprintf(&b, "seq %d: ", e.Seq)
	}
	b.WriteString(string(e.Reason))
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return b.String()
}

func (e *VerifyError) Unwrap() error { return e.Reason }

// VerifyOptions add anchors to a verification.
type VerifyOptions struct {
	// After is the record just before the files: the first record must be
	// After.Seq+1 and name After.Hash as its previous. Without it, the
	// first record must be seq 1 (a chain's start). Use it for a log whose
	// earlier files were archived or pruned.
	After *Link
	// Contains are records that must be in the files with these hashes:
	// attestations agents received, or a head noted earlier. They detect a
	// log cut short at its end, which a chain alone cannot.
	Contains []Link
}

// Summary describes a verified log.
type Summary struct {
	Files   int
	Records int
	// PublicKey is the key the records were checked against and KeyID its
	// id; KeyFromLog is set when no key was given and the first file's
	// header supplied it, which proves consistency, not origin.
	PublicKey  ed25519.PublicKey
	KeyID      string
	KeyFromLog bool
	// First and Head are the first and last records (zero if none).
	First, Head Link
}

// Verify checks log files in order as one chain from its start (seq 1):
// every header names pub, every record decodes canonically, names pub's
// key id and carries a valid signature, sequence numbers go up by one
// without gaps, repeats or reorders, and each record names the hash of the
// one before, across files. It returns how many records verified, and a
// *[VerifyError] naming the first bad one. A nil pub takes the key from the
// first file's header (a consistency check only).
func Verify(files []string, pub ed25519.PublicKey) (n int, err error) {
	s, err := VerifyFiles(files, pub, VerifyOptions{})
	return s.Records, err
}

// VerifyFiles is [Verify] with anchors, returning a summary. On error the
// summary counts the records that verified before the bad one.
func VerifyFiles(files []string, pub ed25519.PublicKey, opts VerifyOptions) (Summary, error) {
	var sum Summary
	if len(files) == 0 {
		return sum, errors.New("attest: no log files to verify")
	}
	if pub != nil && len(pub) != ed25519.PublicKeySize {
		return sum, fmt.Errorf("attest: public key is %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	v := &verifier{pub: pub, want: Link{Seq: 1}, contains: map[uint64]Digest{}}
	if opts.After != nil {
		if opts.After.Seq == 0 || opts.After.Hash.IsZero() {
			return sum, errors.New("attest: an anchor needs a sequence number and a hash")
		}
		v.want, v.anchored = Link{Seq: opts.After.Seq + 1, Hash: opts.After.Hash}, true
	}
	for _, c := range opts.Contains {
		if h, dup := v.contains[c.Seq]; dup && h != c.Hash {
			return sum, fmt.Errorf("attest: two different hashes to look for at seq %d", c.Seq)
		}
		v.contains[c.Seq] = c.Hash
	}
	err := v.files(files)
	sum = Summary{Files: v.nfiles, Records: v.n, PublicKey: v.pub, KeyFromLog: v.keyFromLog, First: v.first, Head: v.head}
	if v.pub != nil {
		sum.KeyID = KeyIDOf(v.pub)
	}
	if err != nil {
		return sum, err
	}
	if len(v.contains) > 0 {
		seq := slices.Min(slices.Collect(maps.Keys(v.contains)))
		where := "after the last record"
		if seq < v.want.Seq {
			where = "before the first record"
		}
		return sum, &VerifyError{Index: -1, Seq: seq, Reason: ReasonMissing, Detail: where + " of the files given"}
	}
	return sum, nil
}

type verifier struct {
	pub        ed25519.PublicKey
	keyID      string
	keyFromLog bool
	anchored   bool
	want       Link // the next record's seq and its expected Prev
	contains   map[uint64]Digest
	n, nfiles  int
	first      Link
	head       Link
	msg        []byte
}

func (v *verifier) files(files []string) error {
	for _, name := range files {
		if err := v.file(name); err != nil {
			return err
		}
		v.nfiles++
	}
	return nil
}

func (v *verifier) file(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return &VerifyError{File: name, Index: -1, Reason: ReasonIO, Detail: err.Error()}
	}
	defer f.Close()
	return v.reader(name, f)
}

// reader verifies one file's bytes.
func (v *verifier) reader(name string, r io.Reader) error {
	rd, err := NewReader(name, r)
	if err != nil {
		return err
	}
	if v.pub == nil {
		v.pub, v.keyFromLog = rd.PublicKey(), true
	}
	if v.keyID == "" {
		v.keyID = KeyIDOf(v.pub)
	}
	if !bytes.Equal(rd.pub, v.pub) {
		return &VerifyError{File: name, Index: -1, Reason: ReasonKey,
			Detail: fmt.Sprintf("the header names key %s, not %s", KeyIDOf(rd.pub), v.keyID)}
	}
	for {
		index, off := rd.Index(), rd.Offset()
		s, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := v.record(&s); err != nil {
			err.File, err.Index, err.Offset, err.Seq = name, index, off, s.Record.Seq
			return err
		}
	}
}

// record checks one decoded record against the key and the chain.
func (v *verifier) record(s *Signed) *VerifyError {
	r := &s.Record
	if r.KeyID != v.keyID {
		return &VerifyError{Reason: ReasonKey, Detail: fmt.Sprintf("signed by key %s, not %s", r.KeyID, v.keyID)}
	}
	v.msg = append(append(v.msg[:0], RecordContext...), s.Encoded...)
	if len(s.Signature) != ed25519.SignatureSize || !ed25519.Verify(v.pub, v.msg, s.Signature) {
		return &VerifyError{Reason: ReasonSignature}
	}
	switch {
	case r.Seq == v.want.Seq:
	case v.n == 0:
		if v.anchored {
			return &VerifyError{Reason: ReasonStart, Detail: fmt.Sprintf("the first record is seq %d; the anchor wants %d", r.Seq, v.want.Seq)}
		}
		return &VerifyError{Reason: ReasonStart, Detail: fmt.Sprintf("the first record is seq %d, not 1; to verify a log whose earlier files are gone, anchor it on record %d (seq and hash)", r.Seq, r.Seq-1)}
	case r.Seq == v.want.Seq-1:
		return &VerifyError{Reason: ReasonDuplicate, Detail: fmt.Sprintf("seq %d again", r.Seq)}
	case r.Seq < v.want.Seq:
		return &VerifyError{Reason: ReasonOrder, Detail: fmt.Sprintf("seq %d after seq %d", r.Seq, v.want.Seq-1)}
	default:
		return &VerifyError{Reason: ReasonGap, Detail: fmt.Sprintf("seq %d after seq %d: %d records missing or moved", r.Seq, v.want.Seq-1, r.Seq-v.want.Seq)}
	}
	if r.Prev != v.want.Hash {
		return &VerifyError{Reason: ReasonChain, Detail: fmt.Sprintf("previous hash %s, want %s", hashOrNone(r.Prev), hashOrNone(v.want.Hash))}
	}
	if h, ok := v.contains[r.Seq]; ok {
		if h != s.Hash {
			return &VerifyError{Reason: ReasonMismatch, Detail: fmt.Sprintf("hash %s, not the expected %s", s.Hash, h)}
		}
		delete(v.contains, r.Seq)
	}
	if v.n == 0 {
		v.first = Link{Seq: r.Seq, Hash: s.Hash}
	}
	v.n++
	v.head = Link{Seq: r.Seq, Hash: s.Hash}
	v.want = Link{Seq: r.Seq + 1, Hash: s.Hash}
	return nil
}

func hashOrNone(d Digest) string {
	if d.IsZero() {
		return "none"
	}
	return d.String()
}

// VerifyRecord checks one attestation as an agent receives it: the
// canonical encoding and the signature by pub. It cannot say where the
// record sits in the log; [VerifyOptions.Contains] with its seq and hash
// checks that against the log.
func VerifyRecord(encoded, sig []byte, pub ed25519.PublicKey) (Signed, error) {
	if len(pub) != ed25519.PublicKeySize {
		return Signed{}, fmt.Errorf("attest: public key is %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	r, err := Decode(encoded)
	if err != nil {
		return Signed{}, err
	}
	if r.KeyID != KeyIDOf(pub) {
		return Signed{}, fmt.Errorf("%w: signed by key %s, not %s", ReasonKey, r.KeyID, KeyIDOf(pub))
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(pub, signedMessage(encoded), sig) {
		return Signed{}, ReasonSignature
	}
	return Signed{Record: *r, Encoded: bytes.Clone(encoded), Signature: bytes.Clone(sig), Hash: HashRecord(encoded)}, nil
}

// ParseLink reads "SEQ:HASH" (a sequence number and 64 hex digits), the
// form [Link.String] writes.
func ParseLink(s string) (Link, error) {
	seq, hash, ok := strings.Cut(s, ":")
	if !ok {
		return Link{}, fmt.Errorf("attest: %q is not SEQ:HASH", s)
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil || n == 0 {
		return Link{}, fmt.Errorf("attest: %q: bad sequence number", s)
	}
	h, err := ParseDigest(hash)
	if err != nil || h.IsZero() {
		return Link{}, fmt.Errorf("attest: %q: bad hash", s)
	}
	return Link{Seq: n, Hash: h}, nil
}
