package skill

import (
	"archive/zip"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"io"
	"slices"
	"strings"
)

// Limits bound the work Open does on bytes nobody vouched for yet. A zero
// (or negative) field means its default.
type Limits struct {
	EnvelopeBytes int64 // the .sig file; default 128 KiB
	ArchiveBytes  int64 // the archive; default 64 MiB
	Entries       int   // files in the archive; default 256
	FileBytes     int64 // one file, uncompressed; default 16 MiB
	TotalBytes    int64 // all files, uncompressed; default 128 MiB
	ManifestBytes int64 // skill.toml; default 64 KiB (also the most there can be)
	Ratio         int64 // uncompressed/compressed for a Deflate entry; default 200
}

// DefaultLimits returns the limits Open uses.
func DefaultLimits() Limits {
	return Limits{
		EnvelopeBytes: 128 << 10,
		ArchiveBytes:  64 << 20,
		Entries:       256,
		FileBytes:     16 << 20,
		TotalBytes:    128 << 20,
		ManifestBytes: maxManifestBytes,
		Ratio:         200,
	}
}

// withDefaults fills zero fields and caps every field at what the format
// allows (no zip64: sizes below 4 GiB, entries below 65535).
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	fill := func(v *int64, def, ceiling int64) {
		if *v <= 0 {
			*v = def
		}
		*v = min(*v, ceiling)
	}
	fill(&l.EnvelopeBytes, d.EnvelopeBytes, maxEnvelopeBytes)
	fill(&l.ArchiveBytes, d.ArchiveBytes, 1<<32-2)
	fill(&l.FileBytes, d.FileBytes, 1<<32-2)
	fill(&l.TotalBytes, d.TotalBytes, 1<<40)
	fill(&l.ManifestBytes, d.ManifestBytes, maxManifestBytes)
	fill(&l.Ratio, d.Ratio, 1<<20)
	if l.Entries <= 0 {
		l.Entries = d.Entries
	}
	l.Entries = min(l.Entries, 0xfffe)
	return l
}

// Skill is an opened skill: signed by Publisher, every file verified.
// Nothing in it says whether Publisher is trusted for this skill id: that
// is the trust store's decision, made on these fields.
type Skill struct {
	Manifest  *Manifest
	Statement *Statement
	Publisher Fingerprint
	PublicKey ed25519.PublicKey
	// StatementDigest is the SHA-256 of the signed statement, which is
	// canonical: it names this exact signed release (what an admin promotes).
	StatementDigest Digest
	// Files are the archive's files in statement order, with their
	// verified contents.
	Files []File
}

// File is one verified file.
type File struct {
	Path   string
	Size   int64
	SHA256 Digest
	Data   []byte
}

// File returns the file at path.
func (s *Skill) File(path string) (File, bool) {
	i, ok := slices.BinarySearchFunc(s.Files, path, func(f File, p string) int { return strings.Compare(f.Path, p) })
	if !ok {
		return File{}, false
	}
	return s.Files[i], true
}

// Open verifies a skill archive against its detached envelope and returns
// its verified files and manifest, with DefaultLimits. accept is asked
// about the signing key once its signature has verified, before anything
// signed is parsed; an error from it refuses the archive (ReasonKeyRefused,
// wrapping that error). A nil accept refuses every key.
func Open(archive, envelope []byte, accept func(Fingerprint) error) (*Skill, error) {
	return DefaultLimits().Open(archive, envelope, accept)
}

// Open is the package-level Open with the limits l. The steps, each of which
// refuses with a typed *Error:
//
//  1. sizes of the envelope and the archive against the limits;
//  2. the envelope: strict JSON, the skill statement's payload type, exactly
//     one signature, key and signature lengths, keyid = fingerprint(key);
//  3. the Ed25519 signature over PAE(payloadType, statement);
//  4. accept(fingerprint);
//  5. the statement: strict and canonical JSON, valid fields, sorted file
//     list, publisher = the signing key, sizes and counts within the limits;
//  6. the archive's size and SHA-256 against the statement's (the archive
//     is now the bytes the key signed);
//  7. the ZIP layout (scanArchive), read from the raw bytes;
//  8. the entries equal the signed file list, each declared size equal to
//     the signed size;
//  9. archive/zip's reading of the central directory, once (r.File, never
//     the fs.FS view), equal to the scan's;
//  10. each file decompressed through a limit of its signed size while
//     hashed, its size and SHA-256 equal to the signed ones;
//  11. skill.toml parsed from its verified bytes, its id, version and
//     sequence equal to the statement's, every tool's module present.
func (l Limits) Open(archive, envelope []byte, accept func(Fingerprint) error) (*Skill, error) {
	lim := l.withDefaults()
	if int64(len(envelope)) > lim.EnvelopeBytes {
		return nil, refuse(ReasonEnvelopeTooLarge, "", "%d bytes; the limit is %d", len(envelope), lim.EnvelopeBytes)
	}
	if int64(len(archive)) > lim.ArchiveBytes {
		return nil, refuse(ReasonArchiveTooLarge, "", "%d bytes; the limit is %d", len(archive), lim.ArchiveBytes)
	}
	env, err := ParseEnvelope(envelope)
	if err != nil {
		return nil, err
	}
	if env.PayloadType != PayloadType {
		return nil, refuse(ReasonPayloadType, env.PayloadType, "want %q", PayloadType)
	}
	if len(env.Signatures) != 1 {
		return nil, refuse(ReasonSignatureCount, "", "a skill statement carries exactly one signature, not %d", len(env.Signatures))
	}
	fps, err := env.Verify(PayloadType)
	if err != nil {
		return nil, err
	}
	fp := fps[0]
	if accept == nil {
		return nil, refuse(ReasonKeyRefused, string(fp), "no key check given")
	}
	if err := accept(fp); err != nil {
		return nil, refuseErr(ReasonKeyRefused, string(fp), err, "")
	}

	st, err := ParseStatement(env.Payload)
	if err != nil {
		return nil, err
	}
	if st.Publisher != fp {
		return nil, refuse(ReasonPublisherMismatch, string(st.Publisher), "statement names another publisher key than the one that signed it (%s)", fp)
	}
	if err := lim.checkStatement(st); err != nil {
		return nil, err
	}
	if int64(len(archive)) != st.Archive.Size {
		return nil, refuse(ReasonArchiveSize, "", "archive is %d bytes; the statement says %d", len(archive), st.Archive.Size)
	}
	if Digest(sha256.Sum256(archive)) != st.Archive.SHA256 {
		return nil, refuse(ReasonArchiveDigest, "", "archive SHA-256 differs from the signed one")
	}

	files, err := readArchive(archive, st, lim)
	if err != nil {
		return nil, err
	}
	m, err := bindManifest(files, st)
	if err != nil {
		return nil, err
	}
	pub := bytes.Clone(env.Signatures[0].PublicKey)
	return &Skill{
		Manifest: m, Statement: st, Publisher: fp, PublicKey: pub,
		StatementDigest: sha256.Sum256(env.Payload), Files: files,
	}, nil
}

// checkStatement applies the limits to the signed file list, so that no
// archive is hashed or parsed for a statement that could not pass.
func (lim Limits) checkStatement(st *Statement) error {
	if len(st.Files) > lim.Entries {
		return refuse(ReasonTooManyEntries, "", "%d files; the limit is %d", len(st.Files), lim.Entries)
	}
	if st.Archive.Size > lim.ArchiveBytes {
		return refuse(ReasonArchiveTooLarge, "", "signed size %d; the limit is %d", st.Archive.Size, lim.ArchiveBytes)
	}
	var total int64
	for _, f := range st.Files {
		max := lim.FileBytes
		if f.Path == ManifestPath {
			max = min(max, lim.ManifestBytes)
		}
		if f.Size > max {
			return refuse(ReasonFileTooLarge, f.Path, "%d bytes; the limit is %d", f.Size, max)
		}
		total += f.Size
		if total > lim.TotalBytes {
			return refuse(ReasonTotalTooLarge, f.Path, "files add up to more than %d bytes", lim.TotalBytes)
		}
	}
	return nil
}

// readArchive parses the (signed) archive once and returns its files in
// statement order.
func readArchive(archive []byte, st *Statement, lim Limits) ([]File, error) {
	entries, err := scanArchive(archive, lim)
	if err != nil {
		return nil, err
	}
	signed := make(map[string]FileDigest, len(st.Files))
	for _, f := range st.Files {
		signed[f.Path] = f
	}
	byName := make(map[string]*zipEntry, len(entries))
	for i := range entries {
		e := &entries[i]
		sf, ok := signed[e.name]
		if !ok {
			return nil, refuse(ReasonUnsigned, e.name, "in the archive but not in the signed file list")
		}
		if e.usize != sf.Size {
			return nil, refuse(ReasonEntrySize, e.name, "declares %d bytes; %d were signed", e.usize, sf.Size)
		}
		byName[e.name] = e
	}
	for _, f := range st.Files {
		if byName[f.Path] == nil {
			return nil, refuse(ReasonMissing, f.Path, "signed but not in the archive")
		}
	}

	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		return nil, refuseErr(ReasonParserMismatch, "", err, "archive/zip refused what the scan accepted")
	}
	if len(zr.File) != len(entries) || zr.Comment != "" {
		return nil, refuse(ReasonParserMismatch, "", "archive/zip found %d entries; the scan %d", len(zr.File), len(entries))
	}
	opened := make(map[string]*zip.File, len(zr.File))
	for i, zf := range zr.File { // the one iteration over r.File
		e := &entries[i]
		off, err := zf.DataOffset()
		if err != nil || zf.Name != e.name || zf.Method != e.method || zf.Flags != e.flags ||
			zf.CRC32 != e.crc || zf.CompressedSize64 != uint64(e.csize) ||
			zf.UncompressedSize64 != uint64(e.usize) || off != e.dataOffset ||
			!zf.Mode().IsRegular() {
			return nil, refuseErr(ReasonParserMismatch, e.name, err, "archive/zip reads entry %d differently", i)
		}
		opened[zf.Name] = zf
	}

	files := make([]File, 0, len(st.Files))
	for _, f := range st.Files {
		data, err := readEntry(opened[f.Path], f)
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: f.Path, Size: f.Size, SHA256: f.SHA256, Data: data})
	}
	return files, nil
}

// readEntry decompresses zf through a limit of one byte more than its
// signed size, hashing as it goes.
func readEntry(zf *zip.File, f FileDigest) ([]byte, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, refuseErr(ReasonEntryRead, f.Path, err, "")
	}
	defer rc.Close()
	// f.Size is signed and within Limits.FileBytes: safe to allocate.
	buf := bytes.NewBuffer(make([]byte, 0, f.Size+1))
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(buf, h), io.LimitReader(rc, f.Size+1))
	if err != nil {
		return nil, refuseErr(ReasonEntryRead, f.Path, err, "")
	}
	if n != f.Size {
		return nil, refuse(ReasonEntrySize, f.Path, "decompressed to %d bytes or more; %d were signed", n, f.Size)
	}
	if Digest(h.Sum(nil)) != f.SHA256 {
		return nil, refuse(ReasonEntryDigest, f.Path, "SHA-256 differs from the signed one")
	}
	return buf.Bytes(), nil
}

// bindManifest parses skill.toml and ties it to the statement.
func bindManifest(files []File, st *Statement) (*Manifest, error) {
	var raw []byte
	present := make(map[string]bool, len(files))
	for _, f := range files {
		present[f.Path] = true
		if f.Path == ManifestPath {
			raw = f.Data
		}
	}
	m, err := ParseManifest(raw)
	if err != nil {
		return nil, err
	}
	switch {
	case m.ID != st.ID:
		return nil, refuse(ReasonBinding, string(m.ID), "manifest id differs from the signed %q", st.ID)
	case m.Version != st.Version:
		return nil, refuse(ReasonBinding, m.Version.String(), "manifest version differs from the signed %q", st.Version)
	case m.Sequence != st.Sequence:
		return nil, refuse(ReasonBinding, "", "manifest sequence %d differs from the signed %d", m.Sequence, st.Sequence)
	}
	for _, t := range m.Tools {
		if !present[t.Module] {
			return nil, refuse(ReasonModule, t.Module, "tool %q names a module the archive does not hold", t.Name)
		}
	}
	return m, nil
}
