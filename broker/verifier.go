package broker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/ipc"
)

// verifierLink is the broker's connection to the verifier. The supervisor
// hands the broker a new socket each time either role (re)starts.
type verifierLink struct {
	log *slog.Logger

	mu   sync.Mutex
	conn *ipc.Conn
	id   uint64
}

var errNoVerifier = errors.New("verifier not connected")

// replace installs a new link socket from the supervisor.
func (v *verifierLink) replace(f *os.File) {
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		v.log.Error("verifier link", "err", err)
		return
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		nc.Close()
		v.log.Error("verifier link is not a unix socket")
		return
	}
	c, err := ipc.NewConn(uc)
	if err != nil {
		uc.Close()
		v.log.Error("verifier link", "err", err)
		return
	}
	// Resolve replies carry a skill's manifest; the verifier is the
	// only peer on this socket.
	c.SetReadMax(ipc.ResolveFrameMax)
	c.SetAcceptFiles(true) // resolve's module memfds
	if _, err := c.Handshake(ipc.ChannelVerifier, "stockade-broker"); err != nil {
		c.Close()
		v.log.Error("verifier handshake", "err", err)
		return
	}
	v.mu.Lock()
	old := v.conn
	v.conn = c
	v.mu.Unlock()
	if old != nil {
		old.Close()
	}
	v.log.Info("verifier linked")
}

// status asks the verifier for its status.
func (v *verifierLink) status() (ipc.RoleStatus, error) {
	var st ipc.RoleStatus
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.conn == nil {
		return st, errNoVerifier
	}
	v.id++
	err := v.conn.Call(v.id, ipc.KindStatus, ipc.Empty{}, &st, 5*time.Second)
	return st, err
}

// resolveTimeout bounds a resolve without a deadline of its own: the
// verifier re-hashes the release's files (up to 128 MiB) before answering.
const resolveTimeout = 30 * time.Second

// maxModuleBytes bounds one module the verifier hands over: what a skill
// archive may hold in one file (verifier/skill's default limit).
const maxModuleBytes = 16 << 20

// parseDigest parses "sha256:" and 64 lower-case hex digits.
func parseDigest(s string) ([sha256.Size]byte, error) {
	var d [sha256.Size]byte
	h, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(h) != 2*sha256.Size || strings.ToLower(h) != h {
		return d, fmt.Errorf("%w: digest %q", ipc.ErrMalformed, s)
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return d, fmt.Errorf("%w: digest %q", ipc.ErrMalformed, s)
	}
	return d, nil
}

// ResolvedSkill is the active release of a skill as the verifier resolved it
// just now: the store's current state, the files re-hashed on disk. The
// broker owns it and must Close it.
type ResolvedSkill struct {
	ID       string
	Version  string
	Sequence uint64
	// Digest is the statement digest ("sha256:<hex>"), the release's name
	// in attestations; Publisher the signing key's fingerprint.
	Digest    string
	Publisher string
	Manifest  ipc.SkillManifest
	// Modules are the modules the manifest's tools name, by path.
	Modules []SkillModule
}

// SkillModule is one module of a resolved skill.
type SkillModule struct {
	Path   string
	SHA256 string // "sha256:<hex>"
	Size   int64
	// MemoryLimitPages is the memory cap the module was audited against;
	// the runtime must impose it.
	MemoryLimitPages uint32
	// Data are the module's bytes, hashed here against SHA256.
	Data []byte
	// File is the sealed memfd the bytes came in (write, grow and shrink
	// sealed), to hand to an executor without a copy.
	File *os.File
}

// Module returns the module at path.
func (r *ResolvedSkill) Module(path string) (SkillModule, bool) {
	for _, m := range r.Modules {
		if m.Path == path {
			return m, true
		}
	}
	return SkillModule{}, false
}

// Close closes the modules' memfds.
func (r *ResolvedSkill) Close() error {
	var errs []error
	for _, m := range r.Modules {
		if m.File != nil {
			errs = append(errs, m.File.Close())
		}
	}
	return errors.Join(errs...)
}

// Resolve asks the verifier for the active release of skill id (version ""
// for whichever is active; otherwise it must be the active one's). Only an
// active release resolves, read from the trust store's current state, so a
// revocation or disable takes effect on the next call. A refusal is an
// *ipc.Error whose Reason says why: not_found, not_active, disabled,
// revoked, tampered (the files changed on disk; the verifier quarantined
// the release), bad_request, store, internal. Every module's memfd is
// checked here: sealed, of the announced size, hashing to the announced
// digest.
func (v *verifierLink) Resolve(ctx context.Context, id, version string) (*ResolvedSkill, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	timeout := resolveTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
		if timeout <= 0 {
			return nil, context.DeadlineExceeded
		}
	}
	var res ipc.Resolved
	v.mu.Lock()
	if v.conn == nil {
		v.mu.Unlock()
		return nil, errNoVerifier
	}
	v.id++
	files, err := v.conn.CallFiles(v.id, ipc.KindResolve, ipc.ResolveRequest{ID: id, Version: version},
		ipc.ControlFrameMax, nil, &res, timeout)
	if err != nil && !isRefusal(err) {
		// The link is out of step (a timeout leaves a reply in flight):
		// drop it; the supervisor hands a new one when the verifier
		// restarts.
		v.conn.Close()
		v.conn = nil
	}
	v.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out, err := checkResolved(&res, files, id, version)
	if err != nil {
		for _, f := range files {
			f.Close()
		}
		return nil, fmt.Errorf("verifier resolve of %s: %w", id, err)
	}
	return out, nil
}

// isRefusal reports whether err is the verifier's typed answer (the link
// stays usable) rather than a broken link.
func isRefusal(err error) bool {
	var e *ipc.Error
	return errors.As(err, &e) && e.Class != ipc.ClassProtocol && e.Class != ipc.ClassVersionMismatch
}

// checkResolved checks a resolve reply against the request and its memfds
// against their descriptions, and builds the result.
func checkResolved(res *ipc.Resolved, files []*os.File, id, version string) (*ResolvedSkill, error) {
	if res.ID != id || (version != "" && res.Version != version) {
		return nil, fmt.Errorf("%w: resolved %s@%s", ipc.ErrMalformed, res.ID, res.Version)
	}
	if _, err := parseDigest(res.Digest); err != nil {
		return nil, err
	}
	if len(files) != len(res.Modules) {
		return nil, fmt.Errorf("%w: %d modules, %d descriptors", ipc.ErrMalformed, len(res.Modules), len(files))
	}
	out := &ResolvedSkill{
		ID: res.ID, Version: res.Version, Sequence: res.Sequence, Digest: res.Digest,
		Publisher: res.Publisher, Manifest: res.Manifest,
	}
	for i, m := range res.Modules {
		sum, err := parseDigest(m.SHA256)
		if err != nil {
			return nil, fmt.Errorf("module %q: %w", m.Path, err)
		}
		if m.Size < 0 || m.Size > maxModuleBytes {
			return nil, fmt.Errorf("%w: module %q of %d bytes", ipc.ErrMalformed, m.Path, m.Size)
		}
		data, err := ipc.ReadSealed(files[i], m.Size, sum)
		if err != nil {
			return nil, fmt.Errorf("module %q: %w", m.Path, err)
		}
		out.Modules = append(out.Modules, SkillModule{
			Path: m.Path, SHA256: m.SHA256, Size: m.Size, MemoryLimitPages: m.MemoryLimitPages,
			Data: data, File: files[i],
		})
	}
	return out, nil
}
