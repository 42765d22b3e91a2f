package ipc

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestReadFrame(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		max  int
		want []byte
		err  error
	}{
		{"ok", []byte{0, 0, 0, 2, 0x80, 0x80}, 10, []byte{0x80, 0x80}, nil},
		{"at cap", []byte{0, 0, 0, 2, 1, 2}, 2, []byte{1, 2}, nil},
		{"over cap", []byte{0, 0, 0, 3, 1, 2, 3}, 2, nil, ErrFrameTooLarge},
		{"4 GiB claim", []byte{0xff, 0xff, 0xff, 0xff}, ControlFrameMax, nil, ErrFrameTooLarge},
		{"zero", []byte{0, 0, 0, 0}, 10, nil, ErrMalformed},
		{"short body", []byte{0, 0, 0, 5, 1}, 10, nil, io.ErrUnexpectedEOF},
		{"short header", []byte{0, 0}, 10, nil, io.ErrUnexpectedEOF},
		{"eof", nil, 10, nil, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFrame(bytes.NewReader(tt.in), tt.max)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err %v, want %v", err, tt.err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("got %x", got)
			}
		})
	}
}

func TestWriteFrameRefusesOverCap(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, make([]byte, 11), 10); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err %v", err)
	}
	if buf.Len() != 0 {
		t.Fatal("partial write")
	}
	if err := WriteFrame(&buf, []byte{0xc0}, 10); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), []byte{0, 0, 0, 1, 0xc0}) {
		t.Fatalf("frame %x", buf.Bytes())
	}
}

// The frame reader allocates nothing for a frame over its cap.
func TestReadFrameOverCapAllocatesNothing(t *testing.T) {
	in := []byte{0x7f, 0xff, 0xff, 0xff}
	n := allocated(func() { _, _ = ReadFrame(bytes.NewReader(in), ControlFrameMax) })
	// Other goroutines of the test binary allocate too: allow for them, far
	// below the 2 GiB the header claims.
	if n > 64<<10 {
		t.Fatalf("allocated %d bytes", n)
	}
}
