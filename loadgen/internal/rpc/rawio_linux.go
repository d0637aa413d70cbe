//go:build linux

package rpc

import (
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Raw socket writes. A write to a TCP connection through net.Conn enters
// the Go scheduler's syscall state; on loopback the write runs the
// receiver's TCP processing too and can take tens of µs, long enough for
// the runtime's sysmon to hand the P to another thread (a futex wake and
// two context switches per batch on a busy VM). The socket is
// non-blocking, so the writer goroutine writes it with RawSyscall inside
// the RawConn's Write callback instead: no syscall state, no hand-off, and
// the netpoller still parks the goroutine on EAGAIN. The callback is bound
// once (no allocation per write). FSTRESS_NORAW=1 turns it off.
//
// Reads stay ordinary net.Conn reads. Raw reads cut the CPU further (1.3
// against 1.8 µs per call at 300k GETATTR/s) but, measured on this 2-core
// VM with CPU-bound neighbours on the generator's core, they raised the
// send-lag p99 from 0.1–0.7 ms to 2.7–5.3 ms: with no syscall exits the
// runtime's sysmon thread sleeps, the process sleeps deeper, and a woken
// metronome waits out a neighbour's scheduler slice (3 ms stalls seen in
// an execution trace).

// rawIO is the RawConn of conn, nil when conn is not a socket.
func rawIO(conn net.Conn) syscall.RawConn {
	if os.Getenv("FSTRESS_NORAW") != "" {
		return nil
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// rawWriter writes whole buffers; one per writing goroutine.
type rawWriter struct {
	rc     syscall.RawConn
	b      []byte
	errno  syscall.Errno
	noWait bool   // tryWrite: stop at EAGAIN
	last   []byte // what the last write left unwritten
	fn     func(uintptr) bool
}

// tryWrite writes what the socket takes now; n < len(b) when it is full.
func (w *rawWriter) tryWrite(b []byte) (int, error) {
	w.noWait = true
	err := w.write(b)
	n := len(b) - len(w.last)
	w.noWait, w.last = false, nil
	return n, err
}

func newRawWriter(rc syscall.RawConn) *rawWriter {
	w := &rawWriter{rc: rc}
	w.fn = w.step
	return w
}

func (w *rawWriter) step(fd uintptr) bool {
	for len(w.b) > 0 {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&w.b[0])), uintptr(len(w.b)))
		switch e {
		case 0:
			w.b = w.b[n:]
		case syscall.EINTR:
		case syscall.EAGAIN:
			return w.noWait
		default:
			w.errno = e
			return true
		}
	}
	return true
}

// write writes all of b (one write system call when the socket buffer has
// room). Concurrent writes of two rawWriters do not interleave: the
// RawConn holds the descriptor's write lock for the whole call.
func (w *rawWriter) write(b []byte) error {
	w.b, w.errno = b, 0
	err := w.rc.Write(w.fn)
	w.last, w.b = w.b, nil
	if err != nil {
		return err
	}
	if w.errno != 0 {
		return w.errno
	}
	return nil
}
