package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/skill"
)

// TestImportRotationSizeCap: a rotation file larger than the verifier
// accepts (skill.MaxRotationBytes) is refused before any connection; one
// at the limit gets as far as dialling (and fails there: no socket).
func TestImportRotationSizeCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	socket := filepath.Join(dir, "absent.sock")
	for _, tc := range []struct {
		name    string
		size    int
		refused bool
	}{
		{"at-limit", skill.MaxRotationBytes, false},
		{"over-limit", skill.MaxRotationBytes + 1, true},
	} {
		path := filepath.Join(dir, tc.name+".sig")
		if err := os.WriteFile(path, make([]byte, tc.size), 0o644); err != nil {
			t.Fatal(err)
		}
		c, _, _ := testCLI(map[string]string{})
		c.command = "trust import-rotation"
		_, err := cmdTrustImportRotation(c, []string{"--socket", socket, path})
		var ae *admin.Error
		refused := errors.As(err, &ae) && ae.Reason == admin.ReasonMalformed
		if refused != tc.refused {
			t.Errorf("%s (%d bytes): err %v; want refused before dialling: %v", tc.name, tc.size, err, tc.refused)
		}
		var de *dialError
		if !tc.refused && !errors.As(err, &de) {
			t.Errorf("%s: err %v; want a dial error", tc.name, err)
		}
	}
}
