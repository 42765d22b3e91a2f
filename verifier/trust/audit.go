package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// The audit log, audit.log, is JSON lines, one record per decision,
// appended and fsynced before the decision is written to state.json:
//
//	{"n":1,"prev":"000…000","time":…,"event":"admit","decision":"quarantined",…}
//	{"n":2,"prev":"<hex SHA-256 of line 1>",…}
//
// Each record carries its number and the SHA-256 of the previous line's
// bytes (without the newline), the first one 64 zeros. state.json names
// the last record it holds (count and hash), which pins the log's end too.
//
// A crash can leave the log ahead of the state (records whose decisions
// were never written) or end in a torn line (never committed). Open
// drops a torn line and appends a "recover" record naming the records
// that were not applied; it never rewrites a complete line.

// genesis is the prev of the first record.
var genesis = hex.EncodeToString(make([]byte, sha256.Size))

// Audit events.
const (
	eventAdmit         = "admit"
	eventPromote       = "promote"
	eventDisable       = "disable"
	eventEnable        = "enable"
	eventRemove        = "remove"
	eventRevokeKey     = "revoke_key"
	eventRevokeRelease = "revoke_release"
	eventRecover       = "recover"
	eventQuarantine    = "quarantine"
	eventRotate        = "rotate"
)

// Audit decisions.
const (
	decisionQuarantined = "quarantined"
	decisionActive      = "active"
	decisionRefused     = "refused"
	decisionDone        = "done"
	decisionKnown       = "known" // an admitted release admitted again
)

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	N         uint64    `json:"n"`
	Prev      string    `json:"prev"`
	Time      time.Time `json:"time"`
	Event     string    `json:"event"`
	Decision  string    `json:"decision"`
	ID        string    `json:"id,omitempty"`
	Version   string    `json:"version,omitempty"`
	Sequence  uint64    `json:"sequence,omitempty"`
	Digest    string    `json:"digest,omitempty"`
	Publisher string    `json:"publisher,omitempty"`
	Reasons   []Reason  `json:"reasons,omitempty"`
	Details   []string  `json:"details,omitempty"`
}

func lineHash(line []byte) string {
	h := sha256.Sum256(line)
	return hex.EncodeToString(h[:])
}

// auditLog is a parsed log: its complete lines' records and hashes, and
// how many bytes they take (anything after is a torn line).
type auditLog struct {
	records   []AuditRecord
	hashes    []string
	committed int
}

func (l *auditLog) head() string {
	if len(l.hashes) == 0 {
		return genesis
	}
	return l.hashes[len(l.hashes)-1]
}

// parseAudit parses and verifies the chain of the complete lines of data.
func parseAudit(data []byte) (*auditLog, error) {
	l := &auditLog{committed: bytes.LastIndexByte(data, '\n') + 1}
	rest := data[:l.committed]
	prev := genesis
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		line := rest[:i]
		rest = rest[i+1:]
		n := uint64(len(l.records) + 1)
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		var r AuditRecord
		if err := dec.Decode(&r); err != nil || dec.More() {
			return nil, refuse(ReasonAuditChain, "audit.log", "record %d does not parse", n)
		}
		if r.N != n {
			return nil, refuse(ReasonAuditChain, "audit.log", "record %d is numbered %d", n, r.N)
		}
		if r.Prev != prev {
			return nil, refuse(ReasonAuditChain, "audit.log", "record %d does not chain to record %d", n, n-1)
		}
		prev = lineHash(line)
		l.records = append(l.records, r)
		l.hashes = append(l.hashes, prev)
	}
	return l, nil
}

// marshalRecord encodes r as one line without its newline.
func marshalRecord(r *AuditRecord) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("trust: audit record: %v", err))
	}
	return b
}
