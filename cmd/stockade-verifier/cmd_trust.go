package main

import (
	"flag"
	"fmt"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// Passphrases for trust rotate's two keys, when they differ; each falls
// back to STOCKADE_KEY_PASSPHRASE, then to the terminal.
const (
	oldPassphraseEnv = "STOCKADE_OLD_KEY_PASSPHRASE"
	newPassphraseEnv = "STOCKADE_NEW_KEY_PASSPHRASE"
)

// idList is a repeatable --skill flag.
type idList []skill.ID

func (l *idList) String() string { return fmt.Sprint(*l) }
func (l *idList) Set(s string) error {
	id, err := skill.ParseID(s)
	if err != nil {
		return fmt.Errorf("%q is not a skill id", s)
	}
	*l = append(*l, id)
	return nil
}

var _ flag.Value = (*idList)(nil)

// rotationData is trust rotate's JSON data.
type rotationData struct {
	File string `json:"file"`
	Old  string `json:"old"`
	New  string `json:"new"`
	// All is set when the rotation moves every skill the old key owns.
	All    bool     `json:"all"`
	Skills []string `json:"skills"`
}

// cmdTrustRotate writes a key rotation statement signed by the old and the
// new key (skill.SignRotation), for `trust import-rotation` on each
// verifier. Without --skill it moves every skill id the old key owns.
func cmdTrustRotate(c *cli, args []string) (*report, error) {
	fs := c.flags(false)
	oldPath := fs.String("old", "", "the key that owns the skills now")
	newPath := fs.String("new", "", "the key to move them to")
	out := fs.String("out", "", "file to write the signed rotation to")
	var ids idList
	fs.Var(&ids, "skill", "a skill id to move (repeatable; default: every id the old key owns)")
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return nil, err
	}
	if *oldPath == "" || *newPath == "" || *out == "" {
		return nil, usagef("trust rotate: --old, --new and --out are required")
	}
	oldKey, err := loadKey(*oldPath, func() ([]byte, error) { return c.keyPassphrase(oldPassphraseEnv, *oldPath) })
	if err != nil {
		return nil, err
	}
	newKey, err := loadKey(*newPath, func() ([]byte, error) { return c.keyPassphrase(newPassphraseEnv, *newPath) })
	if err != nil {
		return nil, err
	}
	if oldKey.Equal(newKey) {
		return nil, usagef("trust rotate: --old and --new are the same key")
	}
	envelope, err := skill.SignRotation(oldKey, newKey, ids)
	if err != nil {
		return nil, err
	}
	rot, err := skill.OpenRotation(envelope)
	if err != nil {
		return nil, fmt.Errorf("the signed rotation does not verify: %w", err)
	}
	if err := writeAtomic(*out, envelope); err != nil {
		return nil, err
	}
	d := rotationData{File: *out, Old: string(rot.Old), New: string(rot.New), All: rot.All, Skills: []string{}}
	for _, id := range rot.Skills {
		d.Skills = append(d.Skills, string(id))
	}
	return &report{data: d, human: func(p *printer) {
		p.field("rotation", d.File)
		p.field("old key", d.Old)
		p.field("new key", d.New)
		if d.All {
			p.field("skills", "all the old key owns")
		} else {
			p.field("skills", list(d.Skills))
		}
		p.line("import it on each verifier: stockade-verifier trust import-rotation %s", d.File)
	}}, nil
}

// keyPassphrase is the passphrase of one of several keys: $env if set,
// else the usual sources.
func (c *cli) keyPassphrase(env, path string) ([]byte, error) {
	if v, ok := c.lookupEnv(env); ok && v != "" {
		return []byte(v), nil
	}
	return c.passphrase("Passphrase for "+path+": ", false)
}
