package broker

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/ipc"
)

// verifierLink is the broker's connection to the verifier. The supervisor
// hands the broker a new socket each time either role (re)starts. One
// goroutine reads the replies and hands each to the request of its id; a
// reply that comes after its request gave up (a slow resolve) is
// discarded, and the link stays in step. Requests may run concurrently.
type verifierLink struct {
	log *slog.Logger

	mu      sync.Mutex
	conn    *ipc.Conn
	id      uint64
	pending map[uint64]chan *ipc.Message
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
	v.conn, v.pending = c, map[uint64]chan *ipc.Message{}
	v.mu.Unlock()
	if old != nil {
		old.Close() // its reader fails its pending requests
	}
	go v.read(c)
	v.log.Info("verifier linked")
}

// read delivers c's replies until c fails; then the link is gone (until
// the supervisor hands a new one) and its pending requests fail.
func (v *verifierLink) read(c *ipc.Conn) {
	for {
		m, err := c.Recv(0)
		v.mu.Lock()
		if v.conn != c {
			v.mu.Unlock()
			if m != nil {
				m.CloseFiles()
			}
			return
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				v.log.Error("verifier link failed", "err", err)
			}
			for _, ch := range v.pending {
				close(ch)
			}
			v.conn, v.pending = nil, nil
			v.mu.Unlock()
			c.Close()
			return
		}
		ch, ok := v.pending[m.ID]
		delete(v.pending, m.ID)
		v.mu.Unlock()
		if !ok {
			m.CloseFiles() // its request gave up
			continue
		}
		ch <- m
	}
}

// call sends one request and waits for its reply until timeout. The reply
// is of kind (decoded into reply, with the descriptors it brought, which
// the caller owns) or an error.
func (v *verifierLink) call(kind ipc.Kind, req, reply any, timeout time.Duration) ([]*os.File, error) {
	ch := make(chan *ipc.Message, 1)
	v.mu.Lock()
	c := v.conn
	if c == nil {
		v.mu.Unlock()
		return nil, errNoVerifier
	}
	v.id++
	id := v.id
	v.pending[id] = ch
	v.mu.Unlock()
	forget := func() {
		v.mu.Lock()
		if v.conn == c {
			delete(v.pending, id)
		}
		v.mu.Unlock()
	}
	if err := c.Send(id, kind, req, ipc.ControlFrameMax); err != nil {
		forget()
		return nil, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, errNoVerifier
		}
		files := m.Files()
		var err error
		switch m.Kind {
		case ipc.KindError:
			err = m.Err()
		case kind:
			err = m.Decode(reply)
		default:
			err = fmt.Errorf("%w: reply of kind %q to %q", ipc.ErrMalformed, m.Kind, kind)
		}
		if err != nil {
			m.CloseFiles()
			return nil, err
		}
		return files, nil
	case <-t.C:
		forget()
		return nil, fmt.Errorf("the verifier did not answer %s within %v: %w", kind, timeout, context.DeadlineExceeded)
	}
}

// status asks the verifier for its status.
func (v *verifierLink) status() (ipc.RoleStatus, error) {
	var st ipc.RoleStatus
	files, err := v.call(ipc.KindStatus, ipc.Empty{}, &st, 5*time.Second)
	for _, f := range files {
		f.Close()
	}
	if err == nil && len(files) > 0 {
		err = fmt.Errorf("%w: status with descriptors", ipc.ErrMalformed)
	}
	return st, err
}

// resolveTimeout bounds a resolve without a deadline of its own: the
// verifier re-hashes the release's files (up to 128 MiB) before answering.
const resolveTimeout = 30 * time.Second

// maxModuleBytes bounds one module the verifier hands over: what a skill
// archive may hold in one file (verifier/skill's default limit).
const maxModuleBytes = 16 << 20

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
	sum    [sha256.Size]byte
	Size   int64
	// MemoryLimitPages is the memory cap the module was audited against;
	// the runtime must impose it.
	MemoryLimitPages uint32
	// File is the sealed memfd (write, grow and shrink sealed, of Size
	// bytes) the module came in; Read gives its bytes.
	File *os.File
}

// Read returns the module's bytes, hashed against SHA256. The broker needs
// them only when it instruments a module it has not seen.
func (m SkillModule) Read() ([]byte, error) {
	data, err := ipc.ReadSealed(m.File, m.Size, m.sum)
	if err != nil {
		return nil, fmt.Errorf("module %q: %w", m.Path, err)
	}
	return data, nil
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
	files, err := v.call(ipc.KindResolve, ipc.ResolveRequest{ID: id, Version: version}, &res, timeout)
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

// checkResolved checks a resolve reply against the request and its memfds
// against their descriptions, and builds the result.
func checkResolved(res *ipc.Resolved, files []*os.File, id, version string) (*ResolvedSkill, error) {
	if res.ID != id || (version != "" && res.Version != version) {
		return nil, fmt.Errorf("%w: resolved %s@%s", ipc.ErrMalformed, res.ID, res.Version)
	}
	if _, err := ipc.ParseSHA256(res.Digest); err != nil {
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
		sum, err := ipc.ParseSHA256(m.SHA256)
		if err != nil {
			return nil, fmt.Errorf("module %q: %w", m.Path, err)
		}
		if m.Size < 0 || m.Size > maxModuleBytes {
			return nil, fmt.Errorf("%w: module %q of %d bytes", ipc.ErrMalformed, m.Path, m.Size)
		}
		// The bytes are read (and hashed again) only when they are needed:
		// the broker instruments a module once per digest.
		if err := ipc.CheckSealed(files[i], m.Size); err != nil {
			return nil, fmt.Errorf("module %q: %w", m.Path, err)
		}
		out.Modules = append(out.Modules, SkillModule{
			Path: m.Path, SHA256: m.SHA256, sum: sum, Size: m.Size, MemoryLimitPages: m.MemoryLimitPages,
			File: files[i],
		})
	}
	return out, nil
}
