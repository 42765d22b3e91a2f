package verifier

import (
	"errors"
	"time"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/install"
	"github.com/stockade-dev/stockade/verifier/skill"
	"github.com/stockade-dev/stockade/verifier/trust"
)

// wireError turns a refusal of the verifier's libraries into the closed set
// of reasons that crosses the wire (ipc.Reason). The message is the
// library's own text, which quotes and cuts every name taken from the
// refused bytes; the peers that see it are admins and the broker.
func wireError(err error) *ipc.Error {
	var ie *ipc.Error
	if errors.As(err, &ie) && ie.Reason != "" {
		return ie
	}
	return ipc.ReasonError(reasonOf(err), "%s", err.Error())
}

func reasonOf(err error) ipc.Reason {
	var se *skill.Error
	var te *trust.Error
	var ie *install.Error
	switch {
	case errors.As(err, &te):
		return trustReason(te.Reason)
	case errors.As(err, &se):
		switch se.Reason.Class() {
		case skill.ClassInvalid:
			return ipc.ReasonInvalid
		case skill.ClassRefused:
			if errors.Is(err, trust.ReasonKeyRevoked) {
				return ipc.ReasonRevoked
			}
			return ipc.ReasonUntrusted
		default:
			return ipc.ReasonMalformed
		}
	case errors.As(err, &ie):
		switch {
		case ie.Reason.Tampering():
			return ipc.ReasonTampered
		case ie.Reason == install.ReasonRootUnsafe, ie.Reason == install.ReasonIO:
			return ipc.ReasonStore
		default:
			return ipc.ReasonInternal // install.ReasonInvalid
		}
	}
	return ipc.ReasonInternal
}

func trustReason(r trust.Reason) ipc.Reason {
	switch r {
	case trust.ReasonRollback:
		return ipc.ReasonRollback
	case trust.ReasonEquivocation:
		return ipc.ReasonEquivocation
	case trust.ReasonWrongDigest:
		return ipc.ReasonWrongDigest
	case trust.ReasonKeyRevoked, trust.ReasonRevoked:
		return ipc.ReasonRevoked
	case trust.ReasonKeyMismatch:
		return ipc.ReasonKeyMismatch
	case trust.ReasonAuditFailed:
		return ipc.ReasonAuditFailed
	case trust.ReasonDisabled:
		return ipc.ReasonDisabled
	case trust.ReasonNotActive:
		return ipc.ReasonNotActive
	case trust.ReasonNotFound:
		return ipc.ReasonNotFound
	case trust.ReasonBadState:
		return ipc.ReasonBadState
	case trust.ReasonInvalid:
		return ipc.ReasonBadRequest
	case trust.ReasonUntrusted:
		return ipc.ReasonUntrusted
	case trust.ReasonTampered:
		return ipc.ReasonTampered
	case trust.ReasonStoreUnsafe, trust.ReasonStoreCorrupt, trust.ReasonStoreLocked,
		trust.ReasonStoreBroken, trust.ReasonAuditChain:
		return ipc.ReasonStore
	}
	return ipc.ReasonInternal
}

func badRequest(format string, a ...any) *ipc.Error {
	return ipc.ReasonError(ipc.ReasonBadRequest, format, a...)
}

// Conversions of the store's values into the admin protocol's.

func timeString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func wireCaps(c skill.Capabilities) ipc.Capabilities {
	nn := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return append([]string(nil), s...)
	}
	return ipc.Capabilities{HTTP: nn(c.HTTP), Secrets: nn(c.Secrets), Storage: c.Storage, Channels: nn(c.Channels)}
}

func wireRelease(r trust.Release) admin.Release {
	out := admin.Release{
		ID: string(r.ID), Version: r.Version, Sequence: r.Sequence, Digest: r.Digest.String(),
		Publisher: string(r.Publisher), State: string(r.State), Reasons: []string{},
		AuditProblems: []string{}, Capabilities: wireCaps(r.Capabilities),
		FirstSeen: timeString(r.FirstSeen), Changed: timeString(r.Changed),
	}
	for _, x := range r.Reasons {
		out.Reasons = append(out.Reasons, string(x))
	}
	out.AuditProblems = append(out.AuditProblems, r.AuditProblems...)
	return out
}
