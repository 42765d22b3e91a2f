package skill

import (
	"errors"
	"fmt"
	"strconv"
)

// Reason is the code of one refusal. Every error this package returns is an
// *Error carrying one, and a Reason is itself an error, so callers test with
// errors.Is(err, skill.ReasonOverlap) or read it with ReasonOf. The codes
// are stable: they go into the verifier's JSON output and audit log.
type Reason string

func (r Reason) Error() string { return string(r) }

// Class is what a Reason says about the bytes, for the caller's outcome
// (the admin CLI's exit codes): proven tampered, undecidable, or refused by
// the caller's key check.
type Class string

const (
	// ClassInvalid: a signature or a signed digest does not match. The
	// bytes are not what the key signed (or the key did not sign them).
	ClassInvalid Class = "invalid"
	// ClassMalformed: the envelope, statement, archive or manifest is
	// unparseable, unsafe or over a limit. Nothing is proven about who made
	// it; it is refused all the same.
	ClassMalformed Class = "malformed"
	// ClassRefused: the caller's key check refused the signing key.
	ClassRefused Class = "refused"
)

// Envelope and signature.
const (
	ReasonEnvelopeTooLarge   Reason = "envelope.too_large"       // over Limits.EnvelopeBytes
	ReasonEnvelopeMalformed  Reason = "envelope.malformed"       // not strict JSON of the envelope's shape, bad base64
	ReasonPayloadType        Reason = "envelope.payload_type"    // not the skill statement's payload type
	ReasonSignatureCount     Reason = "envelope.signature_count" // not exactly one signature (or repeated keys)
	ReasonKeyLength          Reason = "envelope.key_length"      // public key is not 32 bytes
	ReasonSignatureLength    Reason = "envelope.signature_length"
	ReasonKeyID              Reason = "envelope.keyid"      // keyid is not the public key's fingerprint
	ReasonSignature          Reason = "signature.invalid"   // Ed25519 verification over PAE failed
	ReasonKeyRefused         Reason = "key.refused"         // the caller's key check said no
	ReasonStatementMalformed Reason = "statement.malformed" // not strict JSON of the statement's shape
	ReasonNotCanonical       Reason = "statement.not_canonical"
	ReasonStatementInvalid   Reason = "statement.invalid"   // a field's value is not valid
	ReasonStatementFiles     Reason = "statement.files"     // file list unsorted, repeated, or without skill.toml
	ReasonPublisherMismatch  Reason = "statement.publisher" // names another key than the one that signed
)

// Limits and the archive as a whole (checked before the ZIP is parsed).
const (
	ReasonArchiveTooLarge Reason = "archive.too_large"
	ReasonArchiveSize     Reason = "archive.size_mismatch"   // length differs from the signed size
	ReasonArchiveDigest   Reason = "archive.digest_mismatch" // SHA-256 differs from the signed digest
	ReasonTooManyEntries  Reason = "limit.entries"
	ReasonFileTooLarge    Reason = "limit.file_size"
	ReasonTotalTooLarge   Reason = "limit.total_size"
	ReasonRatio           Reason = "limit.ratio" // compression ratio over Limits.Ratio
)

// ZIP structure.
const (
	ReasonEndRecord        Reason = "zip.end_record"        // no end of central directory record, or a bad one
	ReasonComment          Reason = "zip.comment"           // archive or entry comment
	ReasonTrailingData     Reason = "zip.trailing_data"     // bytes after the end record
	ReasonPrependedData    Reason = "zip.prepended_data"    // bytes before the first local header
	ReasonHiddenData       Reason = "zip.hidden_data"       // bytes between entries no central record covers
	ReasonOverlap          Reason = "zip.overlap"           // two entries (or an entry and the directory) share bytes
	ReasonUnsupported      Reason = "zip.unsupported"       // zip64, several disks, a newer format version, an unknown host
	ReasonCentralDirectory Reason = "zip.central_directory" // a central record that does not parse
	ReasonLocalHeader      Reason = "zip.local_header"      // a local header missing or disagreeing with its central record
	ReasonExtraField       Reason = "zip.extra_field"
	ReasonParserMismatch   Reason = "zip.parser_mismatch" // archive/zip read the directory differently from the scan
)

// Entries.
const (
	ReasonNotRegular    Reason = "entry.not_regular" // directory, symbolic link, device, ...
	ReasonMethod        Reason = "entry.method"      // neither Store nor Deflate
	ReasonEncrypted     Reason = "entry.encrypted"
	ReasonFlags         Reason = "entry.flags" // data descriptor, patch data, or another flag outside the subset
	ReasonDuplicate     Reason = "entry.duplicate"
	ReasonCaseDuplicate Reason = "entry.case_duplicate"
	ReasonUnsigned      Reason = "entry.unsigned" // in the archive, not in the statement
	ReasonMissing       Reason = "entry.missing"  // in the statement, not in the archive
	ReasonEntrySize     Reason = "entry.size_mismatch"
	ReasonEntryDigest   Reason = "entry.digest_mismatch"
	ReasonEntryRead     Reason = "entry.read" // decompression failed
)

// Paths (of archive entries and statement files).
const (
	ReasonPathTraversal Reason = "path.traversal" // a ".." segment
	ReasonPathAbsolute  Reason = "path.absolute"
	ReasonPathBackslash Reason = "path.backslash"
	ReasonPathNUL       Reason = "path.nul"
	ReasonPathDrive     Reason = "path.drive" // "C:..."
	ReasonPathInvalid   Reason = "path.invalid"
	ReasonPathLayout    Reason = "path.layout" // not skill.toml, modules/*.wasm or assets/**
)

// The manifest.
const (
	ReasonManifestMalformed Reason = "manifest.malformed" // TOML syntax, unknown or repeated key, wrong type
	ReasonID                Reason = "id.invalid"
	ReasonVersion           Reason = "version.invalid"
	ReasonSequence          Reason = "sequence.invalid"
	ReasonText              Reason = "manifest.text" // name, publisher, descriptions
	ReasonTool              Reason = "manifest.tool"
	ReasonSchema            Reason = "manifest.schema"
	ReasonCapability        Reason = "manifest.capability"
	ReasonLimit             Reason = "manifest.limit"
	ReasonBinding           Reason = "manifest.binding" // id, version or sequence differ from the statement's
	ReasonModule            Reason = "manifest.module"  // a tool's module is not in the archive
)

// Key rotation statements (rotation.go).
const (
	ReasonRotationMalformed Reason = "rotation.malformed" // not strict, canonical JSON of the rotation's shape
	ReasonRotationInvalid   Reason = "rotation.invalid"   // old = new, a bad fingerprint or skill list
	ReasonRotationSigners   Reason = "rotation.signers"   // not signed by exactly the old and the new key
)

// Class returns what r says about the bytes.
func (r Reason) Class() Class {
	switch r {
	case ReasonSignature, ReasonArchiveSize, ReasonArchiveDigest, ReasonPublisherMismatch, ReasonRotationSigners:
		return ClassInvalid
	case ReasonKeyRefused:
		return ClassRefused
	}
	return ClassMalformed
}

// Error is a refusal. Subject, when set, names what was refused (an archive
// entry, a manifest key, a field); it may come from the refused bytes, so
// Error() quotes it and cuts it short. Detail is this package's own words.
type Error struct {
	Reason  Reason
	Subject string
	Detail  string
	Err     error
}

const maxSubject = 96

func (e *Error) Error() string {
	s := "skill: " + string(e.Reason)
	if e.Subject != "" {
		subj := e.Subject
		if len(subj) > maxSubject {
			subj = subj[:maxSubject] + "..."
		}
		s += ": " + strconv.QuoteToASCII(subj)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap exposes the Reason and the underlying error to errors.Is and As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

// ReasonOf returns the Reason of err, or "" if err is not from this package.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func refuse(r Reason, subject, format string, a ...any) *Error {
	return &Error{Reason: r, Subject: subject, Detail: fmt.Sprintf(format, a...)}
}

func refuseErr(r Reason, subject string, err error, format string, a ...any) *Error {
	return &Error{Reason: r, Subject: subject, Detail: fmt.Sprintf(format, a...), Err: err}
}
