// Package client is the Go library for agents: it dials the broker's
// agent.sock, says Hello, and lists tools, calls them and asks for status.
//
// # Security
//
// The broker is trusted to answer honestly; its replies are still decoded
// strictly under the frame caps of package ipc, so a wrong socket cannot make
// the client allocate without bound.
package client

import (
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/ipc"
)

// Client is one connection to the broker. Its methods are safe for concurrent
// use; requests go one at a time.
type Client struct {
	mu        sync.Mutex
	conn      *ipc.Conn
	id        uint64
	outputMax int // the read cap for call replies; others get ipc.ControlFrameMax
}

// SocketPath picks the agent socket: flag, then $STOCKADE_SOCKET, then the
// default single-user path.
func SocketPath(flag string) string {
	if flag != "" {
		return flag
	}
	if env := os.Getenv("STOCKADE_SOCKET"); env != "" {
		return env
	}
	return ipc.DefaultSocket()
}

// Dial connects to the broker at path and completes the Hello.
// maxFrame caps replies that carry output (0: ipc.DefaultOutputFrameMax).
func Dial(path string, maxFrame int) (*Client, error) {
	nc, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	c, err := ipc.NewConn(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	if _, err := c.Handshake(ipc.ChannelAgent, "stockade-client"); err != nil {
		c.Close()
		return nil, err
	}
	if maxFrame <= 0 {
		maxFrame = ipc.DefaultOutputFrameMax
	}
	return &Client{conn: c, outputMax: maxFrame}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

func (c *Client) do(kind ipc.Kind, req, reply any, timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kind == ipc.KindCall {
		c.conn.SetReadMax(c.outputMax)
	} else {
		c.conn.SetReadMax(ipc.ControlFrameMax)
	}
	c.id++
	return c.conn.Call(c.id, kind, req, reply, timeout)
}

// Tools lists the tools the broker offers.
func (c *Client) Tools() ([]ipc.ToolInfo, error) {
	var l ipc.ToolList
	err := c.do(ipc.KindListTools, ipc.Empty{}, &l, ipc.WriteTimeout)
	return l.Tools, err
}

// Status asks the broker (and through it the verifier) for its status.
func (c *Client) Status() (*ipc.BrokerStatus, error) {
	var st ipc.BrokerStatus
	err := c.do(ipc.KindStatus, ipc.Empty{}, &st, 15*time.Second)
	return &st, err
}

// Call runs one tool call. A refused or failed call returns an *ipc.Error;
// a call that ran returns its outcome, whatever the target's exit status.
func (c *Client) Call(req *ipc.CallRequest) (*ipc.Outcome, error) {
	var out ipc.Outcome
	// The broker enforces the call's timeout; this only guards against a
	// broker that never answers.
	wait := 11 * time.Minute
	if req.TimeoutMS > 0 {
		wait = time.Duration(req.TimeoutMS)*time.Millisecond + time.Minute
	}
	if err := c.do(ipc.KindCall, req, &out, wait); err != nil {
		return nil, err
	}
	return &out, nil
}
