// Package rpc is a hand-built ONC RPC version 2 client (RFC 5531) over TCP
// with record marking, AUTH_SYS credentials and an AUTH_NONE verifier.
//
// One Client owns one TCP connection. All calls are multiplexed on it and
// matched to replies by XID. There is no goroutine per call:
//
//   - Go encodes the call message (record mark, header, credentials and the
//     caller's arguments) into a pooled per-call buffer, registers the call in
//     the pending table (an array indexed by XID, pendtab.go, plus a list
//     ordered by deadline) and appends the message to a shared write buffer.
//   - One writer goroutine swaps that buffer out and writes it with a single
//     write system call (raw, rawio_linux.go): calls issued while a write is
//     in progress are batched into the next one. GoQueued queues a call
//     without waking the writer; Flush wakes it once for the whole batch.
//   - One reader goroutine reads records (reassembling multi-fragment
//     records), parses the reply header, looks the XID up and runs the done
//     callback. The same goroutine scans for expired calls: its read deadline
//     is a ticker (period Timeout/8, clamped to [1ms, 100ms]); an expired call
//     is retransmitted with the same XID up to Options.MaxRetransmits times
//     (each attempt waits Options.Timeout), then cancelled with ErrTimeout.
//
// Polled mode (SetPolled, poll_linux.go): the reader goroutine parks and
// the caller reads the replies itself with Poll, each callback getting the
// kernel's receive time (CallInfo.Arrived), and Flush writes on the
// caller's goroutine.
//
// Callbacks: every done callback of a Client runs on its reader goroutine
// (polled: on the goroutine that calls Poll),
// so callbacks of one Client never run concurrently with each other. They
// must not block for long (they hold up every other reply of the
// connection); they may call Go, GoInfo and Close, but not Call or
// CallContext (which wait for the reader goroutine). The body passed to a
// callback is valid only during the callback. The reader and writer
// goroutines need CPU time: with GOMAXPROCS=1 a caller that busy-waits must
// yield (time.Sleep, runtime.Gosched) or replies and writes wait for it.
//
// Connection loss: when the connection fails (read or write error, Close),
// every pending call gets exactly one callback with an error that satisfies
// errors.Is(err, ErrClosed) (wrapping the cause), and later Go calls return
// an error that satisfies errors.Is(err, ErrClosed) without calling done.
// Done() is closed after the last such callback.
//
// Retransmit counts: GoInfo's callback gets a CallInfo with the number of
// retransmissions of that call (Go's does not; use GoInfo when you need it).
//
// Additions to the project contract: GoInfo, CallInfo, CallContext,
// DialContext, NewClient, Client.Done, Client.Stats, Stats, Client.LocalAddr,
// Client.RemoteAddr, RPCError fields, constants for message fields,
// DefaultTimeout, ParseReply, RecordReader (also used by the null server),
// portmapper constants, Mapping, Dump, DecodeMappings, EncodeMappings.
package rpc

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"workbench/loadgen/internal/xdr"
)

// Message constants (RFC 5531).
const (
	RPCVersion = 2

	MsgCall  = 0
	MsgReply = 1

	MsgAccepted = 0
	MsgDenied   = 1

	Success      = 0 // accept_stat values
	ProgUnavail  = 1
	ProgMismatch = 2
	ProcUnavail  = 3
	GarbageArgs  = 4
	SystemErr    = 5

	RPCMismatch = 0 // reject_stat values
	AuthError   = 1

	AuthNoneFlavor = 0
	AuthSysFlavor  = 1

	lastFragment = 0x80000000
	// MaxRecord bounds the size of one reassembled record: the largest reply
	// fstress can legally get is a READ of 1 MiB (the engine's I/O size cap;
	// READDIR asks for at most 32 KiB) plus its RPC and NFS headers,
	// attributes and an NFSv4 COMPOUND's other results, well within 64 KiB.
	// A record marker claiming more is refused before anything is allocated.
	MaxRecord = 1<<20 + 64<<10
	// recordGrowStep: the reassembly buffer grows with the bytes that arrive,
	// not with what a fragment header claims (a 4-byte header could
	// otherwise pin MaxRecord bytes per connection without sending them).
	recordGrowStep = 64 << 10
)

// DefaultTimeout is used when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Second

var (
	// ErrTimeout: no reply after the first send plus MaxRetransmits
	// retransmissions, each waiting Options.Timeout.
	ErrTimeout = errors.New("rpc: call timed out")
	// ErrClosed: the client was closed or its connection failed.
	ErrClosed = errors.New("rpc: connection closed")
)

// RPCError reports a reply that was not an accepted success: a denied reply
// (RPC version mismatch or authentication error), an accepted reply with an
// error status (program unavailable, program version mismatch, procedure
// unavailable, garbage arguments, system error), or a malformed reply header.
type RPCError struct {
	Denied     bool   // MSG_DENIED
	RejectStat uint32 // when Denied: RPC_MISMATCH or AUTH_ERROR
	AuthStat   uint32 // when RejectStat == AUTH_ERROR
	AcceptStat uint32 // when !Denied
	Low, High  uint32 // supported versions for RPC_MISMATCH / PROG_MISMATCH
	Malformed  error  // non-nil when the reply header could not be parsed
}

func (e *RPCError) Error() string {
	switch {
	case e.Malformed != nil:
		return "rpc: malformed reply: " + e.Malformed.Error()
	case e.Denied && e.RejectStat == RPCMismatch:
		return fmt.Sprintf("rpc: denied: RPC version mismatch (server supports %d..%d)", e.Low, e.High)
	case e.Denied && e.RejectStat == AuthError:
		return fmt.Sprintf("rpc: denied: authentication error (auth_stat %d)", e.AuthStat)
	case e.Denied:
		return fmt.Sprintf("rpc: denied (reject_stat %d)", e.RejectStat)
	}
	switch e.AcceptStat {
	case ProgUnavail:
		return "rpc: program unavailable"
	case ProgMismatch:
		return fmt.Sprintf("rpc: program version mismatch (server supports %d..%d)", e.Low, e.High)
	case ProcUnavail:
		return "rpc: procedure unavailable"
	case GarbageArgs:
		return "rpc: server could not decode arguments (garbage args)"
	case SystemErr:
		return "rpc: server system error"
	}
	return fmt.Sprintf("rpc: accept_stat %d", e.AcceptStat)
}

// AuthSys is an AUTH_SYS credential (RFC 5531 appendix A).
type AuthSys struct {
	Stamp   uint32
	Machine string
	UID     uint32
	GID     uint32
	GIDs    []uint32 // at most 16 are sent
}

// HostAuthSys is AUTH_SYS as root of this host (RFC 5531 §14: machine name at
// most 255 bytes), stamped now.
func HostAuthSys() AuthSys {
	host, _ := os.Hostname()
	if len(host) > 255 {
		host = host[:255]
	}
	return AuthSys{Stamp: uint32(time.Now().Unix()), Machine: host}
}

// Options configure a Client.
type Options struct {
	Timeout        time.Duration // per attempt; 0 means DefaultTimeout
	MaxRetransmits int           // retransmissions (same XID) before ErrTimeout; <0 means 0
	Auth           AuthSys
}

// CallInfo describes a completed call.
type CallInfo struct {
	XID         uint32
	Retransmits int       // number of times the call was re-sent after its first send
	Arrived     time.Time // polled mode (SetPolled): the kernel's receive time of the reply; zero otherwise
}

// Stats are the cumulative counters of a Client.
type Stats struct {
	Calls       uint64 // calls accepted by Go/GoInfo
	Replies     uint64 // replies matched to a pending call
	Retransmits uint64 // re-sends of expired calls
	Timeouts    uint64 // calls cancelled with ErrTimeout
	Stale       uint64 // replies whose XID matched no pending call (e.g. late)
	BadReplies  uint64 // replies delivered as *RPCError
}

type call struct {
	xid      uint32
	retrans  int
	deadline int64 // ns since client epoch
	msg      []byte
	enc      xdr.Encoder // encodes msg; a field so that passing it to args does not allocate
	done     func([]byte, error)
	doneInfo func([]byte, CallInfo, error)
	prev     *call
	next     *call
}

var callPool = sync.Pool{New: func() any { return new(call) }}

const maxPooledMsg = 256 << 10

func putCall(cl *call) {
	cl.done, cl.doneInfo, cl.prev, cl.next = nil, nil, nil, nil
	cl.enc.SetBytes(nil)
	if cap(cl.msg) > maxPooledMsg {
		cl.msg = nil
	}
	callPool.Put(cl)
}

// Client is an ONC RPC client on one TCP connection. It is safe for
// concurrent use.
type Client struct {
	conn net.Conn
	raw  syscall.RawConn // conn's socket for raw I/O (rawio_linux.go); nil: use conn
	ww   *rawWriter      // the writer goroutine's raw writer
	fw   *rawWriter      // Flush's raw writer (polled mode)

	wmu       sync.Mutex  // held while writing (the writer goroutine, or Flush when polled)
	fspare    []byte      // Flush's spare write buffer
	handedOff atomic.Bool // a polled Flush left calls to the writer goroutine (HandedOff)

	// reading: the reader goroutine's, or the poller's while polled (poll_linux.go)
	in          *sockIn
	rr          *RecordReader
	pauseReq    atomic.Bool
	pausedCh    chan struct{} // reader → SetPolled: parked
	resumeCh    chan struct{} // SetPolled → reader: read again
	arrivedAt   time.Time     // receive time of the reply being dispatched (polled)
	pollScan    int64         // next scan for expired calls (polled)
	pollExpired []*call

	timeout int64 // ns
	maxRetx int
	tick    time.Duration
	epoch   time.Time
	cred    []byte // encoded credential + verifier

	mu       sync.Mutex
	pending  pendTab
	head     *call // deadline-ordered list (deadlines are monotone: constant timeout)
	tail     *call
	wbuf     []byte
	batchNow int64 // clock of the queued batch's first call (ns since epoch); 0: none yet (sendClock)
	closed   bool
	closeErr error // error given to pending calls
	xid      uint32

	kick      chan struct{}
	quit      chan struct{}
	quitOnce  sync.Once
	readerEnd chan struct{}

	outstanding atomic.Int64
	calls       atomic.Uint64
	replies     atomic.Uint64
	retransmits atomic.Uint64
	timeouts    atomic.Uint64
	stale       atomic.Uint64
	bad         atomic.Uint64
}

// Dial connects to addr (host:port) over TCP.
func Dial(addr string, opt Options) (*Client, error) {
	return DialContext(context.Background(), addr, opt)
}

// DialContext connects to addr over TCP; ctx bounds the connection attempt
// (as does Options.Timeout).
func DialContext(ctx context.Context, addr string, opt Options) (*Client, error) {
	t := opt.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	d := net.Dialer{Timeout: t}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return NewClient(conn, opt), nil
}

// NewClient runs a client on an established stream connection, which it
// owns from now on.
func NewClient(conn net.Conn, opt Options) *Client {
	t := opt.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	tick := min(max(t/8, time.Millisecond), 100*time.Millisecond)
	c := &Client{
		conn:      conn,
		raw:       rawIO(conn),
		timeout:   int64(t),
		maxRetx:   max(opt.MaxRetransmits, 0),
		tick:      tick,
		epoch:     time.Now(),
		kick:      make(chan struct{}, 1),
		quit:      make(chan struct{}),
		readerEnd: make(chan struct{}),
		xid:       uint32(time.Now().UnixNano()) ^ 0x5a5a0000,
	}
	c.cred = encodeAuth(opt.Auth)
	c.in = newSockIn(c)
	c.rr = NewRecordReader(bufio.NewReaderSize(c.in, 256<<10))
	c.pausedCh, c.resumeCh = make(chan struct{}), make(chan struct{})
	if c.raw != nil {
		c.ww, c.fw = newRawWriter(c.raw), newRawWriter(c.raw)
	}
	go c.writer()
	go c.reader()
	return c
}

func encodeAuth(a AuthSys) []byte {
	var body xdr.Encoder
	body.Uint32(a.Stamp)
	body.String(a.Machine)
	body.Uint32(a.UID)
	body.Uint32(a.GID)
	gids := a.GIDs
	if len(gids) > 16 {
		gids = gids[:16]
	}
	body.Uint32(uint32(len(gids)))
	for _, g := range gids {
		body.Uint32(g)
	}
	var e xdr.Encoder
	e.Uint32(AuthSysFlavor)
	e.Opaque(body.Bytes())
	e.Uint32(AuthNoneFlavor) // verifier
	e.Uint32(0)
	return e.Bytes()
}

func (c *Client) now() int64 { return int64(time.Since(c.epoch)) }

// LocalAddr returns the local address of the connection.
func (c *Client) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// RemoteAddr returns the server's address of the connection.
func (c *Client) RemoteAddr() net.Addr { return c.conn.RemoteAddr() }

// Go sends a call asynchronously. args (may be nil) appends the procedure
// arguments to the encoder; it runs before Go returns and is not retained.
// done runs exactly once, on the client's reader goroutine, with the reply
// body (the bytes after the accepted-reply header, valid only during the
// callback) or an error: ErrTimeout, *RPCError, or an error wrapping
// ErrClosed. If Go returns an error, done is never called.
func (c *Client) Go(prog, vers, proc uint32, args func(*xdr.Encoder), done func(body []byte, err error)) error {
	return c.send(prog, vers, proc, args, done, nil, false)
}

// GoInfo is Go with a callback that also receives the call's CallInfo
// (XID and retransmission count).
func (c *Client) GoInfo(prog, vers, proc uint32, args func(*xdr.Encoder), done func(body []byte, info CallInfo, err error)) error {
	return c.send(prog, vers, proc, args, nil, done, false)
}

// GoQueued is GoInfo without waking the writer goroutine: the call waits in
// the write buffer for the caller's next Flush (or for a write that another
// call started). A caller that issues a batch of calls queues them and
// flushes once, so the batch leaves in one write system call.
func (c *Client) GoQueued(prog, vers, proc uint32, args func(*xdr.Encoder), done func(body []byte, info CallInfo, err error)) error {
	return c.send(prog, vers, proc, args, nil, done, true)
}

// Flush wakes the writer goroutine when calls wait in the write buffer. The
// write happens there, not on the caller's goroutine, so a full socket
// buffer (a server that reads slowly) never blocks the caller: the calls
// wait in the buffer, and their wait counts in their latency.
//
// Polled (SetPolled), the reader goroutine is parked and the caller owns
// the thread between its wake-ups, so Flush writes itself instead: as much
// as the socket takes without waiting; the rest (a server that reads
// slowly) goes to the writer goroutine, ahead of later calls.
func (c *Client) Flush() error {
	if c.in.polled && c.raw != nil {
		c.mu.Lock()
		c.batchNow = 0 // the caller's batch ends here (sendClock)
		c.mu.Unlock()
		return c.flushDirect()
	}
	c.mu.Lock()
	c.batchNow = 0
	n, err := len(c.wbuf), c.closeErr
	c.mu.Unlock()
	if n > 0 {
		c.kickWriter()
	}
	return err
}

// HandedOff reports, and clears, whether a polled Flush since the last
// call left calls for the writer goroutine to write (a full socket, or a
// write in progress there): a caller that holds its P (GOMAXPROCS=1)
// should then let that goroutine run.
func (c *Client) HandedOff() bool { return c.handedOff.Swap(false) }

func (c *Client) kickWriter() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// flushDirect is Flush on the caller's goroutine. Writes hold c.wmu, so a
// partial record is never followed by another writer's bytes; when the
// writer goroutine holds it, the calls wait for it.
func (c *Client) flushDirect() error {
	if !c.wmu.TryLock() {
		c.handedOff.Store(true)
		c.kickWriter()
		return nil
	}
	c.mu.Lock()
	if c.closed || len(c.wbuf) == 0 {
		err := c.closeErr
		c.mu.Unlock()
		c.wmu.Unlock()
		return err
	}
	out := c.takeBatch(c.fspare)
	c.mu.Unlock()
	n, err := c.fw.tryWrite(out)
	if err != nil {
		c.wmu.Unlock()
		err = wrapClosed("write", err)
		c.fail(err)
		return err
	}
	if n < len(out) { // the socket is full: the rest first, by the writer goroutine
		c.mu.Lock()
		c.wbuf = append(append([]byte(nil), out[n:]...), c.wbuf...)
		c.mu.Unlock()
		c.wmu.Unlock()
		c.handedOff.Store(true)
		c.kickWriter()
		return nil
	}
	if cap(out) > 4<<20 {
		out = nil
	}
	c.fspare = out
	c.wmu.Unlock()
	return nil
}

// writeOut writes b to the connection (raw when it is a socket).
func (c *Client) writeOut(b []byte) error {
	if c.raw != nil {
		return c.ww.write(b)
	}
	_, err := c.conn.Write(b)
	return err
}

func (c *Client) send(prog, vers, proc uint32, args func(*xdr.Encoder), done func([]byte, error), doneInfo func([]byte, CallInfo, error), queued bool) error {
	if done == nil && doneInfo == nil {
		return errors.New("rpc: nil done callback")
	}
	cl := callPool.Get().(*call)
	e := &cl.enc
	e.SetBytes(cl.msg[:0])
	e.Uint32(0) // record mark, patched below
	e.Uint32(0) // xid, patched under the lock
	e.Uint32(MsgCall)
	e.Uint32(RPCVersion)
	e.Uint32(prog)
	e.Uint32(vers)
	e.Uint32(proc)
	e.SetBytes(append(e.Bytes(), c.cred...))
	if args != nil {
		args(e)
	}
	msg := e.Bytes()
	if len(msg)-4 > 0x7fffffff {
		cl.msg = msg
		putCall(cl)
		return errors.New("rpc: call message too large")
	}
	binary.BigEndian.PutUint32(msg, lastFragment|uint32(len(msg)-4))
	cl.msg = msg
	cl.done, cl.doneInfo, cl.retrans = done, doneInfo, 0

	c.mu.Lock()
	now := c.sendClock(queued)
	if c.closed {
		err := c.closeErr
		c.mu.Unlock()
		putCall(cl)
		return err
	}
	xid := c.pending.nextXID(c.xid, c.head)
	c.xid = xid
	binary.BigEndian.PutUint32(msg[4:], xid)
	cl.xid = xid
	cl.deadline = now + c.timeout
	c.pending.put(cl)
	c.pushBack(cl)
	wasEmpty := len(c.wbuf) == 0
	c.wbuf = append(c.wbuf, msg...)
	c.mu.Unlock()
	c.outstanding.Add(1)
	c.calls.Add(1)
	if wasEmpty && !queued {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// sendClock is the time a call's deadline counts from; c.mu held. Queued
// calls (GoQueued) share one clock read per batch — from the first one
// queued after the last Flush (or write) — so a deadline can be early by
// at most the time the caller took to queue its batch (µs, against a
// timeout of seconds); other calls read the clock.
func (c *Client) sendClock(queued bool) int64 {
	if !queued {
		return c.now()
	}
	if c.batchNow == 0 {
		c.batchNow = max(c.now(), 1)
	}
	return c.batchNow
}

// takeBatch hands the write buffer to a writer and ends the queued
// batch's shared clock (sendClock); c.mu held.
func (c *Client) takeBatch(spare []byte) []byte {
	out := c.wbuf
	c.wbuf = spare[:0]
	c.batchNow = 0
	return out
}

// list helpers; c.mu held.
func (c *Client) pushBack(cl *call) {
	cl.next = nil
	cl.prev = c.tail
	if c.tail != nil {
		c.tail.next = cl
	} else {
		c.head = cl
	}
	c.tail = cl
}

func (c *Client) unlink(cl *call) {
	if cl.prev != nil {
		cl.prev.next = cl.next
	} else {
		c.head = cl.next
	}
	if cl.next != nil {
		cl.next.prev = cl.prev
	} else {
		c.tail = cl.prev
	}
	cl.prev, cl.next = nil, nil
}

// writer swaps the shared write buffer out and writes it; calls queued while
// a write is in flight go out together in the next write.
func (c *Client) writer() {
	var spare []byte
	for {
		select {
		case <-c.kick:
		case <-c.quit:
			return
		}
		for {
			c.wmu.Lock()
			c.mu.Lock()
			if c.closed || len(c.wbuf) == 0 {
				c.mu.Unlock()
				c.wmu.Unlock()
				break
			}
			out := c.takeBatch(spare)
			c.mu.Unlock()
			err := c.writeOut(out)
			c.wmu.Unlock()
			if err != nil {
				c.fail(fmt.Errorf("%w: write: %v", ErrClosed, err))
				return
			}
			if cap(out) > 4<<20 {
				out = nil
			}
			spare = out
		}
	}
}

// parkPolled parks the reader goroutine while the client is polled
// (SetPolled); false when the client closed meanwhile.
func (c *Client) parkPolled() bool {
	select {
	case c.pausedCh <- struct{}{}:
	case <-c.quit:
		return false
	}
	select {
	case <-c.resumeCh:
		return true
	case <-c.quit:
		return false
	}
}

func wrapClosed(what string, err error) error {
	if errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("%w: %s: %v", ErrClosed, what, err)
}

// fail marks the client closed with err (if not already) and closes the
// connection; the reader goroutine then fails all pending calls.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		c.closeErr = err
	}
	c.wbuf = nil
	c.mu.Unlock()
	c.quitOnce.Do(func() { close(c.quit) })
	c.conn.Close()
}

// Close closes the connection. Pending calls get an error wrapping ErrClosed
// (from the reader goroutine; wait on Done() to know they all ran). Close
// may be called from a callback and more than once.
func (c *Client) Close() error {
	c.fail(ErrClosed)
	return nil
}

// Done is closed when the reader goroutine has exited, i.e. after the
// client was closed (or its connection failed) and every pending call's
// callback has run.
func (c *Client) Done() <-chan struct{} { return c.readerEnd }

// Counters returns the cumulative numbers of retransmissions and of calls
// cancelled with ErrTimeout.
func (c *Client) Counters() (retransmits, timeouts uint64) {
	return c.retransmits.Load(), c.timeouts.Load()
}

// Stats returns all cumulative counters.
func (c *Client) Stats() Stats {
	return Stats{
		Calls: c.calls.Load(), Replies: c.replies.Load(), Retransmits: c.retransmits.Load(),
		Timeouts: c.timeouts.Load(), Stale: c.stale.Load(), BadReplies: c.bad.Load(),
	}
}

// Outstanding returns the number of calls sent and not yet completed.
func (c *Client) Outstanding() int { return int(c.outstanding.Load()) }

// Call is the synchronous form of Go; the returned body is a copy.
func (c *Client) Call(prog, vers, proc uint32, args func(*xdr.Encoder)) ([]byte, error) {
	return c.CallContext(context.Background(), prog, vers, proc, args)
}

type result struct {
	body []byte
	err  error
}

// CallContext is Call bounded by ctx: when ctx ends first it returns
// ctx.Err() (the call itself stays pending until it times out or a reply
// arrives, and is then discarded).
func (c *Client) CallContext(ctx context.Context, prog, vers, proc uint32, args func(*xdr.Encoder)) ([]byte, error) {
	ch := make(chan result, 1)
	err := c.Go(prog, vers, proc, args, func(body []byte, err error) {
		var cp []byte
		if err == nil {
			cp = make([]byte, len(body))
			copy(cp, body)
		}
		ch <- result{cp, err}
	})
	if err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.body, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Client) complete(cl *call, body []byte, err error) {
	c.outstanding.Add(-1)
	if cl.doneInfo != nil {
		cl.doneInfo(body, CallInfo{XID: cl.xid, Retransmits: cl.retrans, Arrived: c.arrivedAt}, err)
	} else {
		cl.done(body, err)
	}
	putCall(cl)
}

// scan retransmits or cancels expired calls; reader goroutine.
func (c *Client) scan(expired []*call) []*call {
	now := c.now()
	expired = expired[:0]
	kick := false
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return expired
	}
	for cl := c.head; cl != nil && cl.deadline <= now; cl = c.head {
		c.unlink(cl)
		if cl.retrans < c.maxRetx {
			cl.retrans++
			cl.deadline = now + c.timeout
			c.pushBack(cl)
			kick = kick || len(c.wbuf) == 0
			c.wbuf = append(c.wbuf, cl.msg...)
			c.retransmits.Add(1)
			continue
		}
		c.pending.remove(cl)
		expired = append(expired, cl)
	}
	c.mu.Unlock()
	if kick {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	for _, cl := range expired {
		c.timeouts.Add(1)
		c.complete(cl, nil, ErrTimeout)
	}
	return expired
}

func (c *Client) reader() {
	defer close(c.readerEnd)
	rr := c.rr
	var expired []*call
	nextScan := c.now() + int64(c.tick)
	c.conn.SetReadDeadline(time.Now().Add(c.tick))
	var rerr error
	for {
		rec, err := rr.Next()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if c.pauseReq.Load() && !c.parkPolled() {
					rerr = ErrClosed
					break
				}
				expired = c.scan(expired)
				nextScan = c.now() + int64(c.tick)
				c.conn.SetReadDeadline(time.Now().Add(c.tick))
				continue
			}
			rerr = err
			break
		}
		c.dispatch(rec)
		if rr.Buffered() == 0 {
			// About to block: make sure a scan is not overdue.
			if now := c.now(); now >= nextScan {
				expired = c.scan(expired)
				nextScan = now + int64(c.tick)
				c.conn.SetReadDeadline(time.Now().Add(c.tick))
			}
		}
	}
	if rerr == io.EOF {
		rerr = io.ErrUnexpectedEOF
	}
	c.fail(wrapClosed("read", rerr))
	c.mu.Lock()
	err := c.closeErr
	all := make([]*call, 0, c.pending.n)
	for cl := c.head; cl != nil; cl = cl.next {
		all = append(all, cl)
	}
	c.pending = pendTab{}
	c.head, c.tail = nil, nil
	c.mu.Unlock()
	for _, cl := range all {
		cl.prev, cl.next = nil, nil
		c.complete(cl, nil, err)
	}
}

func (c *Client) dispatch(rec []byte) {
	if len(rec) < 8 || binary.BigEndian.Uint32(rec[4:]) != MsgReply {
		c.stale.Add(1)
		return
	}
	xid := binary.BigEndian.Uint32(rec)
	c.mu.Lock()
	cl := c.pending.get(xid)
	if cl != nil {
		c.pending.remove(cl)
		c.unlink(cl)
	}
	c.mu.Unlock()
	if cl == nil {
		c.stale.Add(1)
		return
	}
	c.replies.Add(1)
	body, rpcErr := ParseReply(rec[8:])
	if rpcErr != nil {
		c.bad.Add(1)
		c.complete(cl, nil, rpcErr)
		return
	}
	c.complete(cl, body, nil)
}

// ParseReply parses a reply message after its xid and msg_type fields
// (i.e. starting at reply_stat) and returns the procedure results of an
// accepted, successful reply, or an *RPCError.
func ParseReply(b []byte) ([]byte, *RPCError) {
	d := xdr.NewDecoder(b)
	stat := d.Uint32()
	switch stat {
	case MsgAccepted:
		d.Uint32()     // verifier flavor
		d.SkipOpaque() // verifier body
		as := d.Uint32()
		if d.Err() != nil {
			return nil, &RPCError{Malformed: d.Err()}
		}
		switch as {
		case Success:
			return d.Rest(), nil
		case ProgMismatch:
			lo, hi := d.Uint32(), d.Uint32()
			if d.Err() != nil {
				return nil, &RPCError{Malformed: d.Err()}
			}
			return nil, &RPCError{AcceptStat: as, Low: lo, High: hi}
		}
		return nil, &RPCError{AcceptStat: as}
	case MsgDenied:
		rs := d.Uint32()
		e := &RPCError{Denied: true, RejectStat: rs}
		switch rs {
		case RPCMismatch:
			e.Low, e.High = d.Uint32(), d.Uint32()
		case AuthError:
			e.AuthStat = d.Uint32()
		}
		if d.Err() != nil {
			return nil, &RPCError{Malformed: d.Err()}
		}
		return nil, e
	}
	if d.Err() != nil {
		return nil, &RPCError{Malformed: d.Err()}
	}
	return nil, &RPCError{Malformed: fmt.Errorf("reply_stat %d", stat)}
}

// RecordReader reads record-marked records (RFC 5531 §11) from a
// bufio.Reader. A record in one fragment that fits the bufio buffer is
// returned in place (no copy); others are reassembled into an internal
// buffer. A returned record is valid until the next call to Next. Next is
// resumable after a read error such as a deadline: no state is lost.
type RecordReader struct {
	br       *bufio.Reader
	discard  int    // bytes of the previously returned in-place record
	acc      []byte // reassembly buffer
	accum    bool   // reassembling a multi-fragment (or large) record
	fragLeft int    // bytes left in the current fragment
	fragLast bool   // current fragment is the last of its record
	inFrag   bool
}

// grow makes room in acc for more of the current fragment: at most
// max(recordGrowStep, len(acc)) bytes beyond what has arrived (doubling), never
// more than the fragment has left.
func (r *RecordReader) grow() {
	if cap(r.acc) > len(r.acc) {
		return
	}
	add := min(r.fragLeft, max(recordGrowStep, len(r.acc)))
	na := make([]byte, len(r.acc), len(r.acc)+add)
	copy(na, r.acc)
	r.acc = na
}

// NewRecordReader returns a RecordReader on br.
func NewRecordReader(br *bufio.Reader) *RecordReader { return &RecordReader{br: br} }

// Buffered returns the number of bytes buffered but not yet returned.
func (r *RecordReader) Buffered() int { return r.br.Buffered() - r.discard }

// Next returns the next complete record.
func (r *RecordReader) Next() ([]byte, error) {
	if r.discard > 0 {
		r.br.Discard(r.discard) // buffered: cannot fail
		r.discard = 0
	}
	for {
		if !r.inFrag {
			hdr, err := r.br.Peek(4)
			if err != nil {
				return nil, err
			}
			h := binary.BigEndian.Uint32(hdr)
			n := int(h &^ lastFragment)
			last := h&lastFragment != 0
			if !r.accum && last && n+4 <= r.br.Size() {
				b, err := r.br.Peek(4 + n)
				if err != nil {
					return nil, err
				}
				r.discard = 4 + n
				return b[4:], nil
			}
			if len(r.acc)+n > MaxRecord {
				return nil, fmt.Errorf("rpc: record larger than %d bytes", MaxRecord)
			}
			r.br.Discard(4)
			if !r.accum {
				r.acc = r.acc[:0]
				r.accum = true
			}
			r.inFrag, r.fragLeft, r.fragLast = true, n, last
		}
		for r.fragLeft > 0 {
			r.grow()
			l := len(r.acc)
			k, err := r.br.Read(r.acc[l : l+min(r.fragLeft, cap(r.acc)-l)])
			r.acc = r.acc[:l+k]
			r.fragLeft -= k
			if err != nil {
				return nil, err
			}
		}
		r.inFrag = false
		if r.fragLast {
			r.accum = false
			return r.acc, nil
		}
	}
}
