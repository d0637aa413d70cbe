//go:build !linux

package rpc

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// No raw I/O here: the client uses net.Conn.
func rawIO(net.Conn) syscall.RawConn { return nil }

type rawWriter struct{}

func newRawWriter(syscall.RawConn) *rawWriter { return nil }

func (*rawWriter) write([]byte) error { panic("rpc: no raw I/O on this platform") }

func (*rawWriter) tryWrite([]byte) (int, error) { panic("rpc: no raw I/O on this platform") }

type sockIn struct {
	c       *Client
	polled  bool
	arrived time.Time
}

func newSockIn(c *Client) *sockIn { return &sockIn{c: c} }

func (s *sockIn) Read(p []byte) (int, error) { return s.c.conn.Read(p) }

// SetPolled is Linux-only.
func (c *Client) SetPolled(on bool) error {
	if on {
		return errors.New("rpc: polled mode is Linux-only")
	}
	return nil
}

// Poll does nothing (no polled mode).
func (c *Client) Poll() error { return nil }
