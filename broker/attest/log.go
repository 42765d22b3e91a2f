package attest

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LogDirName is the log's directory in the broker's state directory.
const LogDirName = "attestations"

// DefaultMaxFileSize is the size past which the log moves to a new file.
const DefaultMaxFileSize = 64 << 20

// Log file names: attest-00000001.log, attest-00000002.log, ... numbered in
// order; the number has at least 8 digits.
const (
	logPrefix = "attest-"
	logSuffix = ".log"
)

func logName(i uint64) string { return fmt.Sprintf("%s%08d%s", logPrefix, i, logSuffix) }

// parseLogName returns the number of a log file's name, refusing anything
// but the exact pattern (no signs, no spaces, no other suffix).
func parseLogName(name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, logPrefix)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, logSuffix); !ok || len(s) < 8 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || logName(n) != name {
		return 0, false
	}
	return n, true
}

// LogFiles lists the log files of a log directory in chain order.
func LogFiles(dir string) ([]string, error) {
	idx, err := logIndexes(dir)
	if err != nil {
		return nil, err
	}
	files := make([]string, len(idx))
	for i, n := range idx {
		files[i] = filepath.Join(dir, logName(n))
	}
	return files, nil
}

func logIndexes(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("attest: %w", err)
	}
	var idx []uint64
	for _, e := range ents {
		if n, ok := parseLogName(e.Name()); ok && e.Type().IsRegular() {
			idx = append(idx, n)
		}
	}
	slices.Sort(idx)
	return idx, nil
}

// Errors of the log.
var (
	// ErrLogBusy: another process holds the log directory.
	ErrLogBusy = errors.New("attest: log busy")
	// ErrLogCorrupt: the log is damaged other than by a torn last record.
	// OpenLog changes nothing; an administrator decides.
	ErrLogCorrupt = errors.New("attest: log corrupt")
	// ErrForeignKey: the log was signed by another key than the one given.
	ErrForeignKey = errors.New("attest: log signed by another key")
	// ErrLogFailed: a write or sync failed; the log refuses every later
	// append until it is opened again (which recovers it).
	ErrLogFailed = errors.New("attest: log failed")
	// ErrLogClosed: the log was closed.
	ErrLogClosed = errors.New("attest: log closed")
)

// Options configure a Log.
type Options struct {
	// MaxFileSize is the size in bytes past which the next record goes to
	// a new file. A file always takes at least one record. 0 means
	// DefaultMaxFileSize.
	MaxFileSize int64
	// Logger receives what OpenLog recovered; nil discards.
	Logger *slog.Logger
}

// Recovery describes a torn tail that OpenLog cut off.
type Recovery struct {
	File    string // the log file
	Offset  int64  // where it was cut: the end of its last good record
	Dropped int64  // how many bytes were cut
	SavedAs string // the file the cut bytes were saved to
	Reason  string // what was wrong with them
}

// Log is an append-only, hash-chained, signed log of attestation records
// in a directory. It is safe for concurrent use; appends are serialized.
type Log struct {
	dir  string
	dirf *os.File // the directory: flock-ed, and synced after a new file
	key  *Key
	max  int64
	log  *slog.Logger

	mu      sync.Mutex
	f       *os.File // the current file
	index   uint64   // its number
	size    int64    // its size: where the next frame goes
	records int      // records in it
	head    Link     // the last record; zero before the first
	err     error    // sticky: set once a write or sync failed, or on Close
	buf     []byte
	rec     *Recovery
}

// OpenLog opens (creating if needed, mode 0700) the log in dir for
// appending with key, takes an exclusive lock on it, and recovers it:
//
//   - The newest file is read and its records are checked for the chain
//     (sequence and previous hash, record to record); the last record's
//     signature is checked with key, which by the chain vouches for the
//     file.
//   - A torn tail, the prefix of one frame that a crash in the middle of an
//     append leaves, or a last frame that does not verify, is cut off after
//     its bytes are saved next to the file (FILE.torn-OFFSET). Nothing else
//     is ever cut: damage that is not at the very end, that spans more than
//     one frame, or that is followed by a valid record is ErrLogCorrupt,
//     and the files are left as they are.
//   - A log written with another key is ErrForeignKey.
//
// OpenLog checks the newest file only (and the one before it when the newest
// has no records yet). [VerifyFiles] checks a whole log.
func OpenLog(dir string, key *Key, opts Options) (*Log, error) {
	if key == nil {
		return nil, errors.New("attest: no key")
	}
	if opts.MaxFileSize < 0 {
		return nil, fmt.Errorf("attest: negative MaxFileSize")
	}
	l := &Log{dir: dir, key: key, max: opts.MaxFileSize, log: opts.Logger}
	if l.max == 0 {
		l.max = DefaultMaxFileSize
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("attest: log directory: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("attest: log directory: %w", err)
	}
	l.dirf = d
	if err := lockDir(d); err != nil {
		d.Close()
		return nil, err
	}
	if err := l.open(); err != nil {
		if l.f != nil {
			l.f.Close()
		}
		d.Close()
		return nil, err
	}
	return l, nil
}

func (l *Log) open() error {
	idx, err := logIndexes(l.dir)
	if err != nil {
		return err
	}
	if len(idx) == 0 {
		return l.newFile(1)
	}
	last := idx[len(idx)-1]
	if err := l.recoverFile(last); err != nil {
		return err
	}
	if l.records > 0 {
		return nil
	}
	// The newest file has no records (a crash right after a rotation): the
	// chain continues from the newest earlier file that has some.
	for i := len(idx) - 2; i >= 0; i-- {
		head, n, err := l.fileHead(idx[i])
		if err != nil {
			return err
		}
		if n > 0 {
			l.head = head
			return nil
		}
	}
	return nil
}

// frameInfo is a record the recovery scan read, and where.
type frameInfo struct {
	s   Signed
	off int64
}

// recoverFile opens file n for appending, cutting off a torn tail.
func (l *Log) recoverFile(n uint64) error {
	path := filepath.Join(l.dir, logName(n))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("attest: %w", err)
	}
	l.f, l.index = f, n
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("attest: %w", err)
	}
	size := fi.Size()
	header := appendHeader(nil, l.key.pub)
	if size < int64(headerSize) {
		// A crash while the file was being started: its bytes must be a
		// prefix of the header this key writes, and it is started again.
		b := make([]byte, size)
		if _, err := io.ReadFull(f, b); err != nil {
			return fmt.Errorf("attest: %w", err)
		}
		if !bytes.HasPrefix(header, b) {
			return fmt.Errorf("%w: %s: %d bytes that are not a log header", ErrLogCorrupt, path, size)
		}
		if size > 0 {
			if err := l.cut(path, 0, size, "torn header"); err != nil {
				return err
			}
		}
		if _, err := f.WriteAt(header, 0); err != nil {
			return fmt.Errorf("attest: %w", err)
		}
		if err := f.Sync(); err != nil {
			return fmt.Errorf("attest: %w", err)
		}
		l.size = int64(headerSize)
		return nil
	}
	rd, err := NewReader(path, io.NewSectionReader(f, 0, size))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrLogCorrupt, err)
	}
	if !bytes.Equal(rd.pub, l.key.pub) {
		return fmt.Errorf("%w: %s was written with key %s, not %s", ErrForeignKey, path, KeyIDOf(rd.pub), l.key.id)
	}
	// Read records while they chain; stop at the first that does not read
	// or does not follow from the one before.
	var frames []frameInfo
	count := 0 // records that chain
	end, why := size, ""
	for {
		off := rd.Offset()
		s, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			end, why = off, err.Error()
			break
		}
		if s.Record.KeyID != l.key.id {
			return fmt.Errorf("%w: %s record %d was signed by key %s, not %s", ErrForeignKey, path, rd.Index()-1, s.Record.KeyID, l.key.id)
		}
		if k := len(frames); k > 0 {
			prev := frames[k-1].s
			if s.Record.Seq != prev.Record.Seq+1 || s.Record.Prev != prev.Hash {
				end, why = off, fmt.Sprintf("record %d does not follow seq %d", rd.Index()-1, prev.Record.Seq)
				break
			}
		}
		// Keep the last two: the last may be the torn one.
		if len(frames) == 2 {
			frames[0], frames = frames[1], frames[:1]
		}
		frames = append(frames, frameInfo{s: s, off: off})
		count++
	}
	// The last record must verify: it vouches for the file. If it does not
	// and nothing follows it, it is the torn one (a crash can leave a whole
	// frame whose last bytes never reached the disk).
	if k := len(frames); k > 0 && !l.verifies(&frames[k-1].s) {
		if end != size {
			return fmt.Errorf("%w: %s: the record at offset %d does not verify, and more follows it", ErrLogCorrupt, path, frames[k-1].off)
		}
		end, why = frames[k-1].off, "the last record's signature does not verify"
		frames = frames[:k-1]
		count--
		if k-1 > 0 && !l.verifies(&frames[k-2].s) {
			return fmt.Errorf("%w: %s: the record at offset %d does not verify", ErrLogCorrupt, path, frames[k-2].off)
		}
	}
	if end < size {
		if err := l.checkTornTail(f, path, end, size); err != nil {
			return err
		}
		if err := l.cut(path, end, size-end, why); err != nil {
			return err
		}
	}
	l.size, l.records = end, count
	if k := len(frames); k > 0 {
		last := frames[k-1].s
		l.head = Link{Seq: last.Record.Seq, Hash: last.Hash}
	}
	return nil
}

func (l *Log) verifies(s *Signed) bool {
	return len(s.Signature) == ed25519.SignatureSize && ed25519.Verify(l.key.pub, signedMessage(s.Encoded), s.Signature)
}

// checkTornTail decides whether the bytes from end to size can be what a
// crash in the middle of one append leaves: no more than one frame, and no
// valid record of this key starting anywhere in them (the append that was
// torn was the last; a valid record after the damage means the damage is
// not a torn tail).
func (l *Log) checkTornTail(f *os.File, path string, end, size int64) error {
	if size-end > int64(maxFrameSize) {
		return fmt.Errorf("%w: %s: %d bad bytes from offset %d, more than one record", ErrLogCorrupt, path, size-end, end)
	}
	tail := make([]byte, size-end)
	if _, err := f.ReadAt(tail, end); err != nil {
		return fmt.Errorf("attest: %w", err)
	}
	for q := range tail {
		if _, _, ok := parseFrame(tail[q:], l.key.pub); ok {
			return fmt.Errorf("%w: %s: a valid record at offset %d follows bad bytes at offset %d", ErrLogCorrupt, path, end+int64(q), end)
		}
	}
	return nil
}

// cut saves the bytes from off to off+n of the current file beside it and
// truncates the file at off.
func (l *Log) cut(path string, off, n int64, why string) error {
	b := make([]byte, n)
	if _, err := l.f.ReadAt(b, off); err != nil {
		return fmt.Errorf("attest: %w", err)
	}
	saved := fmt.Sprintf("%s.torn-%d", path, off)
	sf, err := os.OpenFile(saved, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		saved = fmt.Sprintf("%s.torn-%d-%d", path, off, time.Now().UnixNano())
		sf, err = os.OpenFile(saved, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		return fmt.Errorf("attest: saving a torn tail: %w", err)
	}
	_, err = sf.Write(b)
	if err == nil {
		err = sf.Sync()
	}
	if cerr := sf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("attest: saving a torn tail: %w", err)
	}
	if err := l.f.Truncate(off); err != nil {
		return fmt.Errorf("attest: cutting a torn tail: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("attest: cutting a torn tail: %w", err)
	}
	if err := syncDirFile(l.dirf); err != nil {
		return err
	}
	l.rec = &Recovery{File: path, Offset: off, Dropped: n, SavedAs: saved, Reason: why}
	l.log.Warn("attestation log: cut a torn tail", "file", path, "offset", off, "bytes", n, "saved_as", saved, "reason", why)
	return nil
}

// fileHead reads an earlier, finished file and returns its last record,
// which must verify; a finished file has no torn tail.
func (l *Log) fileHead(n uint64) (Link, int, error) {
	path := filepath.Join(l.dir, logName(n))
	f, err := os.Open(path)
	if err != nil {
		return Link{}, 0, fmt.Errorf("attest: %w", err)
	}
	defer f.Close()
	rd, err := NewReader(path, f)
	if err != nil {
		return Link{}, 0, fmt.Errorf("%w: %v", ErrLogCorrupt, err)
	}
	if !bytes.Equal(rd.pub, l.key.pub) {
		return Link{}, 0, fmt.Errorf("%w: %s was written with key %s, not %s", ErrForeignKey, path, KeyIDOf(rd.pub), l.key.id)
	}
	var last *Signed
	for {
		s, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Link{}, 0, fmt.Errorf("%w: %v", ErrLogCorrupt, err)
		}
		if last != nil && (s.Record.Seq != last.Record.Seq+1 || s.Record.Prev != last.Hash) {
			return Link{}, 0, fmt.Errorf("%w: %s record %d does not follow seq %d", ErrLogCorrupt, path, rd.Index()-1, last.Record.Seq)
		}
		last = &s
	}
	if last == nil {
		return Link{}, 0, nil
	}
	if last.Record.KeyID != l.key.id {
		return Link{}, 0, fmt.Errorf("%w: %s was signed by key %s, not %s", ErrForeignKey, path, last.Record.KeyID, l.key.id)
	}
	if !l.verifies(last) {
		return Link{}, 0, fmt.Errorf("%w: %s: the last record does not verify", ErrLogCorrupt, path)
	}
	return Link{Seq: last.Record.Seq, Hash: last.Hash}, rd.Index(), nil
}

// newFile starts file n: created (never reused), its header written and
// synced, then the directory synced so that its name survives a crash.
func (l *Log) newFile(n uint64) error {
	path := filepath.Join(l.dir, logName(n))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("attest: new log file: %w", err)
	}
	header := appendHeader(nil, l.key.pub)
	_, err = f.WriteAt(header, 0)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = syncDirFile(l.dirf)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("attest: new log file: %w", err)
	}
	old := l.f
	l.f, l.index, l.size, l.records = f, n, int64(headerSize), 0
	if old != nil {
		// Every record in it was synced by its Append.
		old.Close()
	}
	return nil
}

// Append signs rec as the next record of the log and writes it. It fills
// rec's Seq, Prev and KeyID, and returns once the record is on disk (the
// file synced): a record Append returned survives a crash. An invalid
// record is refused and changes nothing. A failed write or sync makes the
// log refuse every later append (ErrLogFailed); opening it again recovers
// it.
func (l *Log) Append(rec Record) (Signed, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return Signed{}, l.err
	}
	rec.Seq, rec.Prev, rec.KeyID = l.head.Seq+1, l.head.Hash, l.key.id
	enc, err := Encode(&rec)
	if err != nil {
		return Signed{}, err
	}
	sig := l.key.sign(enc)
	need := int64(frameOverhead + len(enc))
	if l.records > 0 && l.size+need > l.max {
		if err := l.newFile(l.index + 1); err != nil {
			return Signed{}, l.fail(err)
		}
	}
	l.buf = appendFrame(l.buf[:0], enc, sig)
	if _, err := l.f.WriteAt(l.buf, l.size); err != nil {
		return Signed{}, l.fail(err)
	}
	if err := syncData(l.f); err != nil {
		return Signed{}, l.fail(err)
	}
	l.size += need
	l.records++
	s := Signed{Record: rec, Encoded: enc, Signature: sig, Hash: HashRecord(enc)}
	l.head = Link{Seq: rec.Seq, Hash: s.Hash}
	return s, nil
}

func (l *Log) fail(err error) error {
	l.err = fmt.Errorf("%w: %v", ErrLogFailed, err)
	return l.err
}

// Head returns the last record's sequence number and hash (zero before
// the first record).
func (l *Log) Head() Link {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head
}

// Err is nil while the log takes appends, and ErrLogFailed or ErrLogClosed
// once it does not. A broker checks it before running a call, so that no
// call runs that cannot be attested.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Recovered describes the torn tail OpenLog cut off, or is nil.
func (l *Log) Recovered() *Recovery { return l.rec }

// Close closes the current file and releases the directory lock. Appends
// after Close fail with ErrLogClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if errors.Is(l.err, ErrLogClosed) {
		return nil
	}
	l.err = ErrLogClosed
	err := l.f.Close()
	if derr := l.dirf.Close(); err == nil {
		err = derr
	}
	return err
}
