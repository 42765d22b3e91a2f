package main

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// A publisher key file holds one Ed25519 private key (its 32-byte seed),
// encrypted at rest unless the publisher asked otherwise. The format is
// ASCII text, six lines, each ending in "\n", in this order and no other:
//
//	stockade-publisher-key/v1
//	fingerprint ed25519:SHA256:<unpadded base64url of SHA-256(public key)>
//	public-key <standard base64 of the 32-byte public key>
//	kdf pbkdf2-sha256 iterations=<decimal> salt=<standard base64, 16 bytes>
//	cipher aes-256-gcm nonce=<standard base64, 12 bytes>
//	secret <standard base64 of the sealed seed: 32 bytes + 16-byte tag>
//
// or, written with --unencrypted:
//
//	kdf none
//	cipher none
//	secret <standard base64 of the 32-byte seed>
//
// The AES-256 key is PBKDF2-HMAC-SHA256(passphrase, salt, iterations, 32).
// The additional data of the AEAD is every byte of the file before the
// "secret " line, so the version, the public key, the fingerprint and the
// KDF parameters cannot be changed without the passphrase noticing. After
// opening, the seed's public key must equal the public-key line (and the
// fingerprint line): a file whose lines were mixed from two keys is refused
// even when unencrypted.
//
// Why PBKDF2: the passphrase is a password, so it needs a KDF with a work
// factor. HKDF has none: it is for stretching keys that already have full
// entropy, and one HKDF call per guess would let an attacker test billions
// of passphrases a second. scrypt and Argon2id are memory-hard and better
// against GPUs, but live in golang.org/x/crypto, which the project does not
// depend on; crypto/pbkdf2 is in the standard library (Go 1.24+) and
// FIPS 140-3 approved. The iteration count is OWASP's 2023 figure for
// PBKDF2-HMAC-SHA256 (600,000); a reader accepts 100,000 to 10,000,000, so a
// file cannot make it spin for minutes nor claim to be protected by a
// trivial count. The versioned first line leaves room for Argon2id later.
//
// Files are created 0600 with O_EXCL (never overwritten) and refused when
// group or others may read or write them, as ssh does with private keys.

const (
	keyFileMagic      = "stockade-publisher-key/v1"
	keyFileMaxBytes   = 4 << 10
	kdfName           = "pbkdf2-sha256"
	cipherName        = "aes-256-gcm"
	kdfIterations     = 600_000
	kdfMinIterations  = 100_000
	kdfMaxIterations  = 10_000_000
	kdfSaltBytes      = 16
	maxPassphraseSize = 1024
)

// Errors of key files; errors.Is tells them apart.
var (
	errWrongPassphrase = errors.New("wrong passphrase (or the key file's encrypted part was changed)")
	errKeyFileFormat   = errors.New("not a valid stockade publisher key file")
	errKeyFileMode     = errors.New("key file is accessible by group or others")
	errNoPassphrase    = errors.New("empty passphrase")
)

// keyFile is a parsed key file. Seal and open go through marshalKeyFile
// and openKeyFile; this type is what a reader learns before decrypting.
type keyFile struct {
	Fingerprint skill.Fingerprint
	PublicKey   ed25519.PublicKey
	Encrypted   bool
	Iterations  int    // encrypted only
	Salt        []byte // encrypted only
	Nonce       []byte // encrypted only
	Secret      []byte // the seed, or the sealed seed
	header      []byte // every byte before the secret line: the AEAD's additional data
}

// marshalKeyFile returns the key file of key, sealed under passphrase, or
// in the clear when passphrase is nil. rnd is the source of the salt and
// the nonce (nil: crypto/rand).
func marshalKeyFile(key ed25519.PrivateKey, passphrase []byte, rnd io.Reader) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("private key must be %d bytes", ed25519.PrivateKeySize)
	}
	pub := key.Public().(ed25519.PublicKey)
	b64 := base64.StdEncoding.EncodeToString
	var h strings.Builder
	h.WriteString(keyFileMagic + "\n")
	h.WriteString("fingerprint " + string(skill.FingerprintOf(pub)) + "\n")
	h.WriteString("public-key " + b64(pub) + "\n")
	seed := key.Seed()
	if passphrase == nil {
		h.WriteString("kdf none\ncipher none\n")
		return []byte(h.String() + "secret " + b64(seed) + "\n"), nil
	}
	if len(passphrase) == 0 {
		return nil, errNoPassphrase
	}
	rnd = randOr(rnd)
	salt := make([]byte, kdfSaltBytes)
	nonce := make([]byte, 12)
	if _, err := io.ReadFull(rnd, salt); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(rnd, nonce); err != nil {
		return nil, err
	}
	fmt.Fprintf(&h, "kdf %s iterations=%d salt=%s\n", kdfName, kdfIterations, b64(salt))
	fmt.Fprintf(&h, "cipher %s nonce=%s\n", cipherName, b64(nonce))
	aead, err := keyFileAEAD(passphrase, salt, kdfIterations)
	if err != nil {
		return nil, err
	}
	sealed := aead.Seal(nil, nonce, seed, []byte(h.String()))
	return []byte(h.String() + "secret " + b64(sealed) + "\n"), nil
}

// keyFileAEAD derives the file's AES-256-GCM key from the passphrase.
func keyFileAEAD(passphrase, salt []byte, iterations int) (cipher.AEAD, error) {
	k, err := pbkdf2.Key(sha256.New, string(passphrase), salt, iterations, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// parseKeyFile reads the six lines strictly: exact keywords, exact order,
// canonical base64, parameters in range. It decrypts nothing.
func parseKeyFile(data []byte) (*keyFile, error) {
	bad := func(format string, a ...any) (*keyFile, error) {
		return nil, fmt.Errorf("%w: %s", errKeyFileFormat, fmt.Sprintf(format, a...))
	}
	if len(data) > keyFileMaxBytes {
		return bad("longer than %d bytes", keyFileMaxBytes)
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		return bad("does not end with a newline")
	}
	lines := strings.Split(string(data[:len(data)-1]), "\n")
	if len(lines) != 6 {
		return bad("%d lines; want 6", len(lines))
	}
	for _, l := range lines {
		for i := 0; i < len(l); i++ {
			if l[i] < ' ' || l[i] > '~' {
				return bad("a byte outside printable ASCII")
			}
		}
	}
	if lines[0] != keyFileMagic {
		return bad("first line is not %q", keyFileMagic)
	}
	field := func(i int, name string) (string, bool) { return strings.CutPrefix(lines[i], name+" ") }
	fp, ok := field(1, "fingerprint")
	if !ok {
		return bad("line 2 is not the fingerprint")
	}
	pubB64, ok := field(2, "public-key")
	if !ok {
		return bad("line 3 is not the public key")
	}
	pub, err := strictBase64(pubB64, ed25519.PublicKeySize)
	if err != nil {
		return bad("public key: %v", err)
	}
	f := &keyFile{Fingerprint: skill.Fingerprint(fp), PublicKey: pub}
	if skill.FingerprintOf(pub) != f.Fingerprint {
		return bad("the fingerprint is not the public key's")
	}
	secret, ok := field(5, "secret")
	if !ok {
		return bad("line 6 is not the secret")
	}
	f.header = []byte(strings.Join(lines[:5], "\n") + "\n")
	switch {
	case lines[3] == "kdf none" && lines[4] == "cipher none":
		if f.Secret, err = strictBase64(secret, ed25519.SeedSize); err != nil {
			return bad("secret: %v", err)
		}
		return f, nil
	case lines[3] == "kdf none" || lines[4] == "cipher none":
		return bad("kdf and cipher must both be none or both be set")
	}
	kdf, ok := field(3, "kdf "+kdfName)
	if !ok {
		return bad("line 4 is not \"kdf %s ...\" or \"kdf none\"", kdfName)
	}
	iterStr, saltStr, ok := strings.Cut(kdf, " ")
	iterStr, ok1 := strings.CutPrefix(iterStr, "iterations=")
	saltStr, ok2 := strings.CutPrefix(saltStr, "salt=")
	if !ok || !ok1 || !ok2 {
		return bad("kdf parameters are not \"iterations=N salt=B64\"")
	}
	iter, err := strconv.Atoi(iterStr)
	if err != nil || strconv.Itoa(iter) != iterStr || iter < kdfMinIterations || iter > kdfMaxIterations {
		return bad("iterations must be a decimal from %d to %d", kdfMinIterations, kdfMaxIterations)
	}
	if f.Salt, err = strictBase64(saltStr, kdfSaltBytes); err != nil {
		return bad("salt: %v", err)
	}
	nonceStr, ok := field(4, "cipher "+cipherName)
	nonceStr, ok1 = strings.CutPrefix(nonceStr, "nonce=")
	if !ok || !ok1 {
		return bad("line 5 is not \"cipher %s nonce=B64\" or \"cipher none\"", cipherName)
	}
	if f.Nonce, err = strictBase64(nonceStr, 12); err != nil {
		return bad("nonce: %v", err)
	}
	if f.Secret, err = strictBase64(secret, ed25519.SeedSize+16); err != nil {
		return bad("secret: %v", err)
	}
	f.Encrypted, f.Iterations = true, iter
	return f, nil
}

// open returns the private key, decrypting with passphrase when the file is
// encrypted (passphrase is then required), and checks that it is the key
// the file names.
func (f *keyFile) open(passphrase []byte) (ed25519.PrivateKey, error) {
	seed := f.Secret
	if f.Encrypted {
		if len(passphrase) == 0 {
			return nil, errNoPassphrase
		}
		aead, err := keyFileAEAD(passphrase, f.Salt, f.Iterations)
		if err != nil {
			return nil, err
		}
		if seed, err = aead.Open(nil, f.Nonce, f.Secret, f.header); err != nil {
			return nil, errWrongPassphrase
		}
	}
	key := ed25519.NewKeyFromSeed(seed)
	if !key.Public().(ed25519.PublicKey).Equal(f.PublicKey) {
		return nil, fmt.Errorf("%w: the secret is not the key the file names", errKeyFileFormat)
	}
	return key, nil
}

// strictBase64 decodes standard padded base64 in its one canonical
// spelling, of exactly n bytes.
func strictBase64(s string, n int) ([]byte, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, errors.New("not standard base64")
	}
	if base64.StdEncoding.EncodeToString(b) != s {
		return nil, errors.New("base64 not in canonical form")
	}
	if len(b) != n {
		return nil, fmt.Errorf("%d bytes; want %d", len(b), n)
	}
	return b, nil
}

// writeKeyFile creates path with O_EXCL, mode 0600, and writes data,
// fsynced. It never replaces an existing file; on failure it removes what
// it created.
func writeKeyFile(path string, data []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s: refusing to overwrite an existing file: %w", path, os.ErrExist)
		}
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

// readKeyFile reads and parses path, refusing a file that group or others
// may read or write.
func readKeyFile(path string) (*keyFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", errKeyFileFormat, path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o; run chmod 600 on it", errKeyFileMode, path, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, keyFileMaxBytes+1))
	if err != nil {
		return nil, err
	}
	return parseKeyFile(data)
}

// loadKey reads the key file at path and opens it, asking pass for the
// passphrase only when the file is encrypted.
func loadKey(path string, pass func() ([]byte, error)) (ed25519.PrivateKey, error) {
	kf, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	var p []byte
	if kf.Encrypted {
		if p, err = pass(); err != nil {
			return nil, err
		}
	}
	key, err := kf.open(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}

// newKey returns a new Ed25519 key from rnd (nil: crypto/rand).
func newKey(rnd io.Reader) (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(randOr(rnd))
	return key, err
}

// randOr returns rnd, or crypto/rand's reader when rnd is nil.
func randOr(rnd io.Reader) io.Reader {
	if rnd == nil {
		return rand.Reader
	}
	return rnd
}
