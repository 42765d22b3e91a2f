package hostcall

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Quotas bound each skill's namespace. A zero field takes its default.
type Quotas struct {
	MaxKeyBytes   int   // default 256, at most 4096
	MaxValueBytes int   // default 64 KiB, at most 16 MiB
	MaxSkillBytes int64 // keys and values of one skill; default 10 MiB
	MaxSkillKeys  int   // keys of one skill; default 10,000
	MaxListKeys   int   // keys one List returns; default 1,000
}

// Defaults of Quotas.
const (
	DefaultMaxKeyBytes   = 256
	DefaultMaxValueBytes = 64 << 10
	DefaultMaxSkillBytes = 10 << 20
	DefaultMaxSkillKeys  = 10_000
	DefaultMaxListKeys   = 1_000
)

func (q Quotas) withDefaults() (Quotas, error) {
	if q.MaxKeyBytes < 0 || q.MaxValueBytes < 0 || q.MaxSkillBytes < 0 || q.MaxSkillKeys < 0 || q.MaxListKeys < 0 {
		return q, fmt.Errorf("%w: negative quota", ErrInvalid)
	}
	q.MaxKeyBytes = orDefault(q.MaxKeyBytes, DefaultMaxKeyBytes)
	q.MaxValueBytes = orDefault(q.MaxValueBytes, DefaultMaxValueBytes)
	q.MaxSkillKeys = orDefault(q.MaxSkillKeys, DefaultMaxSkillKeys)
	q.MaxListKeys = orDefault(q.MaxListKeys, DefaultMaxListKeys)
	if q.MaxSkillBytes == 0 {
		q.MaxSkillBytes = DefaultMaxSkillBytes
	}
	if q.MaxKeyBytes > 4096 || q.MaxValueBytes > 16<<20 {
		return q, fmt.Errorf("%w: key quota over 4096 or value quota over 16 MiB", ErrInvalid)
	}
	return q, nil
}

// The file's layout (bbolt buckets):
//
//	meta/format                 "stockade-kv 1"
//	skills/<skill id>/data/<key> = value
//	skills/<skill id>/usage      = bytes (keys and values), keys: two big-endian uint64
//
// A skill's bucket exists while it holds a key. usage changes in the same
// transaction as the data it counts.
var (
	bucketMeta   = []byte("meta")
	bucketSkills = []byte("skills")
	bucketData   = []byte("data")
	keyFormat    = []byte("format")
	keyUsage     = []byte("usage")
	formatV1     = []byte("stockade-kv 1")
)

// KV is the broker's key-value store for skills: one bbolt file, one
// namespace per skill id. Every method names the skill id, which the
// broker takes from the verified skill, never from the guest; a skill's
// keys are reachable only through its own id. Writes are transactions
// that bbolt fsyncs before they return, so a crash keeps every write
// that returned and no part of one that did not. KV is safe for
// concurrent use; writes are serialised.
type KV struct {
	db *bolt.DB
	q  Quotas
}

// Open opens (or makes, mode 0600) the store at path. It refuses a
// symbolic link, a file other users may read or write, a file another
// user owns, and a bbolt file that is not a store of this package. A
// second Open of the same file (in this process or another) waits a
// second for bbolt's file lock and fails.
func Open(path string, q Quotas) (*KV, error) {
	q, err := q.withDefaults()
	if err != nil {
		return nil, err
	}
	opts := &bolt.Options{
		Timeout: time.Second,
		OpenFile: func(name string, flag int, perm fs.FileMode) (*os.File, error) {
			return os.OpenFile(name, flag|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
		},
	}
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		return nil, fmt.Errorf("opening the kv store %s: %w", path, err)
	}
	if err := checkFile(db.Path()); err != nil {
		db.Close()
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			if err := tx.ForEach(func([]byte, *bolt.Bucket) error { return errors.New("other buckets") }); err != nil {
				return fmt.Errorf("%s is a bbolt file of something else", path)
			}
			if meta, err = tx.CreateBucket(bucketMeta); err != nil {
				return err
			}
			if err := meta.Put(keyFormat, formatV1); err != nil {
				return err
			}
		} else if !bytes.Equal(meta.Get(keyFormat), formatV1) {
			return fmt.Errorf("%s: unknown format %q", path, meta.Get(keyFormat))
		}
		_, err := tx.CreateBucketIfNotExists(bucketSkills)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("opening the kv store: %w", err)
	}
	return &KV{db: db, q: q}, nil
}

// checkFile refuses a store that is not a regular file of this user's,
// private to it.
func checkFile(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("kv store %s is not a regular file", path)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("kv store %s has mode %v: group and others must have no access", path, fi.Mode().Perm())
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("kv store %s is owned by another user", path)
	}
	return nil
}

// Close closes the store; later calls fail with ErrUnavailable.
func (kv *KV) Close() error { return kv.db.Close() }

// Quotas returns the store's quotas, defaults filled in.
func (kv *KV) Quotas() Quotas { return kv.q }

// Get returns a copy of key's value in skillID's namespace, or
// ErrNotFound.
func (kv *KV) Get(ctx context.Context, skillID string, key []byte) ([]byte, error) {
	if err := kv.check(ctx, skillID, key, false); err != nil {
		return nil, err
	}
	var v []byte
	err := kv.db.View(func(tx *bolt.Tx) error {
		data := dataBucket(tx, skillID)
		if data == nil {
			return ErrNotFound
		}
		if got := data.Get(key); got != nil {
			v = bytes.Clone(got)
			return nil
		}
		return ErrNotFound
	})
	return v, kv.wrap(err)
}

// Put sets key to value in skillID's namespace, within the quotas
// (ErrQuota): value size, and the skill's total bytes (keys and values)
// and keys after the write. Replacing a value counts the new size only.
func (kv *KV) Put(ctx context.Context, skillID string, key, value []byte) error {
	if err := kv.check(ctx, skillID, key, false); err != nil {
		return err
	}
	if len(value) > kv.q.MaxValueBytes {
		return fmt.Errorf("%w: value of %d bytes, over %d", ErrQuota, len(value), kv.q.MaxValueBytes)
	}
	// bbolt keeps the slices until the commit; the caller's may change.
	key, value = bytes.Clone(key), bytes.Clone(value)
	if value == nil {
		value = []byte{}
	}
	err := kv.db.Update(func(tx *bolt.Tx) error {
		skill, err := tx.Bucket(bucketSkills).CreateBucketIfNotExists([]byte(skillID))
		if err != nil {
			return err
		}
		data, err := skill.CreateBucketIfNotExists(bucketData)
		if err != nil {
			return err
		}
		u, err := readUsage(skill)
		if err != nil {
			return err
		}
		if old := data.Get(key); old != nil {
			u.bytes -= uint64(len(key) + len(old))
			u.keys--
		}
		u.bytes += uint64(len(key) + len(value))
		u.keys++
		if u.bytes > uint64(kv.q.MaxSkillBytes) {
			return fmt.Errorf("%w: skill %q would hold %d bytes, over %d", ErrQuota, skillID, u.bytes, kv.q.MaxSkillBytes)
		}
		if u.keys > uint64(kv.q.MaxSkillKeys) {
			return fmt.Errorf("%w: skill %q would hold %d keys, over %d", ErrQuota, skillID, u.keys, kv.q.MaxSkillKeys)
		}
		if err := data.Put(key, value); err != nil {
			return err
		}
		return writeUsage(skill, u)
	})
	return kv.wrap(err)
}

// Delete removes key from skillID's namespace; deleting an absent key
// is not an error.
func (kv *KV) Delete(ctx context.Context, skillID string, key []byte) error {
	if err := kv.check(ctx, skillID, key, false); err != nil {
		return err
	}
	err := kv.db.Update(func(tx *bolt.Tx) error {
		skills := tx.Bucket(bucketSkills)
		skill := skills.Bucket([]byte(skillID))
		if skill == nil {
			return nil
		}
		data := skill.Bucket(bucketData)
		if data == nil {
			return errCorrupt(skillID, "no data bucket")
		}
		old := data.Get(key)
		if old == nil {
			return nil
		}
		u, err := readUsage(skill)
		if err != nil {
			return err
		}
		if u.keys == 0 || u.bytes < uint64(len(key)+len(old)) {
			return errCorrupt(skillID, "usage below its data")
		}
		u.bytes -= uint64(len(key) + len(old))
		u.keys--
		if u.keys == 0 {
			return skills.DeleteBucket([]byte(skillID))
		}
		if err := data.Delete(key); err != nil {
			return err
		}
		return writeUsage(skill, u)
	})
	return kv.wrap(err)
}

// List returns skillID's keys that begin with prefix, in byte order. More
// than Quotas.MaxListKeys matches is ErrQuota: ask with a longer prefix.
func (kv *KV) List(ctx context.Context, skillID string, prefix []byte) ([][]byte, error) {
	if err := kv.check(ctx, skillID, prefix, true); err != nil {
		return nil, err
	}
	var keys [][]byte
	err := kv.db.View(func(tx *bolt.Tx) error {
		data := dataBucket(tx, skillID)
		if data == nil {
			return nil
		}
		c := data.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if len(keys) == kv.q.MaxListKeys {
				return fmt.Errorf("%w: over %d keys with that prefix", ErrQuota, kv.q.MaxListKeys)
			}
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return nil, kv.wrap(err)
	}
	return keys, nil
}

// Usage returns the bytes (keys and values) and keys skillID holds.
func (kv *KV) Usage(ctx context.Context, skillID string) (bytes int64, keys int, err error) {
	if err := kv.check(ctx, skillID, nil, true); err != nil {
		return 0, 0, err
	}
	var u usage
	err = kv.db.View(func(tx *bolt.Tx) error {
		skill := tx.Bucket(bucketSkills).Bucket([]byte(skillID))
		if skill == nil {
			return nil
		}
		var err error
		u, err = readUsage(skill)
		return err
	})
	return int64(u.bytes), int(u.keys), kv.wrap(err)
}

// check refuses a done context, a bad skill id and a bad key (or prefix,
// which may be empty): ErrInvalid, or ErrQuota for a key over the quota.
func (kv *KV) check(ctx context.Context, skillID string, key []byte, prefix bool) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !validSkillID(skillID) {
		return fmt.Errorf("%w: skill id %q", ErrInvalid, skillID)
	}
	if len(key) == 0 && !prefix {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if len(key) > kv.q.MaxKeyBytes {
		return fmt.Errorf("%w: key of %d bytes, over %d", ErrQuota, len(key), kv.q.MaxKeyBytes)
	}
	if !utf8.Valid(key) || bytes.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("%w: a key must be UTF-8 without NUL", ErrInvalid)
	}
	return nil
}

// validSkillID: the manifest's id alphabet (lower-case ASCII letters,
// digits, '-' and '.'), 1 to 128 bytes. The verifier checks the full
// grammar; this keeps odd bytes out of bucket names.
func validSkillID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// wrap classes bbolt's errors; this package's pass through.
func (kv *KV) wrap(err error) error {
	switch {
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrQuota), errors.Is(err, ErrInvalid), errors.Is(err, ErrUnavailable):
		return err
	case errors.Is(err, bolterrors.ErrDatabaseNotOpen):
		return fmt.Errorf("%w: the kv store is closed", ErrUnavailable)
	}
	return fmt.Errorf("%w: kv store: %w", ErrUnavailable, err)
}

func dataBucket(tx *bolt.Tx, skillID string) *bolt.Bucket {
	skill := tx.Bucket(bucketSkills).Bucket([]byte(skillID))
	if skill == nil {
		return nil
	}
	return skill.Bucket(bucketData)
}

type usage struct{ bytes, keys uint64 }

func readUsage(skill *bolt.Bucket) (usage, error) {
	v := skill.Get(keyUsage)
	if v == nil {
		return usage{}, nil
	}
	if len(v) != 16 {
		return usage{}, errors.New("kv store: usage record of the wrong size")
	}
	return usage{binary.BigEndian.Uint64(v), binary.BigEndian.Uint64(v[8:])}, nil
}

func writeUsage(skill *bolt.Bucket, u usage) error {
	v := binary.BigEndian.AppendUint64(nil, u.bytes)
	return skill.Put(keyUsage, binary.BigEndian.AppendUint64(v, u.keys))
}

func errCorrupt(skillID, what string) error {
	return fmt.Errorf("kv store: skill %q: %s", skillID, what)
}
