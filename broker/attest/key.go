package attest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyFileName is the attestation key's file in the broker's state directory.
const KeyFileName = "attestation.key"

// pemType labels the key file. The label is the key's purpose: the loader
// refuses a PEM block of any other type, so no other key of the project
// (publisher keys, a broker signing key) can be loaded as this one, and this
// one cannot be mistaken for another.
const pemType = "STOCKADE ATTESTATION KEY"

// keyIDLen is the length of a key id in hex digits (128 bits).
const keyIDLen = 32

// maxKeyFile bounds what is read from a key file.
const maxKeyFile = 4 << 10

// Key is the broker's attestation key: an Ed25519 key used to sign
// attestation records and nothing else.
type Key struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	id   string
}

// NewKey makes a Key from a 32-byte Ed25519 seed.
func NewKey(seed []byte) (*Key, error) {
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("attest: key seed is %d bytes, want %d", len(seed), ed25519.SeedSize)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	return &Key{priv: priv, pub: pub, id: KeyIDOf(pub)}, nil
}

// GenerateKey makes a new random Key (crypto/rand).
func GenerateKey() (*Key, error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := io.ReadFull(rand.Reader, seed); err != nil {
		return nil, fmt.Errorf("attest: generating a key: %w", err)
	}
	return NewKey(seed)
}

// Public returns the public key.
func (k *Key) Public() ed25519.PublicKey { return bytes.Clone(k.pub) }

// ID returns the key id ([KeyIDOf] of the public key).
func (k *Key) ID() string { return k.id }

func (k *Key) sign(encoded []byte) []byte {
	return ed25519.Sign(k.priv, signedMessage(encoded))
}

// KeyIDOf is a public key's id: the first 16 bytes of SHA-256 over
// [KeyContext] and the 32-byte key, as 32 lowercase hex digits. It names the
// key in records and messages; verification always uses the whole key.
func KeyIDOf(pub ed25519.PublicKey) string {
	h := sha256.New()
	h.Write([]byte(KeyContext))
	h.Write(pub)
	return hex.EncodeToString(h.Sum(nil)[:keyIDLen/2])
}

func validKeyID(s string) bool {
	if len(s) != keyIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// FormatPublicKey writes a public key as 64 lowercase hex digits, the form
// `stockade attest verify --pubkey` takes.
func FormatPublicKey(pub ed25519.PublicKey) string { return hex.EncodeToString(pub) }

// ParsePublicKey reads a public key written as 64 hex digits or as standard
// base64 (44 characters with padding), surrounding space ignored.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	var b []byte
	var err error
	switch len(s) {
	case 2 * ed25519.PublicKeySize:
		b, err = hex.DecodeString(s)
	case base64.StdEncoding.EncodedLen(ed25519.PublicKeySize):
		b, err = base64.StdEncoding.Strict().DecodeString(s)
	default:
		return nil, fmt.Errorf("attest: a public key is 64 hex digits or 44 base64 characters, not %d characters", len(s))
	}
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("attest: malformed public key")
	}
	return ed25519.PublicKey(b), nil
}

// LoadOrCreateKey loads the attestation key from dir/attestation.key, or, if
// there is none, generates one and writes it there (mode 0600, atomically:
// a temporary file is written and synced, then linked into place, which
// fails rather than replaces if another process got there first; then the
// directory is synced). created reports whether the key is new.
//
// The file must be a regular file (not a symlink), owned by the effective
// uid, and readable by nobody else; anything else is an error, never
// repaired.
func LoadOrCreateKey(dir string) (key *Key, created bool, err error) {
	path := filepath.Join(dir, KeyFileName)
	key, err = loadKey(path, true)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	key, err = GenerateKey()
	if err != nil {
		return nil, false, err
	}
	if err := writeKey(dir, path, key); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another process wrote one between our look and our link.
			key, err = loadKey(path, true)
			return key, false, err
		}
		return nil, false, err
	}
	return key, true, nil
}

// LoadKey reads an attestation key file. It checks the file's type and
// mode (a regular file readable by its owner only) but not its owner, so
// an administrator can read the broker's key to print its public half.
func LoadKey(path string) (*Key, error) { return loadKey(path, false) }

func loadKey(path string, checkOwner bool) (*Key, error) {
	f, err := openNoFollow(path)
	if err != nil {
		return nil, fmt.Errorf("attest: key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("attest: key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("attest: key file %s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("attest: key file %s has mode %04o; it must be readable by its owner only", path, perm)
	}
	if checkOwner {
		if err := ownedBySelf(fi); err != nil {
			return nil, fmt.Errorf("attest: key file %s: %w", path, err)
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("attest: key file: %w", err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("attest: key file %s is over %d bytes", path, maxKeyFile)
	}
	block, rest := pem.Decode(b)
	if block == nil || block.Type != pemType || len(block.Headers) != 0 || len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("attest: %s is not a single %q PEM block", path, pemType)
	}
	return NewKey(block.Bytes)
}

func writeKey(dir, path string, key *Key) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("attest: key directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".attestation.key.*")
	if err != nil {
		return fmt.Errorf("attest: writing the key: %w", err)
	}
	defer os.Remove(tmp.Name())
	seed := key.priv.Seed()
	data := pem.EncodeToMemory(&pem.Block{Type: pemType, Bytes: seed})
	clear(seed)
	// CreateTemp makes the file 0600 already; Chmod states it and undoes a
	// umask that would be odd enough to matter.
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	clear(data)
	if err != nil {
		return fmt.Errorf("attest: writing the key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("attest: installing the key: %w", err)
	}
	return syncDir(dir)
}
