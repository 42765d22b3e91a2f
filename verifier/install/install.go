package install

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// Modes of what Install creates. Load refuses any other.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700 | fs.ModeDir
)

// Prefixes of the root's temporary directories. A digest's hex never starts
// with a dot, so they cannot be taken for an installed skill.
const (
	stagingPrefix = ".staging-"
	trashPrefix   = ".trash-"
)

// StatementFile is where Install keeps the signed statement, in canonical
// form, inside an installed skill's directory. It starts with a dot, which
// no skill file may, so it cannot collide with one.
const StatementFile = ".statement.json"

// Install extracts the files of sk into root/<statement digest hex>/ and
// returns that directory. The files are written into a fresh staging
// directory with O_EXCL, fsynced with every directory, and the staging
// directory is renamed to its final name, then root is fsynced: a crash
// leaves either nothing at the final name or the whole skill.
//
// If the release is already installed, Install verifies it as Load does and
// returns it; if that directory fails the check, Install returns Load's
// refusal and changes nothing (Remove it, then install again). root is created (0700) if it does not exist; its parent must.
func Install(root string, sk *skill.Skill) (dir string, err error) {
	if err := checkSkill(sk); err != nil {
		return "", err
	}
	if err := os.Mkdir(root, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", ioError(root, err)
	}
	r, err := openRoot(root)
	if err != nil {
		return "", err
	}
	defer r.Close()
	name := sk.StatementDigest.Hex()
	dir = filepath.Join(root, name)

	if _, err := r.Lstat(name); err == nil {
		if _, err := load(r, name, sk.StatementDigest); err != nil {
			return "", err
		}
		return dir, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", ioError(name, err)
	}

	staging := stagingPrefix + rand.Text()
	if err := r.Mkdir(staging, DirMode.Perm()); err != nil {
		return "", ioError(staging, err)
	}
	stmt, err := sk.Statement.Marshal()
	if err != nil {
		r.RemoveAll(staging)
		return "", &Error{Reason: ReasonInvalid, Detail: "statement does not encode", Err: err}
	}
	files := append([]skill.File{{Path: StatementFile, Data: stmt}}, sk.Files...)
	if err := writeAll(r, staging, files); err != nil {
		r.RemoveAll(staging)
		return "", err
	}
	if err := r.Rename(staging, name); err != nil {
		r.RemoveAll(staging)
		// Another install of the same release may have won the race.
		if _, lerr := r.Lstat(name); lerr == nil {
			if _, err := load(r, name, sk.StatementDigest); err != nil {
				return "", err
			}
			return dir, nil
		}
		return "", ioError(name, err)
	}
	if err := syncDir(r, "."); err != nil {
		return "", err
	}
	return dir, nil
}

// writeAll writes files into the fresh directory staging and fsyncs them and
// every directory, deepest first.
func writeAll(r *os.Root, staging string, files []skill.File) error {
	dirs := map[string]bool{staging: true}
	for _, f := range files {
		p := staging + "/" + f.Path
		for _, d := range parents(p) {
			if dirs[d] {
				continue
			}
			if err := r.Mkdir(d, DirMode.Perm()); err != nil {
				return ioError(d, err)
			}
			dirs[d] = true
		}
		if err := writeFile(r, p, f.Data); err != nil {
			return err
		}
	}
	order := make([]string, 0, len(dirs))
	for d := range dirs {
		order = append(order, d)
	}
	// Deeper directories first: a parent's entry for a child is synced
	// after the child's own entries.
	slices.SortFunc(order, func(a, b string) int {
		return strings.Count(b, "/") - strings.Count(a, "/")
	})
	for _, d := range order {
		if err := syncDir(r, d); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(r *os.Root, p string, data []byte) error {
	f, err := r.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return ioError(p, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return ioError(p, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return ioError(p, err)
	}
	if err := f.Close(); err != nil {
		return ioError(p, err)
	}
	return nil
}

func syncDir(r *os.Root, name string) error {
	d, err := r.Open(name)
	if err != nil {
		return ioError(name, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return ioError(name, err)
	}
	return nil
}

// parents returns the directories above p, outermost first, without "."
// ("a/b/c" gives "a", "a/b").
func parents(p string) []string {
	var out []string
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		out = append(out, d)
	}
	slices.Reverse(out)
	return out
}

// Remove uninstalls the release named by digest: its directory is renamed
// to a trash name (atomically, so a crash leaves it installed or gone) and
// then removed. Clean finishes a removal a crash interrupted.
func Remove(root string, digest skill.Digest) error {
	r, err := openRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	name := digest.Hex()
	if _, err := r.Lstat(name); errors.Is(err, fs.ErrNotExist) {
		return refuse(ReasonNotInstalled, name, "not installed")
	} else if err != nil {
		return ioError(name, err)
	}
	trash := trashPrefix + rand.Text()
	if err := r.Rename(name, trash); err != nil {
		return ioError(name, err)
	}
	if err := syncDir(r, "."); err != nil {
		return err
	}
	if err := r.RemoveAll(trash); err != nil {
		return ioError(trash, err)
	}
	return syncDir(r, ".")
}

// Clean removes what crashes left in root: staging directories of
// interrupted installs and trash of interrupted removals. It returns their
// names. It does not touch installed skills; a damaged one is found by Load.
func Clean(root string) (removed []string, err error) {
	r, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	d, err := r.Open(".")
	if err != nil {
		return nil, ioError(root, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, ioError(root, err)
	}
	slices.Sort(names)
	for _, n := range names {
		if !strings.HasPrefix(n, stagingPrefix) && !strings.HasPrefix(n, trashPrefix) {
			continue
		}
		if err := r.RemoveAll(n); err != nil {
			return removed, ioError(n, err)
		}
		removed = append(removed, n)
	}
	if len(removed) > 0 {
		if err := syncDir(r, "."); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// List lists the digests installed in root, in byte order of their hex.
// It does not verify them: Load does.
func List(root string) ([]skill.Digest, error) {
	r, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	d, err := r.Open(".")
	if err != nil {
		return nil, ioError(root, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, ioError(root, err)
	}
	slices.Sort(names)
	var out []skill.Digest
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue
		}
		dg, err := skill.ParseDigest("sha256:" + n)
		if err != nil {
			return nil, refuse(ReasonExtra, n, "not a statement digest")
		}
		out = append(out, dg)
	}
	return out, nil
}

// openRoot checks root and opens it. The check is made on the opened
// directory, so a rename between the two cannot swap another one in.
func openRoot(root string) (*os.Root, error) {
	fi, err := os.Lstat(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{Reason: ReasonRootUnsafe, Path: root, Err: err}
		}
		return nil, ioError(root, err)
	}
	if err := checkRootInfo(root, fi); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, ioError(root, err)
	}
	d, err := r.Open(".")
	if err == nil {
		fi, err = d.Stat()
		d.Close()
	}
	if err != nil {
		r.Close()
		return nil, ioError(root, err)
	}
	if err := checkRootInfo(root, fi); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// checkSkill requires sk to be what skill.Open returns: the digest of its
// canonical statement, and exactly the statement's files with their signed
// sizes and digests.
func checkSkill(sk *skill.Skill) error {
	if sk == nil || sk.Statement == nil {
		return refuse(ReasonInvalid, "", "no skill")
	}
	if err := checkStatement(sk.Statement, sk.StatementDigest); err != nil {
		return err
	}
	if len(sk.Files) != len(sk.Statement.Files) {
		return refuse(ReasonInvalid, "", "%d files, the statement names %d", len(sk.Files), len(sk.Statement.Files))
	}
	for i, f := range sk.Files {
		want := sk.Statement.Files[i]
		if f.Path != want.Path || int64(len(f.Data)) != want.Size || f.Size != want.Size {
			return refuse(ReasonInvalid, f.Path, "file does not match the statement")
		}
		if sum := sha256.Sum256(f.Data); !bytes.Equal(sum[:], want.SHA256[:]) || f.SHA256 != want.SHA256 {
			return refuse(ReasonInvalid, f.Path, "file's SHA-256 does not match the statement")
		}
	}
	return nil
}

// checkStatement requires digest to name st and every path of st to be
// one Install may create.
func checkStatement(st *skill.Statement, digest skill.Digest) error {
	if st == nil {
		return refuse(ReasonInvalid, "", "no statement")
	}
	b, err := st.Marshal()
	if err != nil {
		return &Error{Reason: ReasonInvalid, Detail: "statement does not encode", Err: err}
	}
	if skill.Digest(sha256.Sum256(b)) != digest {
		return refuse(ReasonInvalid, "", "statement digest %s does not name the statement", digest)
	}
	if len(st.Files) == 0 {
		return refuse(ReasonInvalid, "", "statement names no files")
	}
	seen := make(map[string]bool, len(st.Files))
	for _, f := range st.Files {
		if !localPath(f.Path) || seen[f.Path] || f.Size < 0 {
			return refuse(ReasonInvalid, f.Path, "not a path or size Install writes")
		}
		seen[f.Path] = true
	}
	// A file may not also be a directory of another ("a" and "a/b").
	for p := range seen {
		for _, d := range parents(p) {
			if seen[d] {
				return refuse(ReasonInvalid, p, "its directory is also a file")
			}
		}
	}
	return nil
}

// localPath reports whether p is a relative slash-separated path of
// non-empty segments, none starting with a dot, without backslashes or NUL.
func localPath(p string) bool {
	if !fs.ValidPath(p) || p == "." || strings.ContainsAny(p, "\\\x00") {
		return false
	}
	for seg := range strings.SplitSeq(p, "/") {
		if strings.HasPrefix(seg, ".") {
			return false
		}
	}
	return true
}
