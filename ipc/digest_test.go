package ipc

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSHA256(t *testing.T) {
	good := "sha256:" + strings.Repeat("0a", 32)
	if d, err := ParseSHA256(good); err != nil || d[0] != 0x0a || d[31] != 0x0a {
		t.Fatalf("%x %v", d, err)
	}
	for _, bad := range []string{"", strings.Repeat("0a", 32), "sha256:" + strings.Repeat("0A", 32),
		"sha256:" + strings.Repeat("0a", 31), "sha256:" + strings.Repeat("zz", 32), "sha512:" + strings.Repeat("0a", 32)} {
		if _, err := ParseSHA256(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
