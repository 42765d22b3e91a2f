package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// skillData describes a verified archive: package verify's data, and part
// of audit's and package build's. Everything but publisher (the signing
// key's fingerprint) and digest is what the publisher wrote.
type skillData struct {
	ID       string `json:"id"`
	Version  string `json:"version"`
	Sequence uint64 `json:"sequence"`
	// Publisher is the fingerprint of the key that signed the statement.
	Publisher string `json:"publisher"`
	// PublisherName is skill.toml's display name: a claim, not an identity.
	PublisherName string `json:"publisher_name"`
	Name          string `json:"name"`
	// Digest is the statement's SHA-256, what promote --digest names.
	Digest       string     `json:"digest"`
	Archive      fileData   `json:"archive"`
	Files        []fileData `json:"files"`
	Tools        []toolData `json:"tools"`
	Capabilities capsData   `json:"capabilities"`
	// TrustChecked is always false here: package verify and audit check
	// the signature, not whether the key is trusted for the id.
	TrustChecked bool `json:"trust_checked"`
}

type fileData struct {
	Path   string `json:"path,omitempty"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // "sha256:<hex>"
}

type toolData struct {
	Name   string `json:"name"`
	Module string `json:"module"`
	Export string `json:"export"`
}

type capsData struct {
	HTTP     []string `json:"http"`
	Secrets  []string `json:"secrets"`
	Storage  bool     `json:"storage"`
	Channels []string `json:"channels"`
}

func newSkillData(sk *skill.Skill) skillData {
	m, st := sk.Manifest, sk.Statement
	d := skillData{
		ID: string(st.ID), Version: st.Version.String(), Sequence: st.Sequence,
		Publisher: string(sk.Publisher), PublisherName: m.Publisher, Name: m.Name,
		Digest:  sk.StatementDigest.String(),
		Archive: fileData{Size: st.Archive.Size, SHA256: st.Archive.SHA256.String()},
		Files:   []fileData{},
		Tools:   []toolData{},
		Capabilities: capsData{
			HTTP: nonNil(m.Capabilities.HTTP), Secrets: nonNil(m.Capabilities.Secrets),
			Storage: m.Capabilities.Storage, Channels: nonNil(m.Capabilities.Channels),
		},
	}
	for _, f := range st.Files {
		d.Files = append(d.Files, fileData{Path: f.Path, Size: f.Size, SHA256: f.SHA256.String()})
	}
	for _, t := range m.Tools {
		d.Tools = append(d.Tools, toolData{Name: t.Name, Module: t.Module, Export: t.Export})
	}
	return d
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// print writes the skill's description, every value cleaned.
func (d *skillData) print(p *printer) {
	p.field("skill", d.ID+" "+d.Version)
	p.field("name", d.Name)
	p.field("sequence", strconv.FormatUint(d.Sequence, 10))
	p.field("publisher", d.Publisher)
	p.field("claims to be", d.PublisherName)
	p.field("digest", d.Digest)
	p.field("archive", d.Archive.SHA256+" ("+strconv.FormatInt(d.Archive.Size, 10)+" bytes)")
	p.line("files:")
	for _, f := range d.Files {
		p.row("  "+f.Path, strconv.FormatInt(f.Size, 10), f.SHA256)
	}
	p.line("tools:")
	for _, t := range d.Tools {
		p.row("  "+t.Name, t.Module, t.Export)
	}
	p.line("capabilities:")
	p.row("  http", list(d.Capabilities.HTTP))
	p.row("  secrets", list(d.Capabilities.Secrets))
	p.row("  storage", strconv.FormatBool(d.Capabilities.Storage))
	p.row("  channels", list(d.Capabilities.Channels))
	p.flush()
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}

// buildData is package build's JSON data.
type buildData struct {
	Archive   string    `json:"archive"`   // the file written
	Signature string    `json:"signature"` // the file written
	Skill     skillData `json:"skill"`
}

// cmdPackageBuild packs and signs a skill source directory.
func cmdPackageBuild(c *cli, args []string) (*report, error) {
	fs := c.flags(false)
	keyPath := fs.String("key", "", "publisher key file (keygen)")
	outDir := fs.String("out", ".", "directory to write the archive and its .sig into")
	ops, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return nil, err
	}
	if *keyPath == "" {
		return nil, usagef("package build: --key is required")
	}
	key, err := loadKey(*keyPath, func() ([]byte, error) { return c.passphrase("Passphrase for "+*keyPath+": ", false) })
	if err != nil {
		return nil, err
	}
	archive, envelope, err := skill.Build(ops[0], key)
	if err != nil {
		return nil, err
	}
	self := skill.FingerprintOf(key.Public().(ed25519.PublicKey))
	sk, err := skill.Open(archive, envelope, func(fp skill.Fingerprint) error {
		if fp != self {
			return errors.New("not the build key")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The id and version passed ParseID and ParseVersion: names of the
	// alphabet [a-z0-9.-] and semver, never a path separator.
	name := string(sk.Statement.ID) + "-" + sk.Statement.Version.String() + ".skill"
	d := buildData{Archive: filepath.Join(*outDir, name), Signature: filepath.Join(*outDir, name+".sig"), Skill: newSkillData(sk)}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		return nil, err
	}
	if err := writeAtomic(d.Archive, archive); err != nil {
		return nil, err
	}
	if err := writeAtomic(d.Signature, envelope); err != nil {
		return nil, err
	}
	return &report{data: d, human: func(p *printer) {
		p.field("archive", d.Archive)
		p.field("signature", d.Signature)
		p.field("skill", d.Skill.ID+" "+d.Skill.Version+" (sequence "+strconv.FormatUint(d.Skill.Sequence, 10)+")")
		p.field("publisher", d.Skill.Publisher)
		p.field("digest", d.Skill.Digest)
	}}, nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory, fsynced and renamed, mode 0644: a reader sees the old file or
// the new one, never half of one.
func writeAtomic(path string, data []byte) (err error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readLimited reads at most limit+1 bytes of path, a regular file: enough
// for skill.Open to refuse an oversized file with its own reason, never a
// whole huge one.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// openArchive reads an archive and its signature (default: the archive's
// path and ".sig") and verifies them, accepting any key: there is no trust
// store offline.
func openArchive(path, sig string) (*skill.Skill, error) {
	if sig == "" {
		sig = path + ".sig"
	}
	lim := skill.DefaultLimits()
	archive, err := readLimited(path, lim.ArchiveBytes)
	if err != nil {
		return nil, err
	}
	envelope, err := readLimited(sig, lim.EnvelopeBytes)
	if err != nil {
		return nil, err
	}
	return skill.Open(archive, envelope, func(skill.Fingerprint) error { return nil })
}

// cmdPackageVerify checks an archive against its signature and prints what
// it holds. It says nothing about trust: any valid key passes.
func cmdPackageVerify(c *cli, args []string) (*report, error) {
	fs := c.flags(false)
	sig := fs.String("sig", "", "detached signature (default: X.skill.sig)")
	ops, err := c.parse(fs, args, 1, 1)
	if err != nil {
		return nil, err
	}
	sk, err := openArchive(ops[0], *sig)
	if err != nil {
		return nil, err
	}
	d := newSkillData(sk)
	return &report{data: d, human: func(p *printer) {
		p.line("signature valid; archive matches it (the key's trust is not checked offline)")
		d.print(p)
	}}, nil
}
