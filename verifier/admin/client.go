package admin

import (
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/ipc"
)

// Software names the client in Hello.
const Software = "stockade-verifier-cli"

// ReplyFrameMax caps the verifier's replies on admin.sock: a list or show
// of many releases, or an install's audit report, may pass 64 KiB.
// Requests stay within ipc.ControlFrameMax.
const ReplyFrameMax = 4 << 20

// Timeouts for a request. Install and doctor hash and audit whole skills,
// so they get longer.
const (
	CallTimeout = 30 * time.Second
	LongTimeout = 10 * time.Minute
)

// Client is a connection to the verifier's admin.sock. Its methods are safe
// for concurrent use; requests go one at a time.
type Client struct {
	mu sync.Mutex
	c  *ipc.Conn
	id uint64
}

// Dial connects to the admin socket at path and says Hello. A peer that is
// not an admin gets *Error{Reason: ReasonDenied}.
func Dial(path string) (*Client, error) {
	nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	c, err := ipc.NewConn(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c.SetReadMax(ReplyFrameMax)
	if _, err := c.Handshake(ipc.ChannelAdmin, Software); err != nil {
		c.Close()
		return nil, fromWire(err)
	}
	return &Client{c: c}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.Close() }

func (c *Client) call(kind ipc.Kind, req, reply any, timeout time.Duration, files ...*os.File) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id++
	got, err := c.c.CallFiles(c.id, kind, req, ipc.ControlFrameMax, files, reply, timeout)
	for _, f := range got {
		f.Close()
	}
	if err == nil && len(got) > 0 {
		err = &Error{Reason: ReasonProtocol, Message: fmt.Sprintf("%s reply with descriptors", kind)}
	}
	return fromWire(err)
}

// Status asks the verifier for its status.
func (c *Client) Status() (ipc.RoleStatus, error) {
	var st ipc.RoleStatus
	err := c.call(ipc.KindStatus, ipc.Empty{}, &st, CallTimeout)
	return st, err
}

// Install hands the verifier a skill archive and its detached .sig as open
// files (the verifier reads them through the descriptors and opens no
// path). Both must be regular files. The reply is the release as the
// trust store admitted it (usually quarantined, with reasons) and its
// audit report. A refusal is an *Error: invalid, malformed, revoked,
// rollback, equivocation, ...
func (c *Client) Install(archive, sig *os.File) (Release, error) {
	var r Release
	if archive == nil || sig == nil {
		return r, &Error{Reason: ReasonBadRequest, Message: "install needs the archive and its .sig"}
	}
	err := c.call(ipc.KindInstall, InstallRequest{}, &r, LongTimeout, archive, sig)
	return r, err
}

// List returns every release the store holds, by id and sequence.
func (c *Client) List() ([]Release, error) {
	var l ReleaseList
	err := c.call(ipc.KindList, ipc.Empty{}, &l, CallTimeout)
	return l.Releases, err
}

// Show returns what the store holds about one skill id.
func (c *Client) Show(id string) (SkillInfo, error) {
	var s SkillInfo
	err := c.call(ipc.KindShow, SkillRef{ID: id}, &s, CallTimeout)
	return s, err
}

// Promote makes the release id@version active, if digest ("sha256:<hex>")
// is its statement digest; its files are re-hashed first.
func (c *Client) Promote(id, version, digest string) (Release, error) {
	var r Release
	err := c.call(ipc.KindPromote, ReleaseRef{ID: id, Version: version, Digest: digest}, &r, LongTimeout)
	return r, err
}

// Disable stops the skill's active release from running, at once.
func (c *Client) Disable(id string) error {
	return c.call(ipc.KindDisable, SkillRef{ID: id}, &ipc.Empty{}, CallTimeout)
}

// Enable makes the skill's disabled release active again.
func (c *Client) Enable(id string) error {
	return c.call(ipc.KindEnable, SkillRef{ID: id}, &ipc.Empty{}, CallTimeout)
}

// Remove forgets a quarantined or superseded release and deletes its files.
// digest may be "" when only one release has that version.
func (c *Client) Remove(id, version, digest string) error {
	return c.call(ipc.KindRemove, ReleaseRef{ID: id, Version: version, Digest: digest}, &ipc.Empty{}, CallTimeout)
}

// RevokeKey revokes a publisher key (fingerprint), permanently.
func (c *Client) RevokeKey(fp string) error {
	return c.call(ipc.KindRevokeKey, KeyRef{Fingerprint: fp}, &ipc.Empty{}, CallTimeout)
}

// RevokeSkill revokes the release of skill id whose statement digest is
// digest, permanently; the store need not hold it yet.
func (c *Client) RevokeSkill(id, digest string) error {
	return c.call(ipc.KindRevokeSkill, ReleaseRef{ID: id, Digest: digest}, &ipc.Empty{}, CallTimeout)
}

// TrustList returns every key the store knows.
func (c *Client) TrustList() ([]Key, error) {
	var l KeyList
	err := c.call(ipc.KindTrustList, ipc.Empty{}, &l, CallTimeout)
	return l.Keys, err
}

// ImportRotation hands the verifier a key-rotation envelope (the file
// skill.SignRotation makes, `stockade-verifier trust rotate`), signed by
// both keys. The reply is the new key with the skills now pinned to it.
func (c *Client) ImportRotation(envelope []byte) (Key, error) {
	var k Key
	err := c.call(ipc.KindImportRotation, RotationRequest{Envelope: envelope}, &k, CallTimeout)
	return k, err
}

// Doctor re-hashes every installed skill against its signed statement and
// checks the store and its audit chain. It changes nothing.
func (c *Client) Doctor() (DoctorReport, error) {
	var d DoctorReport
	err := c.call(ipc.KindDoctor, ipc.Empty{}, &d, LongTimeout)
	return d, err
}
