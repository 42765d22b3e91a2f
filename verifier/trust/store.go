package trust

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// Files in the store's directory.
const (
	stateName  = "state.json"
	auditName  = "audit.log"
	lockName   = "lock"
	tempPrefix = ".tmp-"
)

// Options configure a Store.
type Options struct {
	// AutoActivate lets an update signed by the id's pinned key become
	// active without an admin, when it asks for nothing beyond the
	// approved capabilities, its audit is clean, and the skill is not
	// disabled. Off by default: every update is quarantined "update".
	AutoActivate bool
	// Now returns the time recorded in the store; time.Now when nil.
	Now func() time.Time
	// Logger receives one line per decision; slog.DiscardHandler when nil.
	Logger *slog.Logger
}

// Store is a trust store open on a directory. Its methods are safe for
// concurrent use; one process at a time may have a store open (an
// exclusive lock on its lock file).
type Store struct {
	opts Options
	log  *slog.Logger
	dir  string

	mu     sync.Mutex
	root   *os.Root
	lock   *os.File
	audit  *os.File // opened O_APPEND
	st     *state
	head   string // hash of the last audit line
	count  uint64 // audit records
	broken error  // set when a write failed half way: refuse until reopened
}

// Open opens the trust store in dir, creating it (mode 0700) if dir does
// not exist; its parent must. It refuses a directory or file that is not
// owned by the calling uid, is writable by group or others, or is not a
// plain directory or regular file. It removes temporary files a crash
// left, drops a torn last line of the audit log, verifies the log's chain
// and that state.json's last decision is in it, and records any decision
// the log holds but the state does not.
func Open(dir string, opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, wrap(ReasonStoreUnsafe, dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, wrap(ReasonStoreUnsafe, dir, err)
	}
	if err := checkOwned(fi, true); err != nil {
		return nil, wrap(ReasonStoreUnsafe, dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, wrap(ReasonStoreUnsafe, dir, err)
	}
	s := &Store{opts: opts, log: opts.Logger, dir: dir, root: root}
	if err := s.open(); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

func (s *Store) open() error {
	// The directory may have changed between Lstat and OpenRoot: check
	// what the root holds.
	if fi, err := s.root.Stat("."); err != nil {
		return wrap(ReasonStoreUnsafe, s.dir, err)
	} else if err := checkOwned(fi, true); err != nil {
		return wrap(ReasonStoreUnsafe, s.dir, err)
	}
	lock, err := s.openFile(lockName, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return err
	}
	s.lock = lock
	if err := lockFile(lock); err != nil {
		return wrap(ReasonStoreLocked, s.dir, err)
	}
	entries, err := fs.ReadDir(s.root.FS(), ".")
	if err != nil {
		return wrap(ReasonStoreUnsafe, s.dir, err)
	}
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasPrefix(name, tempPrefix):
			// Left by a crash before its rename: never part of the store.
			if err := s.root.Remove(name); err != nil {
				return wrap(ReasonStoreUnsafe, name, err)
			}
		case name == stateName || name == auditName || name == lockName:
		default:
			return refuse(ReasonStoreUnsafe, name, "unexpected file in the store")
		}
	}

	audit, err := s.openFile(auditName, os.O_RDWR|os.O_CREATE|os.O_APPEND)
	if err != nil {
		return err
	}
	s.audit = audit
	data, err := io.ReadAll(audit)
	if err != nil {
		return wrap(ReasonStoreCorrupt, auditName, err)
	}
	log, err := parseAudit(data)
	if err != nil {
		return err
	}

	st := newState()
	if f, err := s.openFile(stateName, os.O_RDONLY); err == nil {
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return wrap(ReasonStoreCorrupt, stateName, err)
		}
		if st, err = decodeState(b); err != nil {
			return wrap(ReasonStoreCorrupt, stateName, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// The state must hold a prefix of the log's decisions.
	if st.AuditCount > uint64(len(log.records)) ||
		(st.AuditCount > 0 && log.hashes[st.AuditCount-1] != st.AuditHead) {
		return refuse(ReasonStoreCorrupt, stateName, "names audit record %d, which the log does not hold", st.AuditCount)
	}
	s.st = st
	s.head, s.count = log.head(), uint64(len(log.records))

	torn := len(data) - log.committed
	unapplied := s.count - st.AuditCount
	if torn == 0 && unapplied == 0 {
		return nil
	}
	if torn > 0 {
		if err := audit.Truncate(int64(log.committed)); err != nil {
			return wrap(ReasonStoreBroken, auditName, err)
		}
		if err := audit.Sync(); err != nil {
			return wrap(ReasonStoreBroken, auditName, err)
		}
	}
	rec := &AuditRecord{Event: eventRecover, Decision: decisionDone}
	if torn > 0 {
		rec.Details = append(rec.Details, fmt.Sprintf("dropped a torn last line of %d bytes", torn))
	}
	for n := st.AuditCount + 1; n <= s.count; n++ {
		rec.Details = append(rec.Details, fmt.Sprintf("record %d was not applied", n))
	}
	return s.commit(st.clone(), rec)
}

// openFile opens name in the store and checks it like the directory.
func (s *Store) openFile(name string, flag int) (*os.File, error) {
	if fi, err := s.root.Lstat(name); err == nil {
		if err := checkOwned(fi, false); err != nil {
			return nil, wrap(ReasonStoreUnsafe, name, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) || flag&os.O_CREATE == 0 {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, wrap(ReasonStoreUnsafe, name, err)
	}
	f, err := s.root.OpenFile(name, flag|noFollow, 0o600)
	if err != nil {
		return nil, wrap(ReasonStoreUnsafe, name, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkOwned(fi, false)
	}
	if err != nil {
		f.Close()
		return nil, wrap(ReasonStoreUnsafe, name, err)
	}
	return f, nil
}

// Close releases the store. A closed store must not be used.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeFiles()
}

func (s *Store) closeFiles() error {
	var errs []error
	if s.audit != nil {
		errs = append(errs, s.audit.Close())
		s.audit = nil
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close()) // drops the flock
		s.lock = nil
	}
	if s.root != nil {
		errs = append(errs, s.root.Close())
		s.root = nil
	}
	if s.broken == nil {
		s.broken = refuse(ReasonStoreBroken, s.dir, "the store is closed")
	}
	return errors.Join(errs...)
}

// commit makes next the store's state with rec as its audit record:
// first the record is appended to the log and fsynced, then state.json is
// replaced atomically. If either write fails the store refuses everything
// until reopened (Open recovers).
func (s *Store) commit(next *state, rec *AuditRecord) error {
	if s.broken != nil {
		return s.broken
	}
	rec.N = s.count + 1
	rec.Prev = s.head
	rec.Time = s.opts.Now().UTC()
	line := marshalRecord(rec)
	if _, err := s.audit.Write(append(line, '\n')); err != nil {
		s.broken = wrap(ReasonStoreBroken, auditName, err)
		return s.broken
	}
	if err := s.audit.Sync(); err != nil {
		s.broken = wrap(ReasonStoreBroken, auditName, err)
		return s.broken
	}
	head := lineHash(line)
	next.AuditCount, next.AuditHead = rec.N, head
	if err := s.writeAtomic(stateName, next.encode()); err != nil {
		s.broken = wrap(ReasonStoreBroken, stateName, err)
		return s.broken
	}
	s.st, s.head, s.count = next, head, rec.N
	s.log.Info("trust decision", "event", rec.Event, "decision", rec.Decision,
		"skill", rec.ID, "version", rec.Version, "digest", rec.Digest, "reasons", rec.Reasons)
	return nil
}

// writeAtomic replaces name with data: a new temporary file, fsync,
// rename over name, fsync of the directory.
func (s *Store) writeAtomic(name string, data []byte) error {
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := tempPrefix + name + "." + hex.EncodeToString(rnd[:])
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.root.Rename(tmp, name)
	}
	if err != nil {
		s.root.Remove(tmp)
		return err
	}
	d, err := s.root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
