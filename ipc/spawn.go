package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// The spawn channel joins the broker to the supervisor (stockaded). It is a
// SOCK_SEQPACKET socketpair inherited by the broker; it is the only thing the
// supervisor parses, so its messages have a fixed size and no encoding:
//
//	broker                                   supervisor (root in production)
//	  SPWN seq            (8 bytes) ───────►  fork+exec one stockade-exec with
//	                                          one end of a new socketpair as fd 3
//	                      ◄─────────────────  SPWN seq code (12 bytes)
//	                                          + the other end (SCM_RIGHTS) if code 0
//	                      ◄─────────────────  LINK 0 0 (12 bytes) + a new broker↔verifier
//	                                          socket, unsolicited, after the verifier restarts
//
// A packet of another size or magic ends the channel (the supervisor then
// restarts the broker).

const (
	// SpawnRequestSize is the exact size of a spawn request.
	SpawnRequestSize = 8
	// SpawnReplySize is the exact size of a spawn reply or link notice.
	SpawnReplySize = 12
)

var (
	magicSpawn = [4]byte{'S', 'P', 'W', 'N'}
	magicLink  = [4]byte{'L', 'I', 'N', 'K'}
)

// Spawn reply codes.
const (
	SpawnOK          uint32 = 0
	SpawnUnavailable uint32 = 1 // the executor could not be started
)

// SpawnRequest asks the supervisor for one executor.
type SpawnRequest struct{ Seq uint32 }

// Marshal encodes r in its fixed form.
func (r SpawnRequest) Marshal() []byte {
	b := make([]byte, 0, SpawnRequestSize)
	b = append(b, magicSpawn[:]...)
	return binary.BigEndian.AppendUint32(b, r.Seq)
}

// ParseSpawnRequest accepts exactly one well-formed request and nothing else.
func ParseSpawnRequest(b []byte) (SpawnRequest, error) {
	if len(b) != SpawnRequestSize || [4]byte(b[:4]) != magicSpawn {
		return SpawnRequest{}, malformed("spawn request of %d bytes", len(b))
	}
	return SpawnRequest{Seq: binary.BigEndian.Uint32(b[4:])}, nil
}

// SpawnReply answers a SpawnRequest, or (Link set) announces a new verifier
// socket.
type SpawnReply struct {
	Link bool
	Seq  uint32
	Code uint32
}

// Marshal encodes r in its fixed form.
func (r SpawnReply) Marshal() []byte {
	b := make([]byte, 0, SpawnReplySize)
	if r.Link {
		b = append(b, magicLink[:]...)
	} else {
		b = append(b, magicSpawn[:]...)
	}
	b = binary.BigEndian.AppendUint32(b, r.Seq)
	return binary.BigEndian.AppendUint32(b, r.Code)
}

// ParseSpawnReply decodes a reply or link notice.
func ParseSpawnReply(b []byte) (SpawnReply, error) {
	if len(b) != SpawnReplySize {
		return SpawnReply{}, malformed("spawn reply of %d bytes", len(b))
	}
	var r SpawnReply
	switch [4]byte(b[:4]) {
	case magicSpawn:
	case magicLink:
		r.Link = true
	default:
		return SpawnReply{}, malformed("spawn reply magic %q", b[:4])
	}
	r.Seq = binary.BigEndian.Uint32(b[4:])
	r.Code = binary.BigEndian.Uint32(b[8:])
	if r.Link && (r.Seq != 0 || r.Code != 0) {
		return SpawnReply{}, malformed("link notice with seq %d code %d", r.Seq, r.Code)
	}
	return r, nil
}

// SendFD writes msg with f attached as SCM_RIGHTS (f may be nil).
func SendFD(c *net.UnixConn, msg []byte, f *os.File) error {
	var oob []byte
	if f != nil {
		oob = unix.UnixRights(int(f.Fd()))
	}
	n, oobn, err := c.WriteMsgUnix(msg, oob, nil)
	if err != nil {
		return err
	}
	if n != len(msg) || oobn != len(oob) {
		return fmt.Errorf("short write: %d/%d bytes, %d/%d control", n, len(msg), oobn, len(oob))
	}
	return nil
}

// ErrUnexpectedFD is returned when a message carries descriptors it should
// not (more than one, or a truncated control message). Every descriptor that
// arrived is closed.
var ErrUnexpectedFD = errors.New("unexpected file descriptors")

// RecvFD reads one packet into buf and returns its length and the descriptor
// attached to it, if any. At most one descriptor is accepted; received
// descriptors are close-on-exec (Go sets MSG_CMSG_CLOEXEC).
func RecvFD(c *net.UnixConn, buf []byte, name string) (int, *os.File, error) {
	oob := make([]byte, unix.CmsgSpace(4*2))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return 0, nil, err
	}
	var fds []int
	if oobn > 0 {
		msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
		if perr != nil {
			return 0, nil, perr
		}
		for _, m := range msgs {
			got, rerr := unix.ParseUnixRights(&m)
			if rerr == nil {
				fds = append(fds, got...)
			}
		}
	}
	if len(fds) > 1 || flags&(unix.MSG_CTRUNC|unix.MSG_TRUNC) != 0 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return 0, nil, ErrUnexpectedFD
	}
	if len(fds) == 0 {
		return n, nil, nil
	}
	return n, os.NewFile(uintptr(fds[0]), name), nil
}
