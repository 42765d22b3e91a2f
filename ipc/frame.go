package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

const (
	// ControlFrameMax caps every control message: Hello, requests, replies
	// without output.
	ControlFrameMax = 64 << 10
	// DefaultOutputFrameMax caps the messages that carry a call's output
	// (an executor's outcome, the broker's reply to a call). Only readers of
	// those messages raise their cap, and only to a configured value.
	DefaultOutputFrameMax = 4 << 20
	// ExecSpecFrameMax caps the exec request on the exec channel (and the
	// plan between an executor's two stages): an agent's call fits in 64 KiB,
	// and the broker adds the environment and Tier C's path lists.
	ExecSpecFrameMax = 256 << 10
	// frameHeader is the size of the length prefix.
	frameHeader = 4
)

// ErrFrameTooLarge is returned when a frame's declared length exceeds the
// reader's cap. Nothing is allocated for such a frame.
var ErrFrameTooLarge = errors.New("frame too large")

// ReadFrame reads one frame from r and returns its body. The declared length is
// checked against max before the body is allocated; a zero length is refused.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 {
		return nil, malformed("empty frame")
	}
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, cap %d", ErrFrameTooLarge, n, max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// AppendFrame appends the frame for body to dst.
func AppendFrame(dst, body []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...)
}

// WriteFrame writes body as one frame, refusing a body over max so that a
// writer never produces what its peer must refuse.
func WriteFrame(w io.Writer, body []byte, max int) error {
	if len(body) == 0 {
		return malformed("empty frame")
	}
	if len(body) > max {
		return fmt.Errorf("%w: %d bytes, cap %d", ErrFrameTooLarge, len(body), max)
	}
	_, err := w.Write(AppendFrame(make([]byte, 0, frameHeader+len(body)), body))
	return err
}
