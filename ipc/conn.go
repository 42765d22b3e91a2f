package ipc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// Default deadlines.
const (
	// HelloTimeout bounds how long a server waits for the client's Hello.
	HelloTimeout = 5 * time.Second
	// WriteTimeout bounds every write.
	WriteTimeout = 10 * time.Second
	// IdleTimeout bounds how long a server waits for the next request.
	IdleTimeout = 5 * time.Minute
)

// Conn is one end of a Stockade connection: frames, envelopes and deadlines
// over a Unix stream socket. The peer's credentials are read once, when the
// Conn is made, and never change.
type Conn struct {
	nc      *net.UnixConn
	peer    Cred
	readMax int
	wmu     sync.Mutex
	// fds are descriptors received (SCM_RIGHTS) and not yet handed out
	// with a message; only the reading goroutine touches them.
	fds []*os.File
	// acceptFiles lets descriptors arrive at all (SetAcceptFiles).
	acceptFiles bool
}

// NewConn wraps nc. Reads are capped at [ControlFrameMax] until SetReadMax.
func NewConn(nc *net.UnixConn) (*Conn, error) {
	cred, err := PeerCred(nc)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, peer: cred, readMax: ControlFrameMax}, nil
}

// Peer is the kernel's word on who is on the other end, taken at NewConn.
func (c *Conn) Peer() Cred { return c.peer }

// SetAcceptFiles lets messages on c bring file descriptors (SCM_RIGHTS).
// Off by default: a descriptor sent to a Conn that does not accept them ends
// the connection (ErrUnexpectedFD), and is closed, so a peer cannot make a
// reader hold descriptors it never asked for. Call it before the first Recv.
func (c *Conn) SetAcceptFiles(accept bool) { c.acceptFiles = accept }

// SetReadMax sets the frame cap for reads. Only readers of output-carrying
// messages raise it.
func (c *Conn) SetReadMax(n int) { c.readMax = n }

// Close closes the connection. It may be called from any goroutine
// (descriptors a Recv was collecting are closed by that Recv).
func (c *Conn) Close() error { return c.nc.Close() }

// Send writes one message within [WriteTimeout]. A body that would exceed the
// peer's cap is refused here rather than sent. Send is safe for concurrent use.
func (c *Conn) Send(id uint64, kind Kind, body any, max int) error {
	return c.SendFiles(id, kind, body, max, nil)
}

// SendError sends err to the peer as an `error` message. An error that is not
// an *Error goes out as ClassInternal with no detail.
func (c *Conn) SendError(id uint64, err error) error {
	var e *Error
	if !errors.As(err, &e) || !e.valid() {
		e = &Error{Class: ClassInternal, Message: "internal error"}
	}
	return c.Send(id, KindError, e, ControlFrameMax)
}

// Recv reads one message, waiting at most timeout (zero: no deadline).
func (c *Conn) Recv(timeout time.Duration) (*Message, error) {
	var dl time.Time
	if timeout > 0 {
		dl = time.Now().Add(timeout)
	}
	if err := c.nc.SetReadDeadline(dl); err != nil {
		return nil, err
	}
	closeFiles(c.fds) // left by a frame that failed half way
	c.fds = nil
	b, err := ReadFrame(fdReader{c}, c.readMax)
	if err != nil {
		closeFiles(c.fds)
		c.fds = nil
		return nil, err
	}
	m, err := DecodeEnvelope(b)
	if err != nil {
		closeFiles(c.fds)
		c.fds = nil
		return nil, err
	}
	m.files, c.fds = c.fds, nil
	return m, nil
}

// Call sends a request (capped at ControlFrameMax) and waits for the reply
// with the same id, decoding it into reply. A reply of kind error is returned
// as *Error.
func (c *Conn) Call(id uint64, kind Kind, req, reply any, timeout time.Duration) error {
	return c.CallMax(id, kind, req, ControlFrameMax, reply, timeout)
}

// CallMax is Call with the request capped at max bytes.
func (c *Conn) CallMax(id uint64, kind Kind, req any, max int, reply any, timeout time.Duration) error {
	files, err := c.CallFiles(id, kind, req, max, nil, reply, timeout)
	if err == nil && len(files) > 0 {
		err = malformed("reply of kind %q with %d descriptors", kind, len(files))
	}
	closeFiles(files)
	return err
}

// CallFiles is CallMax with files sent along with the request (SCM_RIGHTS),
// returning the descriptors that came with the reply, which the caller
// owns and must close (on error there are none).
func (c *Conn) CallFiles(id uint64, kind Kind, req any, max int, files []*os.File, reply any, timeout time.Duration) ([]*os.File, error) {
	if err := c.SendFiles(id, kind, req, max, files); err != nil {
		// A server that refused us may have closed before reading our
		// request; its reason is then waiting to be read. (A request we
		// refused to send ourselves has no such reason.)
		if !errors.Is(err, ErrFrameTooLarge) {
			if m, rerr := c.Recv(time.Second); rerr == nil && m.Kind == KindError {
				m.CloseFiles()
				return nil, m.Err()
			}
		}
		return nil, err
	}
	m, err := c.Recv(timeout)
	if err != nil {
		return nil, err
	}
	got := m.files
	m.files = nil
	err = func() error {
		if m.ID != id {
			return malformed("reply id %d to request %d", m.ID, id)
		}
		switch m.Kind {
		case KindError:
			if len(got) > 0 {
				return malformed("error with %d descriptors", len(got))
			}
			return m.Err()
		case kind:
			return m.Decode(reply)
		default:
			return malformed("reply of kind %q to %q", m.Kind, kind)
		}
	}()
	if err != nil {
		closeFiles(got)
		return nil, err
	}
	return got, nil
}

// Handshake is the client's side of Hello: it announces ch and checks that the
// server answers for the same protocol, version and channel.
func (c *Conn) Handshake(ch Channel, software string) (Hello, error) {
	var h Hello
	out := Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ch, Software: software}
	if err := c.Call(0, KindHello, out, &h, HelloTimeout); err != nil {
		return h, err
	}
	if h.Proto != ProtocolName || h.Version != ProtocolVersion || h.Channel != ch {
		return h, Errorf(ClassVersionMismatch, "server speaks %s v%d on %q", h.Proto, h.Version, h.Channel)
	}
	return h, nil
}

// Accept is the server's side of Hello. It reads the client's Hello within
// [HelloTimeout]; on a mismatch it sends a typed error and returns it, and the
// caller closes the connection.
func (c *Conn) Accept(ch Channel, software string) error {
	return c.AcceptWithin(ch, software, HelloTimeout)
}

// AcceptWithin is Accept with another deadline for the client's Hello (zero:
// none), for a socket only a trusted party can hold.
func (c *Conn) AcceptWithin(ch Channel, software string, timeout time.Duration) error {
	m, err := c.Recv(timeout)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			_ = c.SendError(0, e)
		}
		return err
	}
	if m.Kind != KindHello {
		err := Errorf(ClassProtocol, "expected hello, got %q", m.Kind)
		_ = c.SendError(m.ID, err)
		return err
	}
	var h Hello
	if err := m.Decode(&h); err != nil {
		_ = c.SendError(m.ID, Errorf(ClassProtocol, "malformed hello"))
		return err
	}
	if h.Proto != ProtocolName || h.Version != ProtocolVersion || h.Channel != ch {
		err := Errorf(ClassVersionMismatch, "this is %s v%d channel %q", ProtocolName, ProtocolVersion, ch)
		_ = c.SendError(m.ID, err)
		return fmt.Errorf("client hello %s v%d channel %q: %w", h.Proto, h.Version, h.Channel, err)
	}
	return c.Send(m.ID, KindHello, Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ch, Software: software}, ControlFrameMax)
}

// ConnLimiter caps the connections open at once per peer uid.
type ConnLimiter struct {
	mu    sync.Mutex
	max   int
	count map[uint32]int
}

// NewConnLimiter allows max connections per uid.
func NewConnLimiter(max int) *ConnLimiter {
	return &ConnLimiter{max: max, count: make(map[uint32]int)}
}

// Acquire takes a slot for uid and reports whether one was free.
func (l *ConnLimiter) Acquire(uid uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count[uid] >= l.max {
		return false
	}
	l.count[uid]++
	return true
}

// Release gives back a slot taken by Acquire.
func (l *ConnLimiter) Release(uid uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count[uid]--; l.count[uid] <= 0 {
		delete(l.count, uid)
	}
}
