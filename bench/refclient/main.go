// Command refclient is the minimal closed-loop pipelined NFSv3 GETATTR
// client that bench/generator_capacity.py sets beside fstress: it keeps
// -window calls in flight on one TCP connection, sends a new call for each
// reply, and prints one JSON line with the calls completed and the CPU
// time the process used over the measured interval.
//
// It is as lean as a client can be: the call is encoded once (only the XID
// changes), the socket is blocking and read and written with plain system
// calls on one goroutine (no netpoller), every read takes all the replies
// that arrived and every write sends all the calls they free. No latency,
// no pacing, no bookkeeping: the floor an open-loop generator is compared
// with.
//
//	refclient -server 127.0.0.1:2049 -window 16 -duration 5s -warmup 1s
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
)

const (
	nfsProgram = 100003
	nfsVersion = 3
	getattr    = 1
)

// call is the record-marked GETATTR call of the root handle with AUTH_NONE;
// the XID is patched in at offset 4.
func call(fh []byte) []byte {
	var b []byte
	u32 := func(v uint32) { b = binary.BigEndian.AppendUint32(b, v) }
	u32(0) // record mark
	u32(0) // xid
	u32(0) // CALL
	u32(2) // RPC version
	u32(nfsProgram)
	u32(nfsVersion)
	u32(getattr)
	u32(0) // cred AUTH_NONE
	u32(0)
	u32(0) // verf AUTH_NONE
	u32(0)
	u32(uint32(len(fh)))
	b = append(b, fh...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	binary.BigEndian.PutUint32(b, 0x80000000|uint32(len(b)-4))
	return b
}

type result struct {
	Window    int     `json:"window"`
	Ops       int64   `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerS   float64 `json:"ops_per_s"`
	CPUS      float64 `json:"cpu_s"`
	CPUUsOpS  float64 `json:"cpu_us_per_op"`
	UserS     float64 `json:"user_s"`
	SysS      float64 `json:"sys_s"`
	Replies   int64   `json:"replies_total"`
	GOMAXPROC int     `json:"gomaxprocs"`
}

func cpu() (user, sys float64) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds()
}

// client is the connection's state: the socket, the call template, the
// receive buffer and the send batch.
type client struct {
	fd    int
	tmpl  []byte
	xid   uint32
	in    []byte
	have  int
	out   []byte
	reply int64
}

// send appends n calls to the batch and writes it.
func (c *client) send(n int) error {
	c.out = c.out[:0]
	for i := 0; i < n; i++ {
		c.xid++
		off := len(c.out)
		c.out = append(c.out, c.tmpl...)
		binary.BigEndian.PutUint32(c.out[off+4:], c.xid)
	}
	for b := c.out; len(b) > 0; {
		k, err := syscall.Write(c.fd, b)
		if err != nil && err != syscall.EINTR {
			return err
		}
		if k > 0 {
			b = b[k:]
		}
	}
	return nil
}

// recv reads what arrived and returns the number of complete replies.
func (c *client) recv() (int, error) {
	k, err := syscall.Read(c.fd, c.in[c.have:])
	if err == syscall.EINTR {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if k == 0 {
		return 0, fmt.Errorf("server closed the connection")
	}
	c.have += k
	n, off := 0, 0
	for c.have-off >= 4 {
		l := int(binary.BigEndian.Uint32(c.in[off:]) &^ 0x80000000)
		if c.have-off < 4+l {
			break
		}
		off += 4 + l
		n++
	}
	c.have = copy(c.in, c.in[off:c.have])
	c.reply += int64(n)
	return n, nil
}

func main() {
	server := flag.String("server", "127.0.0.1:2049", "NFS server HOST:PORT")
	window := flag.Int("window", 1, "calls in flight")
	duration := flag.Duration("duration", 5*time.Second, "measured interval")
	warmup := flag.Duration("warmup", time.Second, "unmeasured interval before it")
	fh := flag.String("fh", "fstress-nullserver-root-handle!!", "file handle (bytes of the string)")
	flag.Parse()
	if err := run(*server, *window, *duration, *warmup, []byte(*fh)); err != nil {
		fmt.Fprintln(os.Stderr, "refclient:", err)
		os.Exit(1)
	}
}

func dial(server string) (int, error) {
	conn, err := net.DialTimeout("tcp", server, 5*time.Second)
	if err != nil {
		return 0, err
	}
	f, err := conn.(*net.TCPConn).File()
	conn.Close()
	if err != nil {
		return 0, err
	}
	fd := int(f.Fd()) // f stays referenced by the caller's lifetime (never closed)
	keep = append(keep, f)
	return fd, syscall.SetNonblock(fd, false)
}

var keep []*os.File

func run(server string, window int, duration, warmup time.Duration, fh []byte) error {
	if window < 1 || window > 4096 {
		return fmt.Errorf("-window must be in 1..4096")
	}
	fd, err := dial(server)
	if err != nil {
		return err
	}
	c := &client{fd: fd, tmpl: call(fh), in: make([]byte, 1<<20), out: make([]byte, 0, 256<<10)}
	if err := c.send(window); err != nil {
		return err
	}
	start := time.Now()
	measureAt, endAt := start.Add(warmup), start.Add(warmup+duration)
	var u0, s0 float64
	var ops0 int64
	measuring := false
	for {
		n, err := c.recv()
		if err != nil {
			return err
		}
		if n > 0 && c.reply&63 < int64(n) || n == 0 { // read the clock now and then
			now := time.Now()
			if !measuring && now.After(measureAt) {
				measuring, ops0 = true, c.reply
				u0, s0 = cpu()
				measureAt = now
			}
			if now.After(endAt) {
				u1, s1 := cpu()
				secs := now.Sub(measureAt).Seconds()
				ops := c.reply - ops0
				r := result{Window: window, Ops: ops, Seconds: secs, OpsPerS: float64(ops) / secs,
					CPUS: u1 - u0 + s1 - s0, UserS: u1 - u0, SysS: s1 - s0, Replies: c.reply}
				r.CPUUsOpS = r.CPUS / float64(max(ops, 1)) * 1e6
				r.GOMAXPROC = runtime.GOMAXPROCS(0)
				return json.NewEncoder(os.Stdout).Encode(r)
			}
		}
		if err := c.send(n); err != nil {
			return err
		}
	}
}
