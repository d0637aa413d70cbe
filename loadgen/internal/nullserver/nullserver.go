// Package nullserver is a trivial ONC RPC server that answers, on one TCP
// listener, the portmapper (v2 NULL; GETPORT, which returns the listener's
// own port for NFS, MOUNT and the portmapper; DUMP, which lists those three
// over TCP on that port), MOUNT v3 (NULL, MNT with a fixed fake root handle,
// DUMP, UMNT, UMNTALL, EXPORT) and every NFS v3 procedure with NFS3_OK and
// well-formed fake results: handles derived from the directory handle and
// name, zero-filled READ data of the asked count (at most 1 MiB), WRITE
// count = asked, three-entry directory listings, and FSINFO, FSSTAT and
// PATHCONF values of a plausible filer (the variables FSInfo, FSStat and
// PathConf), and NFS v4.1 COMPOUNDs of the operations fstress uses (nfs4.go:
// canned results, real client ids, sessions and slot sequence ids). It
// measures the capacity of a load generator (Fstress §6.5)
// and stands in for a server in tests.
//
// Each connection is served by one goroutine that reads requests in order,
// appends each reply to an output buffer and writes the buffer when no more
// requests are buffered (pipelining with batched writes). Arguments are
// decoded with nfs3.DecodeRequest; undecodable arguments get GARBAGE_ARGS,
// unknown programs PROG_UNAVAIL, wrong versions PROG_MISMATCH, unknown
// procedures PROC_UNAVAIL, RPC versions other than 2 a denied RPC_MISMATCH.
//
// Additions to the project contract: Server (with a Drop hook for tests
// that need lost calls, a Delay hook for slow replies and a MountStatus for
// refused mounts), Server.Serve, Server.Slots4, Server.ForgetSessions,
// Server.ForgetClients, Server.State4, RootFH4, DefaultSlots4,
// RootFH, FSInfo, FSStat, PathConf, Mappings.
package nullserver

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/xdr"
)

// RootFH is the handle MNT returns.
var RootFH = nfs3.FH("fstress-nullserver-root-handle!!")

const maxRead = 1 << 20

// FSInfo, FSStat and PathConf are the results of FSINFO, FSSTAT and
// PATHCONF: a plausible filer, each field a different value so that a
// client mixing fields up shows. Not to be modified while serving.
var (
	FSInfo = nfs3.FSInfo{RTMax: maxRead, RTPref: 256 << 10, RTMult: 4096, WTMax: 512 << 10, WTPref: 128 << 10,
		WTMult: 8192, DTPref: 64 << 10, MaxFileSize: 1<<63 - 1, TimeDelta: 1000, Properties: 0x1b}
	FSStat = nfs3.FSStat{TBytes: 1 << 40, FBytes: 3 << 38, ABytes: 5 << 37, TFiles: 1 << 30, FFiles: 3 << 28,
		AFiles: 5 << 27, Invarsec: 30}
	PathConf = nfs3.PathConf{LinkMax: 32000, NameMax: 255, NoTrunc: true, ChownRestricted: true,
		CaseInsensitive: false, CasePreserving: true}
)

// Mappings is the portmapper DUMP of a server listening on port: the
// portmapper v2, NFS v3 and MOUNT v3, all over TCP on that port.
func Mappings(port uint32) []rpc.Mapping {
	return []rpc.Mapping{
		{Prog: rpc.PmapProgram, Vers: rpc.PmapVersion, Prot: rpc.IPProtoTCP, Port: port},
		{Prog: nfs3.Program, Vers: nfs3.Version, Prot: rpc.IPProtoTCP, Port: port},
		{Prog: nfs3.MountProgram, Vers: nfs3.MountVersion, Prot: rpc.IPProtoTCP, Port: port},
	}
}

// Server answers calls; the zero value is ready to use.
type Server struct {
	// Drop, when non-nil, is asked for every call; calls for which it
	// returns true get no reply (to test client timeouts).
	Drop func(prog, vers, proc, xid uint32) bool
	// MountStatus, when not MNT3_OK (0), is the mountstat3 of every MNT
	// reply (to test refused mounts, e.g. 2 MNT3ERR_NOENT).
	MountStatus uint32
	// Delay, when non-nil, is asked for every call; the connection waits
	// that long before handling it (a busy server: tests of the drain probe).
	Delay func(prog, vers, proc, xid uint32) time.Duration
	// Slots4, when not 0, caps the NFSv4.1 fore channel slots granted
	// (default DefaultSlots4).
	Slots4 uint32

	v4 v4State
}

// Serve serves ln with a zero Server until ctx ends (then it closes ln and
// every connection and returns nil) or ln fails.
func Serve(ctx context.Context, ln net.Listener) error {
	return (&Server{}).Serve(ctx, ln)
}

// ServeLoopback serves s on an ephemeral 127.0.0.1 TCP port (tests and
// capacity runs); stop ends it and returns once Serve has returned.
func (s *Server) ServeLoopback() (addr *net.TCPAddr, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, ln); close(done) }()
	return ln.Addr().(*net.TCPAddr), func() { cancel(); <-done }, nil
}

// Serve serves ln until ctx ends or ln fails; it returns after every
// connection goroutine has finished.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	port := uint32(0)
	if ta, ok := ln.Addr().(*net.TCPAddr); ok {
		port = uint32(ta.Port)
	}
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
		done  bool
	)
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		done = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	var err error
	for {
		c, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				err = aerr
			}
			break
		}
		mu.Lock()
		if done {
			mu.Unlock()
			c.Close()
			break
		}
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(c, &connState{port: port, mountStatus: s.MountStatus})
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		}()
	}
	mu.Lock()
	for c := range conns {
		c.Close()
	}
	mu.Unlock()
	wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

type connState struct {
	port        uint32
	mountStatus uint32
	out         xdr.Encoder
	req         nfs3.Request
	rep         nfs3.Reply
	attr        nfs3.Attr
	fhbuf       [16]byte
	ents        [3]nfs3.Entry
	v4          conn4
}

func (s *Server) serveConn(c net.Conn, st *connState) {
	st.out.Grow(64 << 10)
	rr := rpc.NewRecordReader(bufio.NewReaderSize(c, 128<<10))
	for {
		rec, err := rr.Next()
		if err != nil {
			return
		}
		s.handle(st, rec)
		if rr.Buffered() == 0 || st.out.Len() > 256<<10 {
			if st.out.Len() > 0 {
				if _, err := c.Write(st.out.Bytes()); err != nil {
					return
				}
				st.out.Reset()
			}
		}
	}
}

// beginReply appends the record mark placeholder and an accepted reply
// header with the given accept_stat; it returns the record's start offset.
func beginReply(e *xdr.Encoder, xid, acceptStat uint32) int {
	start := e.Len()
	e.Uint32(0)
	e.Uint32(xid)
	e.Uint32(rpc.MsgReply)
	e.Uint32(rpc.MsgAccepted)
	e.Uint32(rpc.AuthNoneFlavor)
	e.Uint32(0)
	e.Uint32(acceptStat)
	return start
}

func endReply(e *xdr.Encoder, start int) {
	e.PutUint32At(start, 0x80000000|uint32(e.Len()-start-4))
}

func (s *Server) handle(st *connState, rec []byte) {
	d := xdr.NewDecoder(rec)
	xid := d.Uint32()
	mtype := d.Uint32()
	rpcvers := d.Uint32()
	prog, vers, proc := d.Uint32(), d.Uint32(), d.Uint32()
	d.Uint32() // cred flavor
	d.SkipOpaque()
	d.Uint32() // verf flavor
	d.SkipOpaque()
	if d.Err() != nil || mtype != rpc.MsgCall {
		return // not a call: ignore
	}
	if s.Drop != nil && s.Drop(prog, vers, proc, xid) {
		return
	}
	if s.Delay != nil {
		time.Sleep(s.Delay(prog, vers, proc, xid))
	}
	e := &st.out
	if rpcvers != rpc.RPCVersion {
		start := e.Len()
		e.Uint32(0)
		e.Uint32(xid)
		e.Uint32(rpc.MsgReply)
		e.Uint32(rpc.MsgDenied)
		e.Uint32(rpc.RPCMismatch)
		e.Uint32(rpc.RPCVersion)
		e.Uint32(rpc.RPCVersion)
		endReply(e, start)
		return
	}
	args := d.Rest()
	switch prog {
	case nfs3.Program:
		switch vers {
		case nfs3.Version:
			st.nfs(e, xid, nfs3.Proc(proc), args)
		case nfs4.Version:
			s.nfs4(st, e, xid, proc, args)
		default:
			start := beginReply(e, xid, rpc.ProgMismatch)
			e.Uint32(nfs3.Version)
			e.Uint32(nfs4.Version)
			endReply(e, start)
		}
	case nfs3.MountProgram:
		if vers != nfs3.MountVersion {
			mismatch(e, xid, nfs3.MountVersion)
			return
		}
		st.mount(e, xid, proc, args)
	case rpc.PmapProgram:
		if vers != rpc.PmapVersion {
			mismatch(e, xid, rpc.PmapVersion)
			return
		}
		st.pmap(e, xid, proc, args)
	default:
		endReply(e, beginReply(e, xid, rpc.ProgUnavail))
	}
}

func mismatch(e *xdr.Encoder, xid, v uint32) {
	start := beginReply(e, xid, rpc.ProgMismatch)
	e.Uint32(v)
	e.Uint32(v)
	endReply(e, start)
}

func (st *connState) pmap(e *xdr.Encoder, xid, proc uint32, args []byte) {
	switch proc {
	case rpc.PmapProcNull:
		endReply(e, beginReply(e, xid, rpc.Success))
	case rpc.PmapProcGetport:
		d := xdr.NewDecoder(args)
		prog, vers, prot := d.Uint32(), d.Uint32(), d.Uint32()
		d.Uint32()
		if d.Err() != nil {
			endReply(e, beginReply(e, xid, rpc.GarbageArgs))
			return
		}
		port := uint32(0)
		for _, m := range Mappings(st.port) {
			if m.Prog == prog && m.Vers == vers && m.Prot == prot {
				port = m.Port
			}
		}
		start := beginReply(e, xid, rpc.Success)
		e.Uint32(port)
		endReply(e, start)
	case rpc.PmapProcDump:
		start := beginReply(e, xid, rpc.Success)
		rpc.EncodeMappings(e, Mappings(st.port))
		endReply(e, start)
	default:
		endReply(e, beginReply(e, xid, rpc.ProcUnavail))
	}
}

func (st *connState) mount(e *xdr.Encoder, xid, proc uint32, args []byte) {
	d := xdr.NewDecoder(args)
	switch proc {
	case nfs3.MountProcNull, 4: // NULL, UMNTALL
		endReply(e, beginReply(e, xid, rpc.Success))
	case nfs3.MountProcMnt:
		d.StringMax(nfs3.MountPathMax)
		if d.Err() != nil {
			endReply(e, beginReply(e, xid, rpc.GarbageArgs))
			return
		}
		start := beginReply(e, xid, rpc.Success)
		if st.mountStatus != nfs3.MNT3_OK {
			e.Uint32(st.mountStatus) // mountres3 failure arm: the status only
			endReply(e, start)
			return
		}
		e.Uint32(nfs3.MNT3_OK)
		e.Opaque(RootFH)
		e.Uint32(1)
		e.Uint32(rpc.AuthSysFlavor)
		endReply(e, start)
	case 2: // DUMP
		start := beginReply(e, xid, rpc.Success)
		e.Bool(false)
		endReply(e, start)
	case nfs3.MountProcUmnt:
		d.StringMax(nfs3.MountPathMax)
		if d.Err() != nil {
			endReply(e, beginReply(e, xid, rpc.GarbageArgs))
			return
		}
		endReply(e, beginReply(e, xid, rpc.Success))
	case nfs3.MountProcExport:
		start := beginReply(e, xid, rpc.Success)
		e.Bool(true)
		e.String("/")
		e.Bool(false) // no groups
		e.Bool(false) // end of list
		endReply(e, start)
	default:
		endReply(e, beginReply(e, xid, rpc.ProcUnavail))
	}
}

// handle derives a 16-byte fake handle from a directory handle and a name.
func (st *connState) handle(dir nfs3.FH, name string) nfs3.FH {
	h := uint64(14695981039346656037) // FNV-1a
	for _, b := range dir {
		h = (h ^ uint64(b)) * 1099511628211
	}
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	copy(st.fhbuf[:8], "nullfh00")
	binary.BigEndian.PutUint64(st.fhbuf[8:], h)
	return st.fhbuf[:]
}

var verf = [8]byte{'n', 'u', 'l', 'l', 's', 'e', 'r', 'v'}

func (st *connState) nfs(e *xdr.Encoder, xid uint32, p nfs3.Proc, args []byte) {
	if p >= nfs3.NumProcs {
		endReply(e, beginReply(e, xid, rpc.ProcUnavail))
		return
	}
	r := &st.req
	if err := nfs3.DecodeRequest(p, args, r); err != nil {
		endReply(e, beginReply(e, xid, rpc.GarbageArgs))
		return
	}
	a := &st.attr
	*a = nfs3.Attr{Type: nfs3.NF3REG, Mode: 0o644, Nlink: 1, Size: 1 << 20, Used: 1 << 20, Fsid: 1, FileID: 2,
		Atime: 1.7e18, Mtime: 1.7e18, Ctime: 1.7e18}
	rep := &st.rep
	*rep = nfs3.Reply{Attr: a}
	switch p {
	case nfs3.ProcLookup:
		rep.FH = st.handle(r.FH, r.Name)
	case nfs3.ProcCreate, nfs3.ProcMkdir, nfs3.ProcSymlink, nfs3.ProcMknod:
		rep.FH = st.handle(r.FH, r.Name)
		switch p {
		case nfs3.ProcMkdir:
			a.Type = nfs3.NF3DIR
		case nfs3.ProcSymlink:
			a.Type = nfs3.NF3LNK
		}
	case nfs3.ProcAccess:
		rep.Access = r.Access
	case nfs3.ProcReadlink:
		a.Type = nfs3.NF3LNK
		rep.Target = "nullserver-target"
	case nfs3.ProcRead:
		rep.Count = min(r.Count, maxRead)
	case nfs3.ProcWrite:
		rep.Count = r.Count
		rep.Committed = nfs3.FileSync
		rep.Verf = verf
	case nfs3.ProcCommit:
		rep.Verf = verf
	case nfs3.ProcReaddir, nfs3.ProcReaddirplus:
		a.Type = nfs3.NF3DIR
		rep.CookieVerf = verf
		if r.Cookie == 0 {
			names := [3]string{"file0", "dir0", "link0"}
			types := [3]uint32{nfs3.NF3REG, nfs3.NF3DIR, nfs3.NF3LNK}
			for i := range st.ents {
				en := &st.ents[i]
				*en = nfs3.Entry{FileID: uint64(10 + i), Name: names[i], Cookie: uint64(i + 1), Type: types[i], Size: 4096}
				if p == nfs3.ProcReaddirplus {
					en.FH = nfs3.FH(RootFH[:16]) // fixed fake handle
				}
			}
			rep.Entries = st.ents[:]
		}
		rep.EOF = true
	case nfs3.ProcFsstat:
		rep.FSStat = FSStat
	case nfs3.ProcFsinfo:
		a.Type = nfs3.NF3DIR
		rep.FSInfo = FSInfo
	case nfs3.ProcPathconf:
		rep.PathConf = PathConf
	case nfs3.ProcGetattr:
		if string(r.FH) == string(RootFH) {
			a.Type = nfs3.NF3DIR
		}
	}
	start := beginReply(e, xid, rpc.Success)
	nfs3.EncodeReply(p, rep, e)
	endReply(e, start)
}
