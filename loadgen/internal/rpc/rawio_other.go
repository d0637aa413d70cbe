//go:build !linux

package rpc

import (
	"net"
	"syscall"
)

// No raw I/O here: the client uses net.Conn.
func rawIO(net.Conn) syscall.RawConn { return nil }

type rawWriter struct{}

func newRawWriter(syscall.RawConn) *rawWriter { return nil }

func (*rawWriter) write([]byte) error { panic("rpc: no raw I/O on this platform") }
