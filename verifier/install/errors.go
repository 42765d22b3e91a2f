package install

import (
	"fmt"
	"strconv"
)

// Reason is the code of one refusal. A Reason is itself an error, so callers
// test with errors.Is(err, install.ReasonDigest). The codes are stable: they
// go into the verifier's JSON output and audit log.
type Reason string

func (r Reason) Error() string { return string(r) }

// Tampering reports whether r says that a release's own files are not what
// was signed: not installed, missing, extra, not regular, of another owner
// or mode, of another size or digest. It is false for the refusals that
// blame the skills directory (ReasonRootUnsafe, ReasonIO) or the statement
// the caller named (ReasonInvalid), and true for any other Reason, so that
// a new one fails closed.
func (r Reason) Tampering() bool {
	switch r {
	case ReasonRootUnsafe, ReasonIO, ReasonInvalid:
		return false
	}
	return true
}

const (
	ReasonRootUnsafe   Reason = "install.root_unsafe"   // root is not a directory of ours, or is group/other-writable
	ReasonInvalid      Reason = "install.invalid"       // the skill or statement given is inconsistent
	ReasonNotInstalled Reason = "install.not_installed" // no directory for the digest
	ReasonMissing      Reason = "install.missing"       // a signed file is not on disk
	ReasonExtra        Reason = "install.extra"         // a file or directory the statement does not name
	ReasonNotRegular   Reason = "install.not_regular"   // a symbolic link, device, socket, hard link, ...
	ReasonOwner        Reason = "install.owner"         // owned by another uid
	ReasonMode         Reason = "install.mode"          // not 0600 (files) or 0700 (directories)
	ReasonSize         Reason = "install.size_mismatch"
	ReasonDigest       Reason = "install.digest_mismatch"
	ReasonIO           Reason = "install.io" // the file system failed
)

// Error is a refusal. Path names the file concerned, relative to the root,
// or the root itself.
type Error struct {
	Reason Reason
	Path   string
	Detail string
	Err    error
}

func (e *Error) Error() string {
	s := string(e.Reason)
	if e.Path != "" {
		s += " " + quote(e.Path)
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

func refuse(r Reason, path string, format string, args ...any) *Error {
	return &Error{Reason: r, Path: path, Detail: fmt.Sprintf(format, args...)}
}

func ioError(path string, err error) *Error {
	return &Error{Reason: ReasonIO, Path: path, Err: err}
}

// quote makes a name from disk safe to print: ASCII, no control bytes, and
// cut short.
func quote(s string) string {
	const max = 200
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.QuoteToASCII(s)
}
