package skill

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// PayloadType is the DSSE payload type of a skill statement. Other kinds of
// statement (key rotation, revocation) get types of their own, so that a
// signature over one can never be taken for another.
const PayloadType = "application/vnd.stockade.skill-statement.v1+json"

// Statement is what a publisher signs: which skill this is, who signs it,
// the whole archive's digest and size, and every file in it. The archive
// digest lets the verifier check the signature before it parses the ZIP; the
// file list pins how the ZIP must be read and lets installed files be
// re-checked at any time.
//
// The wire form is canonical JSON (see Marshal and docs/SKILLS.md):
//
//	{"skill":{"id":"acme.web","version":"1.2.0","sequence":7},
//	 "publisher":{"fingerprint":"ed25519:SHA256:..."},
//	 "archive":{"sha256":"<hex>","size":183220},
//	 "files":[{"path":"modules/web.wasm","size":98304,"sha256":"<hex>"},
//	          {"path":"skill.toml","size":812,"sha256":"<hex>"}]}
//
// (without the line breaks and indentation).
type Statement struct {
	ID        ID
	Version   Version
	Sequence  uint64
	Publisher Fingerprint
	Archive   FileDigest // Path is empty
	// Files is sorted by path (byte order), without repeats, and holds
	// skill.toml.
	Files []FileDigest
}

// FileDigest is a file's path, size and SHA-256.
type FileDigest struct {
	Path   string
	Size   int64
	SHA256 Digest
}

// MaxSequence is the largest sequence number: 2^53-1, so that every JSON
// reader holds it exactly.
const MaxSequence = 1<<53 - 1

// maxStatementBytes bounds ParseStatement for callers that did not bound
// the envelope; Open's own limit is lower.
const maxStatementBytes = 1 << 20

type statementJSON struct {
	Skill     statementSkillJSON `json:"skill"`
	Publisher publisherJSON      `json:"publisher"`
	Archive   archiveJSON        `json:"archive"`
	Files     []fileJSON         `json:"files"`
}

type statementSkillJSON struct {
	ID       string `json:"id"`
	Version  string `json:"version"`
	Sequence uint64 `json:"sequence"`
}

type publisherJSON struct {
	Fingerprint string `json:"fingerprint"`
}

type archiveJSON struct {
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

type fileJSON struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ParseStatement decodes a statement strictly (no unknown or repeated
// members, exact case, no null), requires it to be in canonical form (the
// bytes Marshal makes of it, so that the statement's digest names it
// alone), and checks every field. It applies no Limits: Open does.
func ParseStatement(data []byte) (*Statement, error) {
	if len(data) > maxStatementBytes {
		return nil, refuse(ReasonStatementMalformed, "", "longer than %d bytes", maxStatementBytes)
	}
	var w statementJSON
	if err := decodeStrictJSON(data, &w); err != nil {
		return nil, refuseErr(ReasonStatementMalformed, "", err, "")
	}
	st, err := w.statement()
	if err != nil {
		return nil, err
	}
	canon, err := st.Marshal()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(canon, data) {
		return nil, refuse(ReasonNotCanonical, "", "statement is not in canonical form")
	}
	return st, nil
}

func (w *statementJSON) statement() (*Statement, error) {
	id, err := ParseID(w.Skill.ID)
	if err != nil {
		return nil, err
	}
	v, err := ParseVersion(w.Skill.Version)
	if err != nil {
		return nil, err
	}
	fp, err := ParseFingerprint(w.Publisher.Fingerprint)
	if err != nil {
		return nil, err
	}
	ad, err := parseHexDigest(w.Archive.SHA256)
	if err != nil {
		return nil, err
	}
	st := &Statement{
		ID: id, Version: v, Sequence: w.Skill.Sequence, Publisher: fp,
		Archive: FileDigest{Size: w.Archive.Size, SHA256: ad},
	}
	st.Files = make([]FileDigest, 0, len(w.Files))
	for _, f := range w.Files {
		d, err := parseHexDigest(f.SHA256)
		if err != nil {
			return nil, err
		}
		st.Files = append(st.Files, FileDigest{Path: f.Path, Size: f.Size, SHA256: d})
	}
	if err := st.check(); err != nil {
		return nil, err
	}
	return st, nil
}

// check validates a Statement however it was made.
func (st *Statement) check() error {
	if _, err := ParseID(string(st.ID)); err != nil {
		return err
	}
	if _, err := ParseVersion(st.Version.String()); err != nil {
		return err
	}
	if err := checkSequence(st.Sequence); err != nil {
		return err
	}
	if _, err := ParseFingerprint(string(st.Publisher)); err != nil {
		return err
	}
	if st.Archive.Path != "" || st.Archive.Size <= 0 {
		return refuse(ReasonStatementInvalid, "archive", "archive size must be positive and the archive has no path")
	}
	if len(st.Files) == 0 {
		return refuse(ReasonStatementFiles, "", "no files")
	}
	folded := make(map[string]bool, len(st.Files))
	manifest := false
	for i, f := range st.Files {
		if err := checkPath(f.Path); err != nil {
			return err
		}
		if err := checkLayout(f.Path); err != nil {
			return err
		}
		if i > 0 && f.Path <= st.Files[i-1].Path {
			return refuse(ReasonStatementFiles, f.Path, "files must be sorted by path without repeats")
		}
		if folded[foldName(f.Path)] {
			return refuse(ReasonStatementFiles, f.Path, "two paths differ only in case")
		}
		folded[foldName(f.Path)] = true
		if f.Size < 0 {
			return refuse(ReasonStatementInvalid, f.Path, "negative size")
		}
		manifest = manifest || f.Path == ManifestPath
	}
	if !manifest {
		return refuse(ReasonStatementFiles, "", "no %s", ManifestPath)
	}
	return nil
}

func checkSequence(n uint64) error {
	if n < 1 || n > MaxSequence {
		return refuse(ReasonSequence, "", "sequence must be between 1 and %d", uint64(MaxSequence))
	}
	return nil
}

// Marshal returns the canonical encoding of st: compact JSON, members in
// the order shown on Statement, digests in lower-case hex. Every string in
// a valid statement is ASCII without characters that JSON escapes, so the
// encoding is the same in any language.
func (st *Statement) Marshal() ([]byte, error) {
	if err := st.check(); err != nil {
		return nil, err
	}
	w := statementJSON{
		Skill:     statementSkillJSON{ID: string(st.ID), Version: st.Version.String(), Sequence: st.Sequence},
		Publisher: publisherJSON{Fingerprint: string(st.Publisher)},
		Archive:   archiveJSON{SHA256: st.Archive.SHA256.Hex(), Size: st.Archive.Size},
		Files:     make([]fileJSON, len(st.Files)),
	}
	for i, f := range st.Files {
		w.Files[i] = fileJSON{Path: f.Path, Size: f.Size, SHA256: f.SHA256.Hex()}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&w); err != nil {
		return nil, refuseErr(ReasonStatementInvalid, "", err, "encoding")
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if bytes.ContainsAny(b, "\\") {
		return nil, refuseErr(ReasonStatementInvalid, "", errors.New("escape in a canonical statement"), "")
	}
	return b, nil
}

// File returns the statement's entry for path.
func (st *Statement) File(path string) (FileDigest, bool) {
	i, ok := slices.BinarySearchFunc(st.Files, path, func(f FileDigest, p string) int { return strings.Compare(f.Path, p) })
	if !ok {
		return FileDigest{}, false
	}
	return st.Files[i], true
}
