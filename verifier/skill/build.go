package skill

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
)

// Fixed header values of built archives: made on Unix by ZIP 2.0, every
// file 0644, every time 1980-01-01 00:00 (the MS-DOS epoch), no extra
// fields (Go's writer adds a timestamp field only when Modified is set).
const (
	buildCreator  = hostUnix<<8 | maxVersionNeeded
	buildVersion  = maxVersionNeeded
	buildAttrs    = (0o100644) << 16
	buildDOSDate  = 1<<5 | 1 // 1980-01-01
	buildDOSTime  = 0
	buildMaxRatio = 100 // below DefaultLimits().Ratio, so built archives never come near it
)

// Build packs the skill source directory dir into an archive and signs it
// with key, returning the archive and its envelope (the .sig file's
// contents). dir must hold skill.toml, modules/*.wasm and optionally
// assets/**, all regular files with names Open accepts; empty directories
// are ignored, anything else (links, hidden files, other files) is an
// error. The statement's id, version and sequence come from skill.toml.
//
// Builds are deterministic: files sorted by path, fixed times and modes,
// each file stored or deflated (at the best compression level, when that
// saves space and keeps the ratio under 100), no extra fields. The same
// files and key give byte-identical archives and envelopes (Ed25519 is
// deterministic) with the same Go release; compress/flate's output may
// differ between releases, which changes the archive's digest but not the
// files' digests.
//
// Build opens its own result with Open before returning it, so it never
// returns an archive that Open refuses under DefaultLimits.
func Build(dir string, key ed25519.PrivateKey) (archive, envelope []byte, err error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, nil, refuse(ReasonKeyLength, "", "private key must be %d bytes", ed25519.PrivateKeySize)
	}
	files, err := readSource(dir)
	if err != nil {
		return nil, nil, err
	}
	var manifest *Manifest
	for _, f := range files {
		if f.Path == ManifestPath {
			if manifest, err = ParseManifest(f.Data); err != nil {
				return nil, nil, err
			}
		}
	}
	if manifest == nil {
		return nil, nil, refuse(ReasonStatementFiles, ManifestPath, "the source has no %s", ManifestPath)
	}

	archive, err = writeArchive(files)
	if err != nil {
		return nil, nil, err
	}
	pub := key.Public().(ed25519.PublicKey)
	st := &Statement{
		ID: manifest.ID, Version: manifest.Version, Sequence: manifest.Sequence,
		Publisher: FingerprintOf(pub),
		Archive:   FileDigest{Size: int64(len(archive)), SHA256: sha256.Sum256(archive)},
	}
	for _, f := range files {
		st.Files = append(st.Files, FileDigest{Path: f.Path, Size: f.Size, SHA256: f.SHA256})
	}
	payload, err := st.Marshal()
	if err != nil {
		return nil, nil, err
	}
	env, err := Sign(PayloadType, payload, key)
	if err != nil {
		return nil, nil, err
	}
	if envelope, err = env.Marshal(); err != nil {
		return nil, nil, err
	}
	self := FingerprintOf(pub)
	if _, err := Open(archive, envelope, func(fp Fingerprint) error {
		if fp != self {
			return errors.New("not the build key")
		}
		return nil
	}); err != nil {
		return nil, nil, fmt.Errorf("skill: the built archive does not open: %w", err)
	}
	return archive, envelope, nil
}

// readSource reads every file under dir through an os.Root (so that no
// name can lead outside it), sorted by path, with the limits Open applies.
func readSource(dir string) ([]File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	lim := DefaultLimits()
	var files []File
	var total int64
	fsys := root.FS()
	err = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		if d.IsDir() {
			if err := checkPath(name); err != nil {
				return err
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return refuse(ReasonNotRegular, name, "not a regular file (%s)", d.Type())
		}
		if err := checkPath(name); err != nil {
			return err
		}
		if err := checkLayout(name); err != nil {
			return err
		}
		if len(files) >= lim.Entries {
			return refuse(ReasonTooManyEntries, name, "more than %d files", lim.Entries)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > lim.FileBytes {
			return refuse(ReasonFileTooLarge, name, "%d bytes; the limit is %d", info.Size(), lim.FileBytes)
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		if int64(len(data)) > lim.FileBytes {
			return refuse(ReasonFileTooLarge, name, "%d bytes; the limit is %d", len(data), lim.FileBytes)
		}
		total += int64(len(data))
		if total > lim.TotalBytes {
			return refuse(ReasonTotalTooLarge, name, "files add up to more than %d bytes", lim.TotalBytes)
		}
		files = append(files, File{Path: name, Size: int64(len(data)), SHA256: sha256.Sum256(data), Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// WalkDir visits in lexical order per directory, which is not byte order
	// of whole paths ("a/b" vs "a-b"): sort.
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return files, nil
}

// writeArchive writes files, already sorted, as a skill archive.
func writeArchive(files []File) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		body, method, err := compress(f.Data)
		if err != nil {
			return nil, err
		}
		fh := &zip.FileHeader{
			Name:               f.Path,
			CreatorVersion:     buildCreator,
			ReaderVersion:      buildVersion,
			Method:             method,
			ModifiedTime:       buildDOSTime,
			ModifiedDate:       buildDOSDate,
			CRC32:              crc32.ChecksumIEEE(f.Data),
			CompressedSize64:   uint64(len(body)),
			UncompressedSize64: uint64(len(f.Data)),
			ExternalAttrs:      buildAttrs,
		}
		w, err := zw.CreateRaw(fh)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(body); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// deflaters holds writers at the best compression level (each holds over
// a megabyte of state); Reset makes a reused writer's output the same as a
// new one's.
var deflaters = sync.Pool{New: func() any {
	w, err := flate.NewWriter(nil, flate.BestCompression)
	if err != nil {
		panic(err) // only for an invalid level
	}
	return w
}}

// compress deflates data when that saves space and keeps the ratio at most
// buildMaxRatio, and stores it otherwise.
func compress(data []byte) ([]byte, uint16, error) {
	if len(data) == 0 {
		return data, zip.Store, nil
	}
	var buf bytes.Buffer
	fw := deflaters.Get().(*flate.Writer)
	defer deflaters.Put(fw)
	fw.Reset(&buf)
	if _, err := fw.Write(data); err != nil {
		return nil, 0, err
	}
	if err := fw.Close(); err != nil {
		return nil, 0, err
	}
	if buf.Len() >= len(data) || int64(len(data)) > int64(buf.Len())*buildMaxRatio {
		return data, zip.Store, nil
	}
	return buf.Bytes(), zip.Deflate, nil
}
