package main

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/install"
	"github.com/stockade-dev/stockade/verifier/skill"
	"github.com/stockade-dev/stockade/verifier/trust"
)

// skillOutcomes maps every refusal of verifier/skill. The classes agree
// with skill.Reason.Class (a test checks): invalid proves tampering,
// malformed proves nothing; key.refused is the trust store refusing a
// revoked key before the archive is parsed.
var skillOutcomes = map[skill.Reason]outcome{
	skill.ReasonEnvelopeTooLarge:   outMalformed,
	skill.ReasonEnvelopeMalformed:  outMalformed,
	skill.ReasonPayloadType:        outMalformed,
	skill.ReasonSignatureCount:     outMalformed,
	skill.ReasonKeyLength:          outMalformed,
	skill.ReasonSignatureLength:    outMalformed,
	skill.ReasonKeyID:              outMalformed,
	skill.ReasonSignature:          outInvalid,
	skill.ReasonKeyRefused:         outRevoked,
	skill.ReasonStatementMalformed: outMalformed,
	skill.ReasonNotCanonical:       outMalformed,
	skill.ReasonStatementInvalid:   outMalformed,
	skill.ReasonStatementFiles:     outMalformed,
	skill.ReasonPublisherMismatch:  outInvalid,
	skill.ReasonArchiveTooLarge:    outMalformed,
	skill.ReasonArchiveSize:        outInvalid,
	skill.ReasonArchiveDigest:      outInvalid,
	skill.ReasonTooManyEntries:     outMalformed,
	skill.ReasonFileTooLarge:       outMalformed,
	skill.ReasonTotalTooLarge:      outMalformed,
	skill.ReasonRatio:              outMalformed,
	skill.ReasonEndRecord:          outMalformed,
	skill.ReasonComment:            outMalformed,
	skill.ReasonTrailingData:       outMalformed,
	skill.ReasonPrependedData:      outMalformed,
	skill.ReasonHiddenData:         outMalformed,
	skill.ReasonOverlap:            outMalformed,
	skill.ReasonUnsupported:        outMalformed,
	skill.ReasonCentralDirectory:   outMalformed,
	skill.ReasonLocalHeader:        outMalformed,
	skill.ReasonExtraField:         outMalformed,
	skill.ReasonParserMismatch:     outMalformed,
	skill.ReasonNotRegular:         outMalformed,
	skill.ReasonMethod:             outMalformed,
	skill.ReasonEncrypted:          outMalformed,
	skill.ReasonFlags:              outMalformed,
	skill.ReasonDuplicate:          outMalformed,
	skill.ReasonCaseDuplicate:      outMalformed,
	skill.ReasonUnsigned:           outMalformed,
	skill.ReasonMissing:            outMalformed,
	skill.ReasonEntrySize:          outMalformed,
	skill.ReasonEntryDigest:        outMalformed,
	skill.ReasonEntryRead:          outMalformed,
	skill.ReasonPathTraversal:      outMalformed,
	skill.ReasonPathAbsolute:       outMalformed,
	skill.ReasonPathBackslash:      outMalformed,
	skill.ReasonPathNUL:            outMalformed,
	skill.ReasonPathDrive:          outMalformed,
	skill.ReasonPathInvalid:        outMalformed,
	skill.ReasonPathLayout:         outMalformed,
	skill.ReasonManifestMalformed:  outMalformed,
	skill.ReasonID:                 outMalformed,
	skill.ReasonVersion:            outMalformed,
	skill.ReasonSequence:           outMalformed,
	skill.ReasonText:               outMalformed,
	skill.ReasonTool:               outMalformed,
	skill.ReasonSchema:             outMalformed,
	skill.ReasonCapability:         outMalformed,
	skill.ReasonLimit:              outMalformed,
	skill.ReasonBinding:            outMalformed,
	skill.ReasonModule:             outMalformed,
	skill.ReasonRotationMalformed:  outMalformed,
	skill.ReasonRotationInvalid:    outMalformed,
	skill.ReasonRotationSigners:    outInvalid,
}

// trustOutcomes maps the trust store's quarantine reasons and refusals.
var trustOutcomes = map[trust.Reason]outcome{
	trust.ReasonNewPublisher:    outUntrusted,
	trust.ReasonNewSkill:        outUntrusted,
	trust.ReasonKeyMismatch:     outKeyMismatch,
	trust.ReasonNewCapabilities: outUntrusted,
	trust.ReasonAuditFailed:     outAuditFailed,
	trust.ReasonUpdate:          outUntrusted,
	trust.ReasonRollback:        outRollback,
	trust.ReasonEquivocation:    outRollback,
	trust.ReasonWrongDigest:     outWrongDigest,
	trust.ReasonKeyRevoked:      outRevoked,
	trust.ReasonRevoked:         outRevoked,
	trust.ReasonDisabled:        outUntrusted,
	trust.ReasonNotActive:       outUntrusted,
	trust.ReasonNotFound:        outNotFound,
	trust.ReasonBadState:        outConflict,
	trust.ReasonInvalid:         outUsage,
	trust.ReasonStoreUnsafe:     outDamaged,
	trust.ReasonStoreCorrupt:    outDamaged,
	trust.ReasonStoreLocked:     outUnavailable,
	trust.ReasonStoreBroken:     outDamaged,
	trust.ReasonAuditChain:      outDamaged,
	trust.ReasonUntrusted:       outUntrusted,
	trust.ReasonTampered:        outDamaged,
}

// installOutcomes maps the refusals of the skills directory.
var installOutcomes = map[install.Reason]outcome{
	install.ReasonRootUnsafe:   outDamaged,
	install.ReasonInvalid:      outInternal,
	install.ReasonNotInstalled: outDamaged,
	install.ReasonMissing:      outDamaged,
	install.ReasonExtra:        outDamaged,
	install.ReasonNotRegular:   outDamaged,
	install.ReasonOwner:        outDamaged,
	install.ReasonMode:         outDamaged,
	install.ReasonSize:         outDamaged,
	install.ReasonDigest:       outDamaged,
	install.ReasonIO:           outUnavailable,
}

// adminOutcomes maps the reasons admin.sock answers with (ipc.Reason,
// plus the client's own admin.ReasonProtocol).
var adminOutcomes = map[admin.Reason]outcome{
	admin.ReasonInvalid:      outInvalid,
	admin.ReasonMalformed:    outMalformed,
	admin.ReasonBadRequest:   outUsage,
	admin.ReasonUntrusted:    outUntrusted,
	admin.ReasonKeyMismatch:  outKeyMismatch,
	admin.ReasonRevoked:      outRevoked,
	admin.ReasonRollback:     outRollback,
	admin.ReasonEquivocation: outRollback,
	admin.ReasonAuditFailed:  outAuditFailed,
	admin.ReasonWrongDigest:  outWrongDigest,
	admin.ReasonNotFound:     outNotFound,
	admin.ReasonNotActive:    outUntrusted,
	admin.ReasonDisabled:     outUntrusted,
	admin.ReasonTampered:     outDamaged,
	admin.ReasonBadState:     outConflict,
	admin.ReasonDenied:       outDenied,
	admin.ReasonStore:        outDamaged,
	admin.ReasonInternal:     outInternal,
	admin.ReasonProtocol:     outInternal,
}

// quarantineOutcome maps one of a release's quarantine reasons (the trust
// store's codes).
func quarantineOutcome(r string) (outcome, bool) {
	o, ok := trustOutcomes[trust.Reason(r)]
	return o, ok
}

// dialError is a failure to reach admin.sock: the verifier is not
// running, or the path is wrong.
type dialError struct {
	path string
	err  error
}

func (e *dialError) Error() string {
	return "cannot reach the verifier at " + e.path + ": " + e.err.Error()
}

func (e *dialError) Unwrap() error { return e.err }

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(msg string) error { return &usageError{msg} }

// outcomeOf classifies err: the outcome (exit code) and the most precise
// reason code known, which the JSON output carries as error.reason.
func outcomeOf(err error) (outcome, string) {
	if err == nil {
		return outOK, ""
	}
	var ue *usageError
	var se *skill.Error
	var te *trust.Error
	var ie *install.Error
	var ipe *ipc.Error
	var ae *admin.Error
	var de *dialError
	switch {
	case errors.As(err, &ue):
		return outUsage, "usage"
	case errors.As(err, &ae):
		return lookup(adminOutcomes, ae.Reason)
	case errors.As(err, &se):
		return lookup(skillOutcomes, se.Reason)
	case errors.As(err, &te):
		return lookup(trustOutcomes, te.Reason)
	case errors.As(err, &ie):
		return lookup(installOutcomes, ie.Reason)
	case errors.Is(err, errWrongPassphrase):
		return outInvalid, "key.passphrase"
	case errors.Is(err, errKeyFileFormat), errors.Is(err, errKeyFileMode):
		return outMalformed, "key.file"
	case errors.Is(err, errNoPassphrase), errors.Is(err, errNoTerminal):
		return outUsage, "key.passphrase_missing"
	case errors.Is(err, errPassphrasesDiffer):
		return outUsage, "key.passphrase_mismatch"
	case errors.As(err, &ipe):
		return ipcOutcome(ipe.Class)
	case errors.As(err, &de), isNetError(err), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, os.ErrDeadlineExceeded):
		return outUnavailable, "unavailable"
	case errors.Is(err, fs.ErrNotExist):
		return outNotFound, "not_found"
	case errors.Is(err, fs.ErrExist):
		return outConflict, "exists"
	case errors.Is(err, fs.ErrPermission), isPathError(err):
		return outUnavailable, "io"
	}
	return outInternal, "internal"
}

func lookup[R ~string](table map[R]outcome, r R) (outcome, string) {
	if o, ok := table[r]; ok {
		return o, string(r)
	}
	return outInternal, string(r)
}

// ipcOutcome maps the error classes that cross admin.sock before the admin
// service answers (the connection's own refusals).
func ipcOutcome(c ipc.ErrorClass) (outcome, string) {
	switch c {
	case ipc.ClassDenied, ipc.ClassCapabilityDenied:
		return outDenied, string(c)
	case ipc.ClassInvalidInput:
		return outUsage, string(c)
	case ipc.ClassQuotaExceeded, ipc.ClassBudgetExceeded, ipc.ClassTimedOut, ipc.ClassSandboxUnavailable:
		return outUnavailable, string(c)
	}
	return outInternal, string(c)
}

// isNetError reports a failure of the connection to admin.sock after it
// was made (syscall.Errno also satisfies net.Error, so the interface is no
// test).
func isNetError(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe)
}

func isPathError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe)
}

// releaseOutcome is the outcome of an install or promote that the service
// answered with a release: 0 when it is active, otherwise the weightiest of
// its quarantine reasons (key_mismatch, then tampered, then audit_failed,
// then untrusted).
func releaseOutcome(state string, reasons []string) (outcome, string) {
	switch state {
	case admin.StateActive:
		return outOK, ""
	case admin.StateRevoked:
		return outRevoked, string(trust.ReasonRevoked)
	case admin.StateDisabled:
		return outUntrusted, string(trust.ReasonDisabled)
	case admin.StateQuarantined:
	default:
		return outUntrusted, string(trust.ReasonNotActive)
	}
	// Without a known reason, the state itself is the why.
	best, why, picked := outUntrusted, admin.StateQuarantined, false
	rank := map[outcome]int{outUntrusted: 0, outAuditFailed: 1, outDamaged: 2, outKeyMismatch: 3}
	for _, r := range reasons {
		o, ok := quarantineOutcome(r)
		if ok && (!picked || rank[o] > rank[best]) {
			best, why, picked = o, r, true
		}
	}
	return best, why
}
