package executor

import (
	"io"
	"os"
	"sync"
	"time"
)

// capture reads a call's stdout and stderr under one quota shared by both.
// When the quota is reached it keeps exactly the quota's worth, sets over and
// calls onOver once (which kills the call).
type capture struct {
	mu       sync.Mutex
	left     int64
	stdout   []byte
	stderr   []byte
	over     bool
	onOver   func()
	overOnce sync.Once
	wg       sync.WaitGroup
	files    []*os.File
}

const chunk = 32 << 10

func newCapture(quota int64, onOver func()) *capture {
	return &capture{left: quota, onOver: onOver}
}

// drain reads r until EOF into stdout or stderr.
func (c *capture) drain(r *os.File, stderr bool) {
	c.files = append(c.files, r)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer r.Close()
		buf := make([]byte, chunk)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				c.add(buf[:n], stderr)
			}
			if err != nil {
				if err != io.EOF {
					c.add(nil, stderr)
				}
				return
			}
		}
	}()
}

func (c *capture) add(b []byte, stderr bool) {
	c.mu.Lock()
	over := false
	if int64(len(b)) > c.left {
		b = b[:c.left]
		over = true
	}
	c.left -= int64(len(b))
	if stderr {
		c.stderr = append(c.stderr, b...)
	} else {
		c.stdout = append(c.stdout, b...)
	}
	if over {
		c.over = true
	}
	c.mu.Unlock()
	if over {
		c.overOnce.Do(c.onOver)
	}
}

// drainGrace bounds how long result waits for the pipes to close once the
// call's processes are gone: a survivor holding them must not hang the
// executor.
const drainGrace = 2 * time.Second

// result waits for both readers (at most drainGrace, then it closes the
// pipes) and returns what they kept.
func (c *capture) result() (stdout, stderr []byte, over bool) {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainGrace):
		for _, f := range c.files {
			f.Close() // unblocks the pending Read
		}
		<-done
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stdout, c.stderr, c.over
}
