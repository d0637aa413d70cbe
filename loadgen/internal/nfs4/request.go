package nfs4

import (
	"strconv"

	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/xdr"
)

// Op is a COMPOUND kind fstress sends (see the package doc).
type Op uint32

// COMPOUND kinds.
const (
	OpNull Op = iota
	OpGetattr
	OpSetattr
	OpLookup
	OpLookupPath
	OpAccess
	OpReadlink
	OpRead
	OpWrite
	OpCommit
	OpOpen
	OpClose
	OpMkdir
	OpSymlink
	OpRemove
	OpRename
	OpLink
	OpReaddir
	OpSequence
	OpReclaimComplete
	OpExchangeID
	OpCreateSession
	OpDestroySession
	OpDestroyClientID
	OpOpenClose
	NumOps
)

var opNames = [NumOps]string{
	"null", "getattr", "setattr", "lookup", "lookup_path", "access", "readlink", "read",
	"write", "commit", "open", "close", "mkdir", "symlink", "remove", "rename", "link",
	"readdir", "sequence", "reclaim_complete", "exchange_id", "create_session",
	"destroy_session", "destroy_clientid", "open_close",
}

func (o Op) String() string {
	if o < NumOps {
		return opNames[o]
	}
	return "op" + strconv.Itoa(int(o))
}

// FH is an NFSv4 file handle (at most 128 bytes).
type FH []byte

// CurrentStateid is the special stateid that stands for the stateid the
// previous operation of the COMPOUND produced (RFC 8881 §16.2.3.1.2).
var CurrentStateid = Stateid{Seqid: 1}

// Stateid is a stateid4. The zero value is the anonymous stateid; a Seqid
// of 0 asks for the current state of Other (RFC 8881 §8.2.2).
type Stateid struct {
	Seqid uint32
	Other [OtherSize]byte
}

// SeqArgs are the SEQUENCE arguments; Session.Begin fills them.
type SeqArgs struct {
	SessionID   [SessionIDSize]byte
	SeqID       uint32
	Slot        uint32
	HighestSlot uint32
	CacheThis   bool
	Gen         uint32 // session generation (not sent): Session.End ignores stale slots
}

// ChannelAttrs is a channel_attrs4 (RFC 8881 §18.36).
type ChannelAttrs struct {
	HeaderPadSize         uint32
	MaxRequestSize        uint32
	MaxResponseSize       uint32
	MaxResponseSizeCached uint32
	MaxOperations         uint32
	MaxRequests           uint32
}

// Request holds the arguments of any COMPOUND kind; see the package doc
// for the fields each kind uses.
type Request struct {
	Op  Op
	Seq SeqArgs

	FH     FH
	Name   string
	ToFH   FH
	ToName string
	Path   []string // OpLookupPath (at most MaxPath components)

	Stateid Stateid
	Offset  uint64
	Count   uint32
	Data    []byte
	Content content.Ref // WRITE: Count bytes made at encode time when Content.Src is set
	Stable  uint32

	Mode    uint32 // SETATTR, OPEN (create), CREATE
	SetSize bool
	Size    uint64

	Access uint32 // ACCESS bits; OPEN share access (0: read and write)
	Create bool   // OPEN: create the file (UNCHECKED4) if it does not exist
	Target string // OpSymlink

	Cookie     uint64
	CookieVerf [VerifierSize]byte
	DirCount   uint32
	MaxCount   uint32 // READDIR maxcount (0: 8192)
	Attrs      Bitmap // GETATTR / READDIR attributes (zero: DefaultAttrs / DirAttrs)

	ClientID uint64             // OPEN owner, CREATE_SESSION, DESTROY_CLIENTID
	Owner    []byte             // OPEN: open-owner; EXCHANGE_ID: co_ownerid
	Verifier [VerifierSize]byte // EXCHANGE_ID: co_verifier
	CSSeq    uint32             // CREATE_SESSION: csa_sequence
	Fore     ChannelAttrs       // CREATE_SESSION: fore channel asked
}

// Args returns r.Encode as an argument function for rpc.Client.Go.
func (r *Request) Args() func(*xdr.Encoder) { return r.Encode }

// Proc is the RPC procedure of r: NULL for OpNull, COMPOUND otherwise.
func (r *Request) Proc() uint32 {
	if r.Op == OpNull {
		return ProcNull
	}
	return ProcCompound
}

// hasSequence reports whether a COMPOUND of kind o starts with SEQUENCE.
func (o Op) hasSequence() bool {
	switch o {
	case OpNull, OpExchangeID, OpCreateSession, OpDestroySession, OpDestroyClientID:
		return false
	}
	return true
}

// Encode appends the arguments of r: nothing for OpNull, else COMPOUND4args
// (empty tag, minor version 1, SEQUENCE first where the kind has it).
func (r *Request) Encode(e *xdr.Encoder) {
	if r.Op == OpNull {
		return
	}
	e.Uint32(0) // tag: empty
	e.Uint32(MinorVersion)
	at := e.Len()
	e.Uint32(0) // number of operations, patched below
	n := uint32(0)
	if r.Op.hasSequence() {
		encodeSequence(e, &r.Seq)
		n++
	}
	n += r.encodeOps(e)
	e.PutUint32At(at, n)
}

func encodeSequence(e *xdr.Encoder, s *SeqArgs) {
	e.Uint32(uint32(OPSEQUENCE))
	e.FixedOpaque(s.SessionID[:])
	e.Uint32(s.SeqID)
	e.Uint32(s.Slot)
	e.Uint32(s.HighestSlot)
	e.Bool(s.CacheThis)
}

func putfh(e *xdr.Encoder, fh FH) {
	e.Uint32(uint32(OPPUTFH))
	e.Opaque(fh)
}

func opName(e *xdr.Encoder, op Opnum, name string) {
	e.Uint32(uint32(op))
	e.String(name)
}

func op0(e *xdr.Encoder, op Opnum) { e.Uint32(uint32(op)) }

func getattr(e *xdr.Encoder, b Bitmap) {
	e.Uint32(uint32(OPGETATTR))
	EncodeBitmap(e, b)
}

func encodeStateid(e *xdr.Encoder, s *Stateid) {
	e.Uint32(s.Seqid)
	e.FixedOpaque(s.Other[:])
}

// encodeOps appends the operations of r after SEQUENCE and returns their
// number.
func (r *Request) encodeOps(e *xdr.Encoder) uint32 {
	switch r.Op {
	case OpGetattr:
		putfh(e, r.FH)
		getattr(e, r.attrs(DefaultAttrs))
		return 2
	case OpSetattr:
		putfh(e, r.FH)
		e.Uint32(uint32(OPSETATTR))
		encodeStateid(e, &r.Stateid)
		r.encodeSetAttrs(e)
		return 2
	case OpLookup:
		putfh(e, r.FH)
		opName(e, OPLOOKUP, r.Name)
		op0(e, OPGETFH)
		getattr(e, r.attrs(DefaultAttrs))
		return 4
	case OpLookupPath:
		return r.encodeLookupPath(e)
	case OpAccess:
		putfh(e, r.FH)
		e.Uint32(uint32(OPACCESS))
		e.Uint32(r.Access)
		return 2
	case OpReadlink:
		putfh(e, r.FH)
		op0(e, OPREADLINK)
		return 2
	case OpRead:
		putfh(e, r.FH)
		e.Uint32(uint32(OPREAD))
		encodeStateid(e, &r.Stateid)
		e.Uint64(r.Offset)
		e.Uint32(r.Count)
		return 2
	case OpWrite:
		putfh(e, r.FH)
		r.encodeWrite(e)
		return 2
	case OpCommit:
		putfh(e, r.FH)
		e.Uint32(uint32(OPCOMMIT))
		e.Uint64(r.Offset)
		e.Uint32(r.Count)
		return 2
	}
	return r.encodeOps2(e)
}

// encodeOps2 is encodeOps for the namespace and session kinds.
func (r *Request) encodeOps2(e *xdr.Encoder) uint32 {
	switch r.Op {
	case OpOpen:
		putfh(e, r.FH)
		r.encodeOpen(e)
		op0(e, OPGETFH)
		getattr(e, r.attrs(DefaultAttrs))
		return 4
	case OpOpenClose:
		putfh(e, r.FH)
		r.encodeOpen(e)
		op0(e, OPGETFH)
		e.Uint32(uint32(OPCLOSE))
		e.Uint32(0) // seqid: ignored in v4.1
		encodeStateid(e, &CurrentStateid)
		return 4
	case OpClose:
		putfh(e, r.FH)
		e.Uint32(uint32(OPCLOSE))
		e.Uint32(0) // seqid: ignored in v4.1
		encodeStateid(e, &r.Stateid)
		return 2
	case OpMkdir, OpSymlink:
		putfh(e, r.FH)
		r.encodeCreate(e)
		op0(e, OPGETFH)
		return 3
	case OpRemove:
		putfh(e, r.FH)
		opName(e, OPREMOVE, r.Name)
		return 2
	case OpRename, OpLink:
		putfh(e, r.FH)
		op0(e, OPSAVEFH)
		putfh(e, r.ToFH)
		if r.Op == OpRename {
			opName(e, OPRENAME, r.Name)
			e.String(r.ToName)
		} else {
			opName(e, OPLINK, r.ToName)
		}
		return 4
	case OpReaddir:
		putfh(e, r.FH)
		r.encodeReaddir(e)
		return 2
	case OpReclaimComplete:
		e.Uint32(uint32(OPRECLAIM_COMPLETE))
		e.Bool(false) // rca_one_fs
		return 1
	case OpSequence:
		return 0
	}
	return r.encodeSessionOps(e)
}

func (r *Request) attrs(def Bitmap) Bitmap {
	if r.Attrs.IsZero() {
		return def
	}
	return r.Attrs
}

// encodeSetAttrs appends a fattr4 of mode (Mode != 0) and size (SetSize).
func (r *Request) encodeSetAttrs(e *xdr.Encoder) {
	var mask Bitmap
	if r.SetSize {
		mask.Set(AttrSize)
	}
	if r.Mode != 0 {
		mask.Set(AttrMode)
	}
	a := Attr{Mode: r.Mode, Size: r.Size}
	EncodeFattr(e, mask, &a)
}

// encodeLookupPath appends PUTROOTFH, a LOOKUP per component (at most
// MaxPath are sent), GETFH and GETATTR.
func (r *Request) encodeLookupPath(e *xdr.Encoder) uint32 {
	op0(e, OPPUTROOTFH)
	path := r.Path
	if len(path) > MaxPath {
		path = path[:MaxPath]
	}
	for _, c := range path {
		opName(e, OPLOOKUP, c)
	}
	op0(e, OPGETFH)
	getattr(e, r.attrs(DefaultAttrs))
	return uint32(3 + len(path))
}

// encodeWrite appends WRITE4args: stateid, offset, stable, data — Count
// bytes of Content, or Data, or Count zero bytes when both are unset.
func (r *Request) encodeWrite(e *xdr.Encoder) {
	e.Uint32(uint32(OPWRITE))
	encodeStateid(e, &r.Stateid)
	e.Uint64(r.Offset)
	e.Uint32(r.Stable)
	if c := r.Content; c.Src != nil {
		c.Src.Fill(e.OpaqueSpace(int(r.Count)), c.File, r.Offset, c.Gen)
	} else if r.Data != nil {
		e.Opaque(r.Data)
	} else {
		e.Zeros(int(r.Count))
	}
}

// encodeOpen appends OPEN4args: seqid 0, share access (both when Access is
// 0) wanting no delegation, deny none, the open-owner {ClientID, Owner},
// openflag4 (UNCHECKED4 with mode/size when Create), CLAIM_NULL Name.
func (r *Request) encodeOpen(e *xdr.Encoder) {
	e.Uint32(uint32(OPOPEN))
	e.Uint32(0) // seqid: ignored in v4.1
	acc := r.Access
	if acc == 0 {
		acc = ShareAccessBoth
	}
	e.Uint32(acc | ShareWantNoDeleg)
	e.Uint32(ShareDenyNone)
	e.Uint64(r.ClientID)
	e.Opaque(r.Owner)
	if r.Create {
		e.Uint32(OpenCreate)
		e.Uint32(CreateUnchecked)
		r.encodeSetAttrs(e)
	} else {
		e.Uint32(OpenNoCreate)
	}
	e.Uint32(ClaimNull)
	e.String(r.Name)
}

// encodeCreate appends CREATE4args: NF4DIR, or NF4LNK with Target; Name;
// createattrs with Mode.
func (r *Request) encodeCreate(e *xdr.Encoder) {
	e.Uint32(uint32(OPCREATE))
	if r.Op == OpSymlink {
		e.Uint32(NF4LNK)
		e.String(r.Target)
	} else {
		e.Uint32(NF4DIR)
	}
	e.String(r.Name)
	var mask Bitmap
	if r.Mode != 0 {
		mask.Set(AttrMode)
	}
	a := Attr{Mode: r.Mode}
	EncodeFattr(e, mask, &a)
}

// encodeReaddir appends READDIR4args; maxcount 8192 when MaxCount is 0.
func (r *Request) encodeReaddir(e *xdr.Encoder) {
	e.Uint32(uint32(OPREADDIR))
	e.Uint64(r.Cookie)
	e.FixedOpaque(r.CookieVerf[:])
	e.Uint32(r.DirCount)
	mc := r.MaxCount
	if mc == 0 {
		mc = 8192
	}
	e.Uint32(mc)
	EncodeBitmap(e, r.attrs(DirAttrs))
}
