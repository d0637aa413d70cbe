//go:build linux

package rpc

import (
	"encoding/binary"
	"errors"
	"io"
	"syscall"
	"time"
	"unsafe"
)

// Polled replies. In the default mode the reader goroutine blocks on the
// socket and every reply wakes the process. A caller that wakes anyway on
// a schedule (the metronome) can instead switch the client to polled mode
// (SetPolled) and read the replies itself at each wake-up (Poll): one
// wake-up per call instead of two at low rates. Latency is not lost: the
// socket has SO_TIMESTAMPNS on, every read returns the kernel's receive
// time of the last segment it took, and the callbacks get it as
// CallInfo.Arrived. Replies that one read takes from several segments get
// the latest segment's time (their latency is overstated by the gap,
// never understated).

// errWouldBlock: a polled read found nothing to read.
var errWouldBlock = errors.New("rpc: no data")

// sockIn is the reader goroutine's byte source: conn reads, or while
// polled non-blocking recvmsg calls that keep the receive timestamp.
type sockIn struct {
	c       *Client
	polled  bool // switched only while the reader goroutine is parked
	oob     [128]byte
	iov     syscall.Iovec
	msg     syscall.Msghdr
	n       int
	err     error
	fn      func(uintptr) bool
	arrived time.Time // receive time of the last segment of the last read (polled)
	drained bool      // polled: the last read did not fill its buffer (Read)
}

func newSockIn(c *Client) *sockIn {
	s := &sockIn{c: c}
	s.fn = s.step
	return s
}

func (s *sockIn) Read(p []byte) (int, error) {
	if !s.polled {
		return s.c.conn.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if s.drained { // the last read emptied the socket: end this poll without an EAGAIN system call
		s.drained = false
		return 0, errWouldBlock
	}
	s.iov.Base = &p[0]
	s.iov.SetLen(len(p))
	s.msg.Iov, s.msg.Iovlen = &s.iov, 1
	s.msg.Control = &s.oob[0]
	s.msg.SetControllen(len(s.oob))
	s.n, s.err = 0, nil
	err := s.c.raw.Read(s.fn)
	s.iov.Base, s.msg.Iov, s.msg.Control = nil, nil, nil
	if err != nil {
		return 0, err
	}
	s.drained = s.err == nil && s.n < len(p)
	return s.n, s.err
}

// step is one non-blocking recvmsg (it never asks the netpoller to wait),
// a raw system call on preset buffers: no allocation, no syscall state.
func (s *sockIn) step(fd uintptr) bool {
	for {
		s.msg.SetControllen(len(s.oob))
		n, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&s.msg)), syscall.MSG_DONTWAIT)
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			s.err = errWouldBlock
		case e != 0:
			s.err = e
		case n == 0:
			s.err = io.EOF
		default:
			s.n = int(n)
			s.arrived = receiveTime(s.oob[:s.msg.Controllen])
		}
		return true
	}
}

// receiveTime is the SCM_TIMESTAMPNS time in oob as a time.Time with a
// monotonic reading (now minus the packet's age), or now without one.
func receiveTime(oob []byte) time.Time {
	now := time.Now()
	for len(oob) >= 16 {
		l := int(binary.NativeEndian.Uint64(oob))
		level, typ := int32(binary.NativeEndian.Uint32(oob[8:])), int32(binary.NativeEndian.Uint32(oob[12:]))
		if l < 16 || l > len(oob) {
			break
		}
		if level == syscall.SOL_SOCKET && typ == syscall.SCM_TIMESTAMPNS && l >= 32 {
			ts := int64(binary.NativeEndian.Uint64(oob[16:]))*1e9 + int64(binary.NativeEndian.Uint64(oob[24:]))
			if age := now.UnixNano() - ts; age > 0 && age < int64(time.Minute) {
				return now.Add(-time.Duration(age))
			}
			return now
		}
		oob = oob[(l+7)&^7:]
	}
	return now
}

// SetPolled switches the client to polled mode (on: the reader goroutine
// parks and the caller reads replies with Poll) or back. Only one
// goroutine may switch and poll. An error (no socket, a closed client)
// leaves the client in its default mode.
func (c *Client) SetPolled(on bool) error {
	if c.raw == nil {
		return errors.New("rpc: polled mode needs a socket")
	}
	if !on {
		if c.in.polled {
			c.in.polled = false
			c.pauseReq.Store(false)
			select {
			case c.resumeCh <- struct{}{}:
			case <-c.readerEnd:
			}
		}
		return nil
	}
	if c.in.polled {
		return nil
	}
	c.raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	})
	c.pauseReq.Store(true)
	for {
		c.conn.SetReadDeadline(time.Unix(1, 0)) // kick the reader out of its read
		select {
		case <-c.pausedCh:
			c.conn.SetReadDeadline(time.Time{})
			c.in.polled, c.in.drained = true, false
			c.pollScan = c.now() + int64(c.tick)
			return nil
		case <-c.readerEnd:
			c.pauseReq.Store(false)
			return ErrClosed
		case <-time.After(10 * time.Millisecond): // it re-armed its deadline meanwhile
		}
	}
}

// Poll reads the replies that have arrived, without blocking, and runs
// their callbacks on the caller's goroutine with CallInfo.Arrived set; it
// also retransmits or cancels expired calls when a scan is due. It stops
// after a read that did not fill its buffer (the socket was empty then;
// what arrives meanwhile waits for the next Poll). In the
// default mode it does nothing. A read error fails the client (the parked
// reader goroutine then fails the pending calls) and is returned.
func (c *Client) Poll() error {
	if !c.in.polled {
		return nil
	}
	for {
		rec, err := c.rr.Next()
		if errors.Is(err, errWouldBlock) {
			break
		}
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			err = wrapClosed("read", err)
			c.fail(err)
			return err
		}
		c.arrivedAt = c.in.arrived
		c.dispatch(rec)
	}
	c.arrivedAt = time.Time{}
	if now := c.now(); now >= c.pollScan {
		c.pollExpired = c.scan(c.pollExpired)
		c.pollScan = now + int64(c.tick)
	}
	return nil
}
