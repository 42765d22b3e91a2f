package attest

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestLoadOrCreateKey: the first start writes a 0600 key; later starts
// load the same one; concurrent first starts agree on one key.
func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state")
	k1, created, err := LoadOrCreateKey(dir)
	if err != nil || !created {
		t.Fatalf("%v %v", created, err)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFileName))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi.Mode(), err)
	}
	k2, created, err := LoadOrCreateKey(dir)
	if err != nil || created || !bytes.Equal(k1.Public(), k2.Public()) || k1.ID() != k2.ID() {
		t.Fatalf("reload: %v %v", created, err)
	}
	k3, err := LoadKey(filepath.Join(dir, KeyFileName))
	if err != nil || k3.ID() != k1.ID() {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}

	race := t.TempDir()
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			k, _, err := LoadOrCreateKey(race)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = k.ID()
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent starts made different keys: %v", ids)
		}
	}
}

// TestKeyFileRefused: key files that are not exactly what the broker
// writes are refused, never repaired.
func TestKeyFileRefused(t *testing.T) {
	t.Parallel()
	good := pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: bytes.Repeat([]byte{7}, 32)})
	cases := []struct {
		name  string
		data  []byte
		mode  os.FileMode
		setup func(t *testing.T, path string)
	}{
		{name: "group-readable", data: good, mode: 0o640},
		{name: "world-readable", data: good, mode: 0o604},
		{name: "other-type", data: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: bytes.Repeat([]byte{7}, 32)}), mode: 0o600},
		{name: "short-seed", data: pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: []byte{1, 2, 3}}), mode: 0o600},
		{name: "headers", data: pem.EncodeToMemory(&pem.Block{Type: pemType, Headers: map[string]string{"A": "b"}, Bytes: bytes.Repeat([]byte{7}, 32)}), mode: 0o600},
		{name: "trailing", data: append(bytes.Clone(good), "junk"...), mode: 0o600},
		{name: "two-blocks", data: append(bytes.Clone(good), good...), mode: 0o600},
		{name: "not-pem", data: []byte("hello"), mode: 0o600},
		{name: "huge", data: append(bytes.Clone(good), bytes.Repeat([]byte("\n"), maxKeyFile)...), mode: 0o600},
		{name: "symlink", setup: func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "k")
			if err := os.WriteFile(target, good, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "directory", setup: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, KeyFileName)
			if c.setup != nil {
				c.setup(t, path)
			} else {
				if err := os.WriteFile(path, c.data, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, c.mode); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := os.ReadFile(path)
			if _, _, err := LoadOrCreateKey(dir); err == nil {
				t.Fatal("accepted")
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("the file changed")
			}
		})
	}
	// The good file is accepted, for contrast.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, KeyFileName), good, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, created, err := LoadOrCreateKey(dir); err != nil || created {
		t.Fatalf("good key: %v %v", created, err)
	}
}

func TestParsePublicKey(t *testing.T) {
	t.Parallel()
	k := testKey(t, 3)
	pub := k.Public()
	for _, s := range []string{FormatPublicKey(pub), " " + FormatPublicKey(pub) + "\n", base64.StdEncoding.EncodeToString(pub)} {
		got, err := ParsePublicKey(s)
		if err != nil || !bytes.Equal(got, pub) {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", strings.Repeat("g", 64), FormatPublicKey(pub)[:62], base64.RawStdEncoding.EncodeToString(pub), strings.Repeat("=", 44)} {
		if _, err := ParsePublicKey(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	if id := KeyIDOf(pub); !validKeyID(id) || id != k.ID() {
		t.Errorf("key id %q", id)
	}
	// Wrong key lengths are refused before ed25519 sees them (it panics).
	if _, err := VerifyRecord(nil, nil, ed25519.PublicKey{1, 2}); err == nil {
		t.Error("short key accepted")
	}
	if _, err := Verify([]string{"x"}, ed25519.PublicKey{1, 2}); err == nil {
		t.Error("short key accepted")
	}
}
