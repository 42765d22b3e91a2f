package executor

import (
	"os"
	"testing"
	"time"
)

// TestCaptureQuota: one quota over both streams; the excess is cut, flagged,
// and the kill callback runs once.
func TestCaptureQuota(t *testing.T) {
	kills := 0
	c := newCapture(10, func() { kills++ })
	r1, w1, _ := os.Pipe()
	r2, w2, _ := os.Pipe()
	c.drain(r1, false)
	c.drain(r2, true)
	w1.Write([]byte("123456"))
	time.Sleep(20 * time.Millisecond)
	w2.Write([]byte("abcdefgh"))
	w1.Close()
	w2.Close()
	out, errOut, over := c.result()
	if !over || kills != 1 || len(out)+len(errOut) != 10 || string(out) != "123456" || string(errOut) != "abcd" {
		t.Fatalf("stdout %q stderr %q over %v kills %d", out, errOut, over, kills)
	}
}

// TestCaptureDoesNotHang: a pipe someone keeps open does not hold the result
// past drainGrace.
func TestCaptureDoesNotHang(t *testing.T) {
	c := newCapture(100, func() {})
	r, w, _ := os.Pipe()
	defer w.Close()
	c.drain(r, false)
	w.Write([]byte("partial"))
	got := make(chan []byte, 1)
	go func() { out, _, _ := c.result(); got <- out }()
	select {
	case out := <-got:
		if string(out) != "partial" {
			t.Fatalf("kept %q", out)
		}
	case <-time.After(30 * time.Second): // a hang, not a slow machine
		t.Fatal("result hangs on a pipe held open")
	}
}
