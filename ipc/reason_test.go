package ipc

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestReasonsDocumented keeps docs/PROTOCOL.md §7.1 true to the code: every
// reason is a row with its class, and every row is a reason.
func TestReasonsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### 7.1 Reasons")
	if !ok {
		t.Fatal("docs/PROTOCOL.md has no §7.1 Reasons")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		if r := strings.TrimSpace(cells[1]); strings.HasPrefix(r, "`") {
			rows[strings.Trim(r, "`")] = strings.TrimSpace(cells[2])
		}
	}
	for _, r := range Reasons() {
		class, ok := rows[string(r)]
		switch {
		case !ok:
			t.Errorf("reason %s is not in §7.1", r)
		case class != string(r.Class()):
			t.Errorf("reason %s: docs say %s, code says %s", r, class, r.Class())
		}
		delete(rows, string(r))
	}
	for r := range rows {
		t.Errorf("§7.1 lists %s, which is not a reason", r)
	}
}

func TestReasonErrors(t *testing.T) {
	e := ReasonError(ReasonRevoked, "key %s", "k")
	if e.Class != ClassDenied || !errors.Is(e, ReasonRevoked) || errors.Is(e, ReasonRollback) ||
		!errors.Is(e, ErrDenied) || !errors.Is(e, &Error{Class: ClassDenied, Reason: ReasonRevoked}) {
		t.Fatalf("%+v", e)
	}
	if (&Error{Class: ClassDenied, Reason: "made_up"}).valid() {
		t.Fatal("an unknown reason is valid")
	}
	for _, r := range Reasons() {
		if !r.Valid() || !r.Class().Valid() {
			t.Errorf("%s", r)
		}
	}
}
