package trust

import (
	"os"
	"strings"
	"testing"
)

// TestDocs keeps docs/SKILLS.md's "Trust store" section true to the code:
// every Reason is named in it.
func TestDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/SKILLS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Trust store\n")
	if !ok {
		t.Fatal(`docs/SKILLS.md has no "Trust store" section`)
	}
	for _, r := range []Reason{
		ReasonNewPublisher, ReasonNewSkill, ReasonKeyMismatch, ReasonNewCapabilities,
		ReasonAuditFailed, ReasonUpdate, ReasonRollback, ReasonEquivocation,
		ReasonWrongDigest, ReasonKeyRevoked, ReasonRevoked, ReasonDisabled,
		ReasonNotActive, ReasonNotFound, ReasonBadState, ReasonInvalid,
		ReasonStoreUnsafe, ReasonStoreCorrupt, ReasonStoreLocked, ReasonStoreBroken,
		ReasonAuditChain,
	} {
		if !strings.Contains(section, "`"+string(r)+"`") {
			t.Errorf("reason %s is not in docs/SKILLS.md's trust store section", r)
		}
	}
}
