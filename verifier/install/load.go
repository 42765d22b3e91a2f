package install

import (
	"crypto/sha256"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/stockade-dev/stockade/verifier/skill"
)

// maxStatementBytes bounds the statement file Load reads before checking it.
// A statement travels in a DSSE envelope of at most 128 KiB (base64), so it
// is smaller than that.
const maxStatementBytes = 128 << 10

// Skill is an installed skill that Load has verified.
type Skill struct {
	Dir             string // root/<digest hex>
	StatementDigest skill.Digest
	Statement       *skill.Statement
	// Files are the skill's files in statement order, each re-hashed
	// against the statement.
	Files []skill.File
}

// File returns the file at path.
func (s *Skill) File(path string) (skill.File, bool) {
	i := slices.IndexFunc(s.Files, func(f skill.File) bool { return f.Path == path })
	if i < 0 {
		return skill.File{}, false
	}
	return s.Files[i], true
}

// Load reads the release named by digest from root and verifies it: its
// statement must hash to digest and parse strictly, the directory must hold
// the statement's files and their directories and nothing else, each a plain
// file or directory of ours with Install's modes, and each file's size and
// SHA-256 must equal the signed ones. Files are read through a limit of
// their signed size. Every refusal is an *Error.
func Load(root string, digest skill.Digest) (*Skill, error) {
	r, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	name := digest.Hex()
	s, err := load(r, name, digest)
	if err != nil {
		return nil, err
	}
	s.Dir = filepath.Join(root, name)
	return s, nil
}

func load(r *os.Root, name string, digest skill.Digest) (*Skill, error) {
	fi, err := r.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, refuse(ReasonNotInstalled, name, "not installed")
	} else if err != nil {
		return nil, ioError(name, err)
	}
	if err := checkEntry(name, fi, true, DirMode); err != nil {
		return nil, err
	}

	// The statement, bound to the digest, says what else must be here.
	sp := name + "/" + StatementFile
	stmt, err := readFile(r, sp, -1)
	if err != nil {
		return nil, err
	}
	if skill.Digest(sha256.Sum256(stmt)) != digest {
		return nil, refuse(ReasonDigest, sp, "statement does not hash to %s", digest)
	}
	st, err := skill.ParseStatement(stmt)
	if err != nil {
		return nil, &Error{Reason: ReasonInvalid, Path: sp, Err: err}
	}
	if err := checkStatement(st, digest); err != nil {
		return nil, err
	}

	// Nothing but the signed files, their directories and the statement.
	want := map[string]bool{StatementFile: true}
	dirs := map[string]bool{}
	for _, f := range st.Files {
		want[f.Path] = true
		for _, d := range parents(f.Path) {
			dirs[d] = true
		}
	}
	found := 0
	if err := walk(r, name, "", want, dirs, &found); err != nil {
		return nil, err
	}
	if found != len(want) {
		for _, f := range st.Files {
			if _, err := r.Lstat(name + "/" + f.Path); err != nil {
				return nil, refuse(ReasonMissing, f.Path, "signed file not installed")
			}
		}
		return nil, refuse(ReasonMissing, name, "signed files not installed")
	}

	s := &Skill{StatementDigest: digest, Statement: st, Files: make([]skill.File, 0, len(st.Files))}
	for _, f := range st.Files {
		data, err := readFile(r, name+"/"+f.Path, f.Size)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		if skill.Digest(sum) != f.SHA256 {
			return nil, refuse(ReasonDigest, f.Path, "SHA-256 differs from the signed one")
		}
		s.Files = append(s.Files, skill.File{Path: f.Path, Size: f.Size, SHA256: f.SHA256, Data: data})
	}
	return s, nil
}

// walk checks every entry below name/rel: directories must be in dirs,
// files in want, each with Install's type, owner and mode. It counts the
// files found.
func walk(r *os.Root, name, rel string, want, dirs map[string]bool, found *int) error {
	p := path.Join(name, rel)
	d, err := r.Open(p)
	if err != nil {
		return ioError(p, err)
	}
	entries, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return ioError(p, err)
	}
	slices.Sort(entries)
	for _, e := range entries {
		erel := path.Join(rel, e)
		fi, err := r.Lstat(name + "/" + erel)
		if err != nil {
			return ioError(erel, err)
		}
		switch {
		case fi.IsDir() && dirs[erel]:
			if err := checkEntry(erel, fi, true, DirMode); err != nil {
				return err
			}
			if err := walk(r, name, erel, want, dirs, found); err != nil {
				return err
			}
		case want[erel]:
			if err := checkEntry(erel, fi, false, FileMode); err != nil {
				return err
			}
			*found++
		case fi.Mode().IsRegular() || fi.IsDir():
			return refuse(ReasonExtra, erel, "not in the signed file list")
		default:
			return refuse(ReasonNotRegular, erel, "type %v, not in the signed file list", fi.Mode().Type())
		}
	}
	return nil
}

// readFile reads the plain file p, of exactly size bytes (any size up to
// maxStatementBytes if size < 0), refusing a link or a file that is not the
// one checked.
func readFile(r *os.Root, p string, size int64) ([]byte, error) {
	fi, err := r.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, refuse(ReasonMissing, p, "not installed")
	} else if err != nil {
		return nil, ioError(p, err)
	}
	if err := checkEntry(p, fi, false, FileMode); err != nil {
		return nil, err
	}
	f, err := r.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, ioError(p, err)
	}
	defer f.Close()
	ofi, err := f.Stat()
	if err != nil {
		return nil, ioError(p, err)
	}
	if !os.SameFile(fi, ofi) {
		return nil, refuse(ReasonNotRegular, p, "file changed while opened")
	}
	if err := checkEntry(p, ofi, false, FileMode); err != nil {
		return nil, err
	}
	limit := size
	if size < 0 {
		limit = maxStatementBytes
	}
	if ofi.Size() > limit || (size >= 0 && ofi.Size() != size) {
		return nil, refuse(ReasonSize, p, "%d bytes, want %d", ofi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, ioError(p, err)
	}
	if int64(len(data)) > limit || (size >= 0 && int64(len(data)) != size) {
		return nil, refuse(ReasonSize, p, "%d bytes read, want %d", len(data), limit)
	}
	return data, nil
}
