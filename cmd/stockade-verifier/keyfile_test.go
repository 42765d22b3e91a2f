package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testKey returns a real Ed25519 key derived from label, the same in every
// run.
func testKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("stockade-verifier CLI test key: " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

// zeros is a deterministic "random" source for salts and nonces.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestKeyFileRoundTrip(t *testing.T) {
	t.Parallel()
	key := testKey("round trip")
	for _, tc := range []struct {
		name string
		pass []byte
	}{{"encrypted", []byte("correct horse battery staple")}, {"unencrypted", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "k")
			data, err := marshalKeyFile(key, tc.pass, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := writeKeyFile(path, data); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("mode %04o; want 0600", fi.Mode().Perm())
			}
			kf, err := readKeyFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if kf.Encrypted != (tc.pass != nil) {
				t.Errorf("Encrypted = %v", kf.Encrypted)
			}
			if tc.pass != nil && bytes.Contains(data, []byte(base64.StdEncoding.EncodeToString(key.Seed()))) {
				t.Error("the encrypted file holds the seed in the clear")
			}
			got, err := kf.open(tc.pass)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(key) {
				t.Error("opened another key")
			}
		})
	}
}

func TestKeyFileWrongPassphrase(t *testing.T) {
	t.Parallel()
	data, err := marshalKeyFile(testKey("wrong"), []byte("right"), zeros{})
	if err != nil {
		t.Fatal(err)
	}
	kf, err := parseKeyFile(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{[]byte("wrong"), []byte("right "), []byte("Right")} {
		if _, err := kf.open(p); !errors.Is(err, errWrongPassphrase) {
			t.Errorf("open(%q) = %v; want errWrongPassphrase", p, err)
		}
	}
	if _, err := kf.open(nil); !errors.Is(err, errNoPassphrase) {
		t.Errorf("open(nil) = %v; want errNoPassphrase", err)
	}
	if _, err := kf.open([]byte("right")); err != nil {
		t.Errorf("open(right) = %v", err)
	}
}

// TestKeyFileTampered: every line of an encrypted file is bound: changing
// the header (public key, fingerprint, parameters) or the secret makes it
// refuse to open, as a format error or as a wrong passphrase (the AEAD
// cannot tell the two apart), never as another key.
func TestKeyFileTampered(t *testing.T) {
	t.Parallel()
	pass := []byte("pass")
	good, err := marshalKeyFile(testKey("tamper"), pass, zeros{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := marshalKeyFile(testKey("other"), pass, zeros{})
	if err != nil {
		t.Fatal(err)
	}
	lines := func(b []byte) []string { return strings.SplitAfter(string(b), "\n") }
	g, o := lines(good), lines(other)
	mix := func(from []string, i int) []byte {
		l := append([]string(nil), g...)
		l[i] = from[i]
		return []byte(strings.Join(l, ""))
	}
	cases := map[string][]byte{
		"other key's fingerprint and public key": []byte(g[0] + o[1] + o[2] + g[3] + g[4] + g[5]),
		"other key's secret":                     mix(o, 5),
		"fewer iterations":                       []byte(strings.Replace(string(good), "iterations=600000", "iterations=100000", 1)),
		"more iterations than allowed":           []byte(strings.Replace(string(good), "iterations=600000", "iterations=10000001", 1)),
		"leading zero in iterations":             []byte(strings.Replace(string(good), "iterations=600000", "iterations=0600000", 1)),
		"kdf none, cipher set":                   []byte(strings.Replace(string(good), g[3], "kdf none\n", 1)),
		"version 2":                              []byte(strings.Replace(string(good), "key/v1", "key/v2", 1)),
		"CRLF":                                   bytes.ReplaceAll(good, []byte("\n"), []byte("\r\n")),
		"no final newline":                       bytes.TrimSuffix(good, []byte("\n")),
		"extra line":                             append(bytes.Clone(good), "comment x\n"...),
		"empty":                                  nil,
		"flipped secret bit":                     flipAfter(good, "secret "),
		"flipped salt bit":                       flipAfter(good, "salt="),
		"flipped nonce bit":                      flipAfter(good, "nonce="),
	}
	for name, data := range cases {
		kf, err := parseKeyFile(data)
		if err == nil {
			_, err = kf.open(pass)
		}
		if !errors.Is(err, errKeyFileFormat) && !errors.Is(err, errWrongPassphrase) {
			t.Errorf("%s: %v; want a format error or errWrongPassphrase", name, err)
		}
	}
	// The unencrypted form: a secret from another key is caught by the
	// public key check.
	pg, _ := marshalKeyFile(testKey("tamper"), nil, nil)
	po, _ := marshalKeyFile(testKey("other"), nil, nil)
	l := lines(pg)
	l[5] = lines(po)[5]
	kf, err := parseKeyFile([]byte(strings.Join(l, "")))
	if err == nil {
		_, err = kf.open(nil)
	}
	if !errors.Is(err, errKeyFileFormat) {
		t.Errorf("unencrypted, other key's secret: %v; want a format error", err)
	}
}

// flipAfter changes the first base64 character after marker, which keeps
// the base64 valid, canonical and of the same length.
func flipAfter(data []byte, marker string) []byte {
	b := bytes.Clone(data)
	i := bytes.Index(b, []byte(marker)) + len(marker)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return b
}

func TestWriteKeyFileRefusesToOverwrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, _ := marshalKeyFile(testKey("x"), nil, nil)
	if err := writeKeyFile(path, data); !errors.Is(err, os.ErrExist) {
		t.Fatalf("writeKeyFile over a file: %v; want ErrExist", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Errorf("the existing file was changed: %q", b)
	}
	// A symbolic link to a missing file is not followed either (O_EXCL).
	target := filepath.Join(t.TempDir(), "target")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := writeKeyFile(link, data); !errors.Is(err, os.ErrExist) {
		t.Errorf("writeKeyFile through a dangling link: %v; want ErrExist", err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was created")
	}
}

func TestReadKeyFileRefusesOpenModes(t *testing.T) {
	t.Parallel()
	data, _ := marshalKeyFile(testKey("x"), nil, nil)
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o644} {
		path := filepath.Join(t.TempDir(), "k")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := readKeyFile(path); !errors.Is(err, errKeyFileMode) {
			t.Errorf("mode %04o: %v; want errKeyFileMode", mode, err)
		}
	}
}

// FuzzParseKeyFile: the key file reader never panics, and an unencrypted
// file it accepts is the one canonical encoding of its key.
func FuzzParseKeyFile(f *testing.F) {
	for _, pass := range [][]byte{nil, []byte("p")} {
		b, err := marshalKeyFile(testKey("fuzz"), pass, zeros{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("stockade-publisher-key/v1\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		kf, err := parseKeyFile(data)
		if err != nil {
			if !errors.Is(err, errKeyFileFormat) {
				t.Fatalf("error outside the class: %v", err)
			}
			return
		}
		if kf.Encrypted {
			return // opening needs PBKDF2: too slow to fuzz
		}
		key, err := kf.open(nil)
		if err != nil {
			return
		}
		again, err := marshalKeyFile(key, nil, nil)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("accepted a non-canonical file:\n%q\nwant\n%q", data, again)
		}
	})
}
