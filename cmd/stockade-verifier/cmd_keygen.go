package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"strconv"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// keyData is keygen's JSON data.
type keyData struct {
	KeyFile     string `json:"key_file"`
	Encrypted   bool   `json:"encrypted"`
	Fingerprint string `json:"fingerprint"`
	PublicKey   string `json:"public_key"` // standard base64, 32 bytes
}

// cmdKeygen makes a publisher key file: encrypted under a passphrase
// ($STOCKADE_KEY_PASSPHRASE, or asked twice on the terminal), or in the
// clear with --unencrypted. It never overwrites a file.
func cmdKeygen(c *cli, args []string) (*report, error) {
	fs := c.flags(false)
	out := fs.String("out", "publisher.key", "key file to create (never overwritten)")
	plain := fs.Bool("unencrypted", false, "store the key unencrypted (for CI secrets stores that encrypt it themselves)")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return nil, err
	}
	var pass []byte
	if !*plain {
		var err error
		if pass, err = c.passphrase("Passphrase for the new key: ", true); err != nil {
			return nil, err
		}
	}
	key, err := newKey(c.rand)
	if err != nil {
		return nil, err
	}
	data, err := marshalKeyFile(key, pass, randOr(c.rand))
	if err != nil {
		return nil, err
	}
	if err := writeKeyFile(*out, data); err != nil {
		return nil, err
	}
	pub := key.Public().(ed25519.PublicKey)
	d := keyData{KeyFile: *out, Encrypted: !*plain, Fingerprint: string(skill.FingerprintOf(pub)), PublicKey: base64.StdEncoding.EncodeToString(pub)}
	return &report{data: d, human: func(p *printer) {
		p.field("key file", d.KeyFile)
		if d.Encrypted {
			p.field("encrypted", "yes (AES-256-GCM, key from PBKDF2-HMAC-SHA256, "+strconv.Itoa(kdfIterations)+" iterations)")
		} else {
			p.field("encrypted", "no")
		}
		p.field("fingerprint", d.Fingerprint)
	}}, nil
}
