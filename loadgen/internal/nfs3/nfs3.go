// Package nfs3 encodes NFS version 3 procedure arguments and decodes their
// results (RFC 1813), plus MOUNT version 3 MNT/UMNT (RFC 1813 appendix I).
//
// One Request struct carries the arguments of every procedure; Encode writes
// those of r.Proc. DecodeReply parses the complete result of a procedure,
// success and failure arms alike (post_op_attr, pre_op_attr, wcc_data,
// post_op_fh3, directory entry lists), so a reply is checked field by field.
//
// That is the client half (nfs3.go). The server half, in server.go, is its
// inverse: DecodeRequest parses the arguments of a call and EncodeReply
// writes its result (package nullserver and the tests use them).
//
// Field use by procedure (Request):
//
//	GETATTR, READLINK, FSSTAT, FSINFO, PATHCONF   FH
//	SETATTR    FH, sattr3 from Mode/SetSize/Size (guard off)
//	LOOKUP, REMOVE, RMDIR                        FH (directory), Name
//	ACCESS     FH, Access
//	READ       FH, Offset, Count
//	WRITE      FH, Offset, Stable and Count bytes made by Content (package
//	           content), else Data (count = len(Data)), else Count zeros
//	CREATE     FH, Name, CreateHow (UNCHECKED by default); sattr3 for
//	           UNCHECKED/GUARDED; CookieVerf is the verifier for EXCLUSIVE
//	MKDIR      FH, Name, sattr3
//	SYMLINK    FH, Name, sattr3, Target
//	MKNOD      FH, Name, NodeType (0 means NF3FIFO), sattr3
//	RENAME     FH, Name (from); ToFH, ToName (to)
//	LINK       FH (file); ToFH, ToName (new link)
//	READDIR    FH, Cookie, CookieVerf, Count (count; MaxCount if Count is 0)
//	READDIRPLUS FH, Cookie, CookieVerf, Count (dircount), MaxCount
//	COMMIT     FH, Offset, Count
//
// sattr3: mode is set when Mode != 0, size when SetSize; uid, gid, atime
// and mtime are left unchanged.
//
// Reply.Attr is the attributes of the object the procedure is about: the
// fattr3 of GETATTR; the post-operation attributes of the object for
// SETATTR, LOOKUP, ACCESS, READLINK, READ, WRITE, COMMIT, CREATE, MKDIR,
// SYMLINK, MKNOD, LINK (the file), FSSTAT, FSINFO, PATHCONF; of the directory
// for READDIR(PLUS), REMOVE, RMDIR and RENAME (the target directory). It is
// nil when the server sent none.
//
// Additions to the project contract: constants for file types, stable_how,
// createmode3, access bits, status codes; Request.CreateHow,
// Request.NodeType; Attr fields Nlink, UID, GID, Used, Fsid, Atime; Entry
// fields Type, Size (READDIRPLUS name attributes); Reply fields Access,
// Committed, Verf, FSInfo, FSStat, PathConf; FSINFO property bits and
// PropertyNames; DecodeReplyInto (reuses Attr/Entries); DecodeRequest
// (server side / tests); EncodeReply (server side / tests); Unmount;
// MountStatusString; MountError; FHSize; Args (Request.Encode as a closure).
package nfs3

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/xdr"
)

// Program numbers.
const (
	Program      = 100003
	Version      = 3
	MountProgram = 100005
	MountVersion = 3
)

// FHSize is NFS3_FHSIZE, the largest file handle.
const FHSize = 64

// Proc is an NFSv3 procedure number.
type Proc uint32

// Procedures (RFC 1813 numbering).
const (
	ProcNull        Proc = 0
	ProcGetattr     Proc = 1
	ProcSetattr     Proc = 2
	ProcLookup      Proc = 3
	ProcAccess      Proc = 4
	ProcReadlink    Proc = 5
	ProcRead        Proc = 6
	ProcWrite       Proc = 7
	ProcCreate      Proc = 8
	ProcMkdir       Proc = 9
	ProcSymlink     Proc = 10
	ProcMknod       Proc = 11
	ProcRemove      Proc = 12
	ProcRmdir       Proc = 13
	ProcRename      Proc = 14
	ProcLink        Proc = 15
	ProcReaddir     Proc = 16
	ProcReaddirplus Proc = 17
	ProcFsstat      Proc = 18
	ProcFsinfo      Proc = 19
	ProcPathconf    Proc = 20
	ProcCommit      Proc = 21
	NumProcs             = 22
)

var procNames = [NumProcs]string{
	"null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write",
	"create", "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link",
	"readdir", "readdirplus", "fsstat", "fsinfo", "pathconf", "commit",
}

func (p Proc) String() string {
	if int(p) < len(procNames) {
		return procNames[p]
	}
	return "proc" + strconv.Itoa(int(p))
}

// ProcByName maps a lower-case procedure name ("getattr") to its number.
func ProcByName(s string) (Proc, bool) {
	for i, n := range procNames {
		if n == s {
			return Proc(i), true
		}
	}
	return 0, false
}

// File types (ftype3).
const (
	NF3REG  = 1
	NF3DIR  = 2
	NF3BLK  = 3
	NF3CHR  = 4
	NF3LNK  = 5
	NF3SOCK = 6
	NF3FIFO = 7
)

// stable_how.
const (
	Unstable = 0
	DataSync = 1
	FileSync = 2
)

// createmode3.
const (
	CreateUnchecked = 0
	CreateGuarded   = 1
	CreateExclusive = 2
)

// ACCESS bits.
const (
	AccessRead    = 0x01
	AccessLookup  = 0x02
	AccessModify  = 0x04
	AccessExtend  = 0x08
	AccessDelete  = 0x10
	AccessExecute = 0x20
)

// nfsstat3 values.
const (
	NFS3_OK             = 0
	NFS3ERR_PERM        = 1
	NFS3ERR_NOENT       = 2
	NFS3ERR_IO          = 5
	NFS3ERR_NXIO        = 6
	NFS3ERR_ACCES       = 13
	NFS3ERR_EXIST       = 17
	NFS3ERR_XDEV        = 18
	NFS3ERR_NODEV       = 19
	NFS3ERR_NOTDIR      = 20
	NFS3ERR_ISDIR       = 21
	NFS3ERR_INVAL       = 22
	NFS3ERR_FBIG        = 27
	NFS3ERR_NOSPC       = 28
	NFS3ERR_ROFS        = 30
	NFS3ERR_MLINK       = 31
	NFS3ERR_NAMETOOLONG = 63
	NFS3ERR_NOTEMPTY    = 66
	NFS3ERR_DQUOT       = 69
	NFS3ERR_STALE       = 70
	NFS3ERR_REMOTE      = 71
	NFS3ERR_BADHANDLE   = 10001
	NFS3ERR_NOT_SYNC    = 10002
	NFS3ERR_BAD_COOKIE  = 10003
	NFS3ERR_NOTSUPP     = 10004
	NFS3ERR_TOOSMALL    = 10005
	NFS3ERR_SERVERFAULT = 10006
	NFS3ERR_BADTYPE     = 10007
	NFS3ERR_JUKEBOX     = 10008
)

var statusNames = map[uint32]string{
	0: "NFS3_OK", 1: "NFS3ERR_PERM", 2: "NFS3ERR_NOENT", 5: "NFS3ERR_IO", 6: "NFS3ERR_NXIO",
	13: "NFS3ERR_ACCES", 17: "NFS3ERR_EXIST", 18: "NFS3ERR_XDEV", 19: "NFS3ERR_NODEV",
	20: "NFS3ERR_NOTDIR", 21: "NFS3ERR_ISDIR", 22: "NFS3ERR_INVAL", 27: "NFS3ERR_FBIG",
	28: "NFS3ERR_NOSPC", 30: "NFS3ERR_ROFS", 31: "NFS3ERR_MLINK", 63: "NFS3ERR_NAMETOOLONG",
	66: "NFS3ERR_NOTEMPTY", 69: "NFS3ERR_DQUOT", 70: "NFS3ERR_STALE", 71: "NFS3ERR_REMOTE",
	10001: "NFS3ERR_BADHANDLE", 10002: "NFS3ERR_NOT_SYNC", 10003: "NFS3ERR_BAD_COOKIE",
	10004: "NFS3ERR_NOTSUPP", 10005: "NFS3ERR_TOOSMALL", 10006: "NFS3ERR_SERVERFAULT",
	10007: "NFS3ERR_BADTYPE", 10008: "NFS3ERR_JUKEBOX",
}

// StatusString names an nfsstat3 value ("NFS3ERR_NOENT"); unknown values
// are given as "NFS3ERR_<number>".
func StatusString(s uint32) string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "NFS3ERR_" + strconv.FormatUint(uint64(s), 10)
}

// FH is an NFSv3 file handle (at most 64 bytes).
type FH []byte

// Request holds the arguments of any procedure; see the package doc for
// which fields each procedure uses.
type Request struct {
	Proc   Proc
	FH     FH
	Name   string
	ToFH   FH
	ToName string

	Offset  uint64
	Count   uint32
	Data    []byte
	Content content.Ref // WRITE: Count bytes made at encode time when Content.Src is set
	Stable  uint32

	Mode    uint32
	SetSize bool
	Size    uint64

	Target string

	Cookie     uint64
	CookieVerf [8]byte
	MaxCount   uint32

	Access uint32

	CreateHow uint32 // createmode3 for CREATE
	NodeType  uint32 // ftype3 for MKNOD (0 means NF3FIFO)
}

// Args returns r.Encode as an argument function for rpc.Client.Go.
func (r *Request) Args() func(*xdr.Encoder) { return r.Encode }

func encodeSattr(e *xdr.Encoder, r *Request) {
	e.Bool(r.Mode != 0)
	if r.Mode != 0 {
		e.Uint32(r.Mode)
	}
	e.Bool(false) // uid
	e.Bool(false) // gid
	e.Bool(r.SetSize)
	if r.SetSize {
		e.Uint64(r.Size)
	}
	e.Uint32(0) // atime DONT_CHANGE
	e.Uint32(0) // mtime DONT_CHANGE
}

func diropargs(e *xdr.Encoder, fh FH, name string) {
	e.Opaque(fh)
	e.String(name)
}

// Encode appends the XDR arguments of r.Proc.
func (r *Request) Encode(e *xdr.Encoder) {
	switch r.Proc {
	case ProcNull:
	case ProcGetattr, ProcReadlink, ProcFsstat, ProcFsinfo, ProcPathconf:
		e.Opaque(r.FH)
	case ProcSetattr:
		e.Opaque(r.FH)
		encodeSattr(e, r)
		e.Bool(false) // guard
	case ProcLookup, ProcRemove, ProcRmdir:
		diropargs(e, r.FH, r.Name)
	case ProcAccess:
		e.Opaque(r.FH)
		e.Uint32(r.Access)
	case ProcRead, ProcCommit:
		e.Opaque(r.FH)
		e.Uint64(r.Offset)
		e.Uint32(r.Count)
	case ProcWrite:
		r.encodeWrite(e)
	case ProcCreate:
		r.encodeCreate(e)
	case ProcMkdir:
		diropargs(e, r.FH, r.Name)
		encodeSattr(e, r)
	case ProcSymlink:
		diropargs(e, r.FH, r.Name)
		encodeSattr(e, r)
		e.String(r.Target)
	case ProcMknod:
		r.encodeMknod(e)
	case ProcRename:
		diropargs(e, r.FH, r.Name)
		diropargs(e, r.ToFH, r.ToName)
	case ProcLink:
		e.Opaque(r.FH)
		diropargs(e, r.ToFH, r.ToName)
	case ProcReaddir, ProcReaddirplus:
		r.encodeReaddir(e)
	}
}

// encodeWrite appends WRITE3args: file, offset, count, stable, data — Count
// bytes of Content, or Data, or Count zero bytes when both are unset.
func (r *Request) encodeWrite(e *xdr.Encoder) {
	e.Opaque(r.FH)
	e.Uint64(r.Offset)
	if c := r.Content; c.Src != nil {
		e.Uint32(r.Count)
		e.Uint32(r.Stable)
		c.Src.Fill(e.OpaqueSpace(int(r.Count)), c.File, r.Offset, c.Gen)
	} else if r.Data != nil {
		e.Uint32(uint32(len(r.Data)))
		e.Uint32(r.Stable)
		e.Opaque(r.Data)
	} else {
		e.Uint32(r.Count)
		e.Uint32(r.Stable)
		e.Zeros(int(r.Count))
	}
}

// encodeCreate appends CREATE3args: where, then createhow3 — the verifier
// for EXCLUSIVE, sattr3 otherwise.
func (r *Request) encodeCreate(e *xdr.Encoder) {
	diropargs(e, r.FH, r.Name)
	e.Uint32(r.CreateHow)
	if r.CreateHow == CreateExclusive {
		e.FixedOpaque(r.CookieVerf[:])
	} else {
		encodeSattr(e, r)
	}
}

// encodeMknod appends MKNOD3args: where, then mknoddata3 for NodeType (0
// means NF3FIFO) — sattr3 and a zero specdata3 for character and block
// devices, sattr3 for sockets and FIFOs.
func (r *Request) encodeMknod(e *xdr.Encoder) {
	diropargs(e, r.FH, r.Name)
	t := r.NodeType
	if t == 0 {
		t = NF3FIFO
	}
	e.Uint32(t)
	switch t {
	case NF3CHR, NF3BLK:
		encodeSattr(e, r)
		e.Uint32(0) // specdata1
		e.Uint32(0) // specdata2
	case NF3SOCK, NF3FIFO:
		encodeSattr(e, r)
	}
}

// encodeReaddir appends READDIR3args (dir, cookie, cookieverf, count: Count,
// or MaxCount when Count is 0) or READDIRPLUS3args (dir, cookie,
// cookieverf, dircount Count, maxcount MaxCount).
func (r *Request) encodeReaddir(e *xdr.Encoder) {
	e.Opaque(r.FH)
	e.Uint64(r.Cookie)
	e.FixedOpaque(r.CookieVerf[:])
	switch {
	case r.Proc == ProcReaddirplus:
		e.Uint32(r.Count)
		e.Uint32(r.MaxCount)
	case r.Count != 0:
		e.Uint32(r.Count)
	default:
		e.Uint32(r.MaxCount)
	}
}

// ErrUnknownProc is returned for procedure numbers outside 0..21.
var ErrUnknownProc = errors.New("nfs3: unknown procedure")

// Attr is a subset of fattr3; times are in nanoseconds since the epoch.
type Attr struct {
	Type   uint32
	Mode   uint32
	Nlink  uint32
	UID    uint32
	GID    uint32
	Size   uint64
	Used   uint64
	Fsid   uint64
	FileID uint64
	Atime  uint64
	Mtime  uint64
	Ctime  uint64
}

// Entry is one READDIR / READDIRPLUS entry. FH, Type and Size are only
// filled by READDIRPLUS (when the server sent a handle / attributes).
type Entry struct {
	FileID uint64
	Name   string
	Cookie uint64
	FH     FH
	Type   uint32
	Size   uint64
}

// FSInfo holds the FSINFO results.
type FSInfo struct {
	RTMax, RTPref, RTMult, WTMax, WTPref, WTMult, DTPref uint32
	MaxFileSize                                          uint64
	TimeDelta                                            uint64 // ns
	Properties                                           uint32
}

// FSINFO properties bits (RFC 1813 §3.3.19).
const (
	FSF3_LINK        = 0x0001 // hard links supported
	FSF3_SYMLINK     = 0x0002 // symbolic links supported
	FSF3_HOMOGENEOUS = 0x0008 // PATHCONF is the same for every object
	FSF3_CANSETTIME  = 0x0010 // SETATTR can set times
)

// PropertyNames names the FSINFO property bits set in p, in bit order:
// "link", "symlink", "homogeneous", "cansettime". Other bits are not named.
func PropertyNames(p uint32) []string {
	names := []string{}
	for _, b := range []struct {
		bit  uint32
		name string
	}{{FSF3_LINK, "link"}, {FSF3_SYMLINK, "symlink"}, {FSF3_HOMOGENEOUS, "homogeneous"}, {FSF3_CANSETTIME, "cansettime"}} {
		if p&b.bit != 0 {
			names = append(names, b.name)
		}
	}
	return names
}

// FSStat holds the FSSTAT results.
type FSStat struct {
	TBytes, FBytes, ABytes, TFiles, FFiles, AFiles uint64
	Invarsec                                       uint32
}

// PathConf holds the PATHCONF results (RFC 1813 §3.3.20).
type PathConf struct {
	LinkMax, NameMax uint32
	NoTrunc          bool // names longer than NameMax are an error, not truncated
	ChownRestricted  bool // only a privileged user may change the owner
	CaseInsensitive  bool
	CasePreserving   bool
}

// Reply holds the decoded result of any procedure.
type Reply struct {
	Status     uint32 // nfsstat3
	FH         FH     // LOOKUP, CREATE, MKDIR, SYMLINK, MKNOD (nil if absent)
	Attr       *Attr
	Count      uint32 // READ, WRITE: bytes read / written
	EOF        bool   // READ, READDIR(PLUS)
	Entries    []Entry
	CookieVerf [8]byte
	Target     string // READLINK
	Access     uint32 // ACCESS: granted bits
	Committed  uint32 // WRITE: stable_how committed
	Verf       [8]byte
	FSInfo     FSInfo
	FSStat     FSStat
	PathConf   PathConf

	spare *Attr // reused by DecodeReplyInto
}

// DecodeReply decodes the result of procedure p from an RPC reply body. The
// error reports malformed XDR only; NFS errors are in Status. The Reply
// does not alias body.
func DecodeReply(p Proc, body []byte) (Reply, error) {
	var r Reply
	err := DecodeReplyInto(p, body, &r)
	r.spare = nil
	return r, err
}

// DecodeReplyInto is DecodeReply into r, reusing r's Attr storage and
// Entries backing array from an earlier call (the FH is always a fresh
// copy, so handles may be kept).
func DecodeReplyInto(p Proc, body []byte, r *Reply) error {
	spare := r.spare
	if spare == nil {
		spare = r.Attr
	}
	entries := r.Entries[:0]
	*r = Reply{spare: spare, Entries: entries}
	if p == ProcNull {
		if len(body) != 0 {
			return fmt.Errorf("nfs3: null reply: %d unexpected bytes", len(body))
		}
		r.Entries = nil
		return nil
	}
	d := xdr.NewDecoder(body)
	r.Status = d.Uint32()
	if !r.decodeResult(p, d, r.Status == NFS3_OK) {
		return ErrUnknownProc
	}
	if len(r.Entries) == 0 {
		r.Entries = nil
	}
	if d.Err() != nil {
		return fmt.Errorf("nfs3: %s reply: %w", p, d.Err())
	}
	if d.Remaining() != 0 {
		return fmt.Errorf("nfs3: %s reply: %d trailing bytes", p, d.Remaining())
	}
	return nil
}

// decodeResult decodes the result of procedure p (not NULL) after its
// status; ok is status == NFS3_OK. False for an unknown procedure.
func (r *Reply) decodeResult(p Proc, d *xdr.Decoder, ok bool) bool {
	switch p {
	case ProcGetattr:
		if ok {
			decodeFattr(d, r.attr())
		}
	case ProcSetattr, ProcRemove, ProcRmdir:
		r.wcc(d, true)
	case ProcLookup:
		if ok {
			r.FH = copyFH(d.OpaqueMax(FHSize))
			r.postOp(d, true)
		}
		r.postOp(d, false) // directory
	case ProcAccess:
		r.postOp(d, true)
		if ok {
			r.Access = d.Uint32()
		}
	case ProcReadlink:
		r.postOp(d, true)
		if ok {
			r.Target = d.String()
		}
	case ProcRead:
		r.decodeRead(d, ok)
	case ProcWrite:
		r.decodeWrite(d, ok)
	case ProcCreate, ProcMkdir, ProcSymlink, ProcMknod:
		r.decodeCreated(d, ok)
	case ProcRename:
		r.wcc(d, false) // from directory
		r.wcc(d, true)  // to directory
	case ProcLink:
		r.postOp(d, true)
		r.wcc(d, false)
	case ProcReaddir, ProcReaddirplus:
		r.postOp(d, true)
		if ok {
			copy(r.CookieVerf[:], d.FixedOpaque(8))
			r.decodeEntries(d, p == ProcReaddirplus)
			r.EOF = d.Bool()
		}
	case ProcFsstat:
		r.postOp(d, true)
		if ok {
			decodeFsstat(d, &r.FSStat)
		}
	case ProcFsinfo:
		r.postOp(d, true)
		if ok {
			decodeFsinfo(d, &r.FSInfo)
		}
	case ProcPathconf:
		r.postOp(d, true)
		if ok {
			decodePathconf(d, &r.PathConf)
		}
	case ProcCommit:
		r.wcc(d, true)
		if ok {
			copy(r.Verf[:], d.FixedOpaque(8))
		}
	default:
		return false
	}
	return true
}

// decodeRead decodes READ3res after the status: attributes, then on
// success count, eof and the data, which is skipped (its length must be
// count).
func (r *Reply) decodeRead(d *xdr.Decoder, ok bool) {
	r.postOp(d, true)
	if !ok {
		return
	}
	r.Count = d.Uint32()
	r.EOF = d.Bool()
	n := d.SkipOpaque()
	if d.Err() == nil && uint32(n) != r.Count {
		d.Fail(fmt.Errorf("nfs3: READ count %d but %d data bytes", r.Count, n))
	}
}

// decodeWrite decodes WRITE3res after the status: wcc_data, then on success
// count, committed and the write verifier.
func (r *Reply) decodeWrite(d *xdr.Decoder, ok bool) {
	r.wcc(d, true)
	if ok {
		r.Count = d.Uint32()
		r.Committed = d.Uint32()
		copy(r.Verf[:], d.FixedOpaque(8))
	}
}

// decodeCreated decodes CREATE3res, MKDIR3res, SYMLINK3res and MKNOD3res
// after the status: on success post_op_fh3 and the new object's attributes
// (r.Attr); then the directory's wcc_data, whose attributes are r.Attr only
// on failure.
func (r *Reply) decodeCreated(d *xdr.Decoder, ok bool) {
	if ok {
		if d.Bool() {
			r.FH = copyFH(d.OpaqueMax(FHSize))
		}
		r.postOp(d, true)
	}
	r.wcc(d, !ok)
}

// decodeFsstat decodes the success arm of FSSTAT3res after the attributes
// (RFC 1813 §3.3.18).
func decodeFsstat(d *xdr.Decoder, s *FSStat) {
	s.TBytes, s.FBytes, s.ABytes = d.Uint64(), d.Uint64(), d.Uint64()
	s.TFiles, s.FFiles, s.AFiles = d.Uint64(), d.Uint64(), d.Uint64()
	s.Invarsec = d.Uint32()
}

// decodeFsinfo decodes the success arm of FSINFO3res after the attributes
// (RFC 1813 §3.3.19).
func decodeFsinfo(d *xdr.Decoder, f *FSInfo) {
	f.RTMax, f.RTPref, f.RTMult = d.Uint32(), d.Uint32(), d.Uint32()
	f.WTMax, f.WTPref, f.WTMult = d.Uint32(), d.Uint32(), d.Uint32()
	f.DTPref = d.Uint32()
	f.MaxFileSize = d.Uint64()
	f.TimeDelta = nfstime(d)
	f.Properties = d.Uint32()
}

// decodePathconf decodes the success arm of PATHCONF3res after the
// attributes (RFC 1813 §3.3.20): linkmax, name_max, then the booleans
// no_trunc, chown_restricted, case_insensitive, case_preserving.
func decodePathconf(d *xdr.Decoder, p *PathConf) {
	p.LinkMax, p.NameMax = d.Uint32(), d.Uint32()
	p.NoTrunc, p.ChownRestricted = d.Bool(), d.Bool()
	p.CaseInsensitive, p.CasePreserving = d.Bool(), d.Bool()
}

func copyFH(b []byte) FH {
	if b == nil {
		return nil
	}
	fh := make(FH, len(b))
	copy(fh, b)
	return fh
}

func (r *Reply) attr() *Attr {
	if r.spare == nil {
		r.spare = new(Attr)
	}
	r.Attr = r.spare
	return r.Attr
}

func nfstime(d *xdr.Decoder) uint64 {
	s, ns := d.Uint32(), d.Uint32()
	return uint64(s)*1e9 + uint64(ns)
}

func decodeFattr(d *xdr.Decoder, a *Attr) {
	a.Type = d.Uint32()
	a.Mode = d.Uint32()
	a.Nlink = d.Uint32()
	a.UID = d.Uint32()
	a.GID = d.Uint32()
	a.Size = d.Uint64()
	a.Used = d.Uint64()
	d.Uint32() // rdev.specdata1
	d.Uint32() // rdev.specdata2
	a.Fsid = d.Uint64()
	a.FileID = d.Uint64()
	a.Atime = nfstime(d)
	a.Mtime = nfstime(d)
	a.Ctime = nfstime(d)
}

// skipFattr consumes a fattr3 (84 bytes).
func skipFattr(d *xdr.Decoder) { d.Skip(84) }

// postOp decodes a post_op_attr; keep makes it r.Attr.
func (r *Reply) postOp(d *xdr.Decoder, keep bool) {
	if d.Bool() {
		if keep {
			decodeFattr(d, r.attr())
		} else {
			skipFattr(d)
		}
	}
}

// wcc decodes a wcc_data: pre_op_attr (skipped) then post_op_attr.
func (r *Reply) wcc(d *xdr.Decoder, keep bool) {
	if d.Bool() {
		d.Skip(24) // wcc_attr: size, mtime, ctime
	}
	r.postOp(d, keep)
}

// Bounds on a decoded READDIR / READDIRPLUS reply. A reply holds at most the
// count the call asked (RFC 1813 §3.3.16–17); fstress asks at most 8 KiB and an
// entry takes ≥ 24 bytes on the wire, so a legal reply has ≤ 342 entries.
// Decoded, an entry takes 72 bytes plus its name, 3× its smallest wire form:
// without a bound a 1 MiB reply of empty names would decode to 3 MiB.
const (
	MaxEntries = 1024 // entries accepted in one reply
	MaxNameLen = 255  // bytes of an entry's name (NAME_MAX)
)

func (r *Reply) decodeEntries(d *xdr.Decoder, plus bool) {
	for n := 0; d.Bool(); n++ {
		if n >= MaxEntries {
			d.Fail(fmt.Errorf("nfs3: more than %d directory entries in one reply", MaxEntries))
			return
		}
		if d.Remaining() <= 0 {
			d.Fail(errors.New("nfs3: truncated directory entry list"))
			return
		}
		var e Entry
		e.FileID = d.Uint64()
		e.Name = d.StringMax(MaxNameLen)
		e.Cookie = d.Uint64()
		if plus {
			if d.Bool() {
				var a Attr
				decodeFattr(d, &a)
				e.Type, e.Size = a.Type, a.Size
			}
			if d.Bool() {
				e.FH = copyFH(d.OpaqueMax(FHSize))
			}
		}
		if d.Err() != nil {
			return
		}
		r.Entries = append(r.Entries, e)
	}
}

// MOUNT procedures and status.
const (
	MountProcNull   = 0
	MountProcMnt    = 1
	MountProcUmnt   = 3
	MountProcExport = 5
	MNT3_OK         = 0
	MountPathMax    = 1024
)

var mountStatus = map[uint32]string{
	0: "MNT3_OK", 1: "MNT3ERR_PERM", 2: "MNT3ERR_NOENT", 5: "MNT3ERR_IO", 13: "MNT3ERR_ACCES",
	20: "MNT3ERR_NOTDIR", 22: "MNT3ERR_INVAL", 63: "MNT3ERR_NAMETOOLONG",
	10004: "MNT3ERR_NOTSUPP", 10006: "MNT3ERR_SERVERFAULT",
}

// MountStatusString names a mountstat3 value.
func MountStatusString(s uint32) string {
	if n, ok := mountStatus[s]; ok {
		return n
	}
	return "MNT3ERR_" + strconv.FormatUint(uint64(s), 10)
}

// MountError is a MNT reply whose mountstat3 is not MNT3_OK: the server
// answered and refused the export.
type MountError struct {
	Export string
	Status uint32 // mountstat3
}

func (e *MountError) Error() string {
	return fmt.Sprintf("mount %q: %s", e.Export, MountStatusString(e.Status))
}

// Mount calls MOUNT3 MNT for export on c (a client dialed to the MOUNT
// service port) and returns the root file handle. A refusal is a
// *MountError.
func Mount(ctx context.Context, c *rpc.Client, export string) (FH, error) {
	body, err := c.CallContext(ctx, MountProgram, MountVersion, MountProcMnt, func(e *xdr.Encoder) {
		e.String(export)
	})
	if err != nil {
		return nil, fmt.Errorf("mount %q: %w", export, err)
	}
	d := xdr.NewDecoder(body)
	st := d.Uint32()
	if d.Err() == nil && st != MNT3_OK {
		return nil, &MountError{Export: export, Status: st}
	}
	fh := d.OpaqueMax(FHSize)
	n := d.Uint32() // auth flavors
	for i := uint32(0); i < n && d.Err() == nil; i++ {
		d.Uint32()
	}
	if d.Err() != nil {
		return nil, fmt.Errorf("mount %q: malformed MNT reply: %w", export, d.Err())
	}
	return copyFH(fh), nil
}

// Unmount calls MOUNT3 UMNT for export (the server only forgets the mount
// entry; the handle stays valid).
func Unmount(ctx context.Context, c *rpc.Client, export string) error {
	_, err := c.CallContext(ctx, MountProgram, MountVersion, MountProcUmnt, func(e *xdr.Encoder) {
		e.String(export)
	})
	if err != nil {
		return fmt.Errorf("umount %q: %w", export, err)
	}
	return nil
}
