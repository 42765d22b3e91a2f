package ipc

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// MaxFDs is the most descriptors one message may carry (SCM_RIGHTS). A
// frame that brings more, or a control message the kernel had to cut,
// ends the connection; every descriptor received is closed.
const MaxFDs = 64

// fdReader reads a Conn's stream with recvmsg, keeping the descriptors
// that arrive (when the Conn accepts any; otherwise they end it): the kernel delivers a message's descriptors with the first
// byte of the data they were sent with, and never reads past the end of
// that data in the same call, so they are collected while the frame they
// came with is read.
type fdReader struct{ c *Conn }

func (r fdReader) Read(p []byte) (int, error) {
	oob := make([]byte, unix.CmsgSpace(4*MaxFDs))
	n, oobn, flags, _, err := r.c.nc.ReadMsgUnix(p, oob)
	if oobn > 0 {
		msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
		if perr != nil {
			return 0, fmt.Errorf("%w: %v", ErrUnexpectedFD, perr)
		}
		for _, m := range msgs {
			fds, rerr := unix.ParseUnixRights(&m)
			if rerr != nil {
				continue // credentials and the like: not ours
			}
			for _, fd := range fds {
				r.c.fds = append(r.c.fds, os.NewFile(uintptr(fd), "received"))
			}
		}
	}
	if flags&unix.MSG_CTRUNC != 0 || len(r.c.fds) > MaxFDs || (len(r.c.fds) > 0 && !r.c.acceptFiles) {
		return 0, ErrUnexpectedFD
	}
	return n, err
}

// SendFiles writes one message within [WriteTimeout] with files attached
// (SCM_RIGHTS) to its first byte. The files stay open; the caller closes
// its copies.
func (c *Conn) SendFiles(id uint64, kind Kind, body any, max int, files []*os.File) error {
	if len(files) > MaxFDs {
		return fmt.Errorf("%w: %d descriptors, at most %d", ErrUnexpectedFD, len(files), MaxFDs)
	}
	b, err := EncodeEnvelope(id, kind, body)
	if err != nil {
		return err
	}
	if len(b) == 0 {
		return malformed("empty frame")
	}
	if len(b) > max {
		return fmt.Errorf("%w: %d bytes, cap %d", ErrFrameTooLarge, len(b), max)
	}
	frame := AppendFrame(make([]byte, 0, frameHeader+len(b)), b)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.nc.SetWriteDeadline(time.Now().Add(WriteTimeout)); err != nil {
		return err
	}
	if len(files) == 0 {
		_, err := c.nc.Write(frame)
		return err
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	n, _, err := c.nc.WriteMsgUnix(frame, unix.UnixRights(fds...), nil)
	if err != nil {
		return err
	}
	if n < len(frame) { // a stream socket may take a large frame in parts
		_, err = c.nc.Write(frame[n:])
	}
	return err
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}
