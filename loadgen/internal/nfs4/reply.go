package nfs4

import (
	"errors"
	"fmt"

	"workbench/loadgen/internal/xdr"
)

// ErrMalformed wraps every structural problem of a reply that is not a
// short buffer or an over-long length (those wrap xdr.ErrShort and
// xdr.ErrTooLong).
var ErrMalformed = errors.New("nfs4: malformed reply")

func errTooMany(what string, n uint32) error {
	return fmt.Errorf("%w: %d %s", xdr.ErrTooLong, n, what)
}

func errBadValue(what string, v uint32) error {
	return fmt.Errorf("%w: %s %d", ErrMalformed, what, v)
}

// SeqRes is a SEQUENCE4resok.
type SeqRes struct {
	SessionID         [SessionIDSize]byte
	SeqID             uint32
	Slot              uint32
	HighestSlot       uint32
	TargetHighestSlot uint32
	StatusFlags       uint32
}

// Entry is one READDIR entry; Attr holds the attributes asked for.
type Entry struct {
	Cookie uint64
	Name   string
	Attr   Attr
}

// Reply holds the decoded COMPOUND4res of any kind fstress sends.
type Reply struct {
	Status    uint32 // COMPOUND status (that of the last result)
	Op        Opnum  // the last operation in the reply (the failed one when Status != NFS4_OK)
	NumOps    int    // results in the reply
	SeqStatus uint32 // status of SEQUENCE when it is the first result
	HasSeq    bool   // the first result is SEQUENCE
	Seq       SeqRes // SEQUENCE4resok when SeqStatus == NFS4_OK

	FH      FH   // GETFH (a fresh copy)
	Attr    Attr // GETATTR
	HasAttr bool

	Stateid    Stateid // OPEN, CLOSE
	DelegType  uint32  // OPEN: delegation granted (DelegNone normally)
	Deleg      Stateid // OPEN: the delegation's stateid when granted
	Count      uint32  // READ: bytes read; WRITE: bytes written
	EOF        bool    // READ, READDIR
	Committed  uint32  // WRITE
	Verf       [VerifierSize]byte
	Supported  uint32 // ACCESS
	Access     uint32 // ACCESS
	Target     string // READLINK
	CookieVerf [VerifierSize]byte
	Entries    []Entry
	AttrSet    Bitmap // SETATTR attrsset, OPEN / CREATE attrset

	ExchangeID    ExchangeIDRes
	CreateSession CreateSessionRes
}

// Err returns nil when Status is NFS4_OK, else a *StatusError naming the
// failed operation.
func (r *Reply) Err() error {
	if r.Status == NFS4_OK {
		return nil
	}
	return &StatusError{Op: r.Op, Status: r.Status}
}

// DecodeReply decodes a COMPOUND4res from an RPC reply body (any kind; the
// result of each operation is decoded by its opnum). The error reports
// malformed XDR only; NFS errors are in Status. The Reply does not alias
// body.
func DecodeReply(body []byte) (Reply, error) {
	var r Reply
	err := DecodeReplyInto(body, &r)
	return r, err
}

// DecodeReplyInto is DecodeReply into r, reusing r's Entries backing array.
func DecodeReplyInto(body []byte, r *Reply) error {
	entries := r.Entries[:0]
	*r = Reply{Entries: entries}
	var d xdr.Decoder
	d.Reset(body)
	r.decode(&d)
	if len(r.Entries) == 0 {
		r.Entries = nil
	}
	if d.Err() != nil {
		return fmt.Errorf("nfs4: COMPOUND reply: %w", d.Err())
	}
	if d.Remaining() != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformed, d.Remaining())
	}
	return nil
}

func (r *Reply) decode(d *xdr.Decoder) {
	r.Status = d.Uint32()
	d.OpaqueMax(MaxTagLen)
	n := d.Uint32()
	if n > MaxOps {
		d.Fail(errTooMany("operation results", n))
		return
	}
	for i := uint32(0); i < n && d.Err() == nil; i++ {
		op, st := Opnum(d.Uint32()), d.Uint32()
		if d.Err() != nil {
			return
		}
		r.Op, r.NumOps = op, int(i+1)
		if i == 0 && op == OPSEQUENCE {
			r.HasSeq, r.SeqStatus = true, st
		}
		if st != NFS4_OK {
			if op == OPSETATTR { // SETATTR4res has attrsset on failure too
				r.AttrSet, _ = DecodeBitmap(d)
			}
			if i+1 != n {
				d.Fail(fmt.Errorf("%w: results after failed %s", ErrMalformed, op))
			}
			return
		}
		if !r.decodeResult(d, op) {
			d.Fail(errBadValue("unknown operation in reply", uint32(op)))
		}
	}
}

// decodeResult decodes the success arm of op's result; false for an
// operation fstress does not use.
func (r *Reply) decodeResult(d *xdr.Decoder, op Opnum) bool {
	switch op {
	case OPSEQUENCE:
		s := &r.Seq
		copy(s.SessionID[:], d.FixedOpaque(SessionIDSize))
		s.SeqID, s.Slot, s.HighestSlot = d.Uint32(), d.Uint32(), d.Uint32()
		s.TargetHighestSlot, s.StatusFlags = d.Uint32(), d.Uint32()
	case OPPUTFH, OPPUTROOTFH, OPLOOKUP, OPSAVEFH, OPRECLAIM_COMPLETE,
		OPDESTROY_SESSION, OPDESTROY_CLIENTID:
	case OPGETFH:
		r.FH = copyFH(d.OpaqueMax(FHSize))
	case OPGETATTR:
		DecodeFattr(d, &r.Attr)
		r.HasAttr = d.Err() == nil
	case OPSETATTR:
		r.AttrSet, _ = DecodeBitmap(d)
	case OPACCESS:
		r.Supported, r.Access = d.Uint32(), d.Uint32()
	case OPREADLINK:
		r.Target = string(d.OpaqueMax(MaxPathLen))
	case OPREAD:
		r.EOF = d.Bool()
		r.Count = uint32(d.SkipOpaque())
	case OPWRITE:
		r.Count, r.Committed = d.Uint32(), d.Uint32()
		copy(r.Verf[:], d.FixedOpaque(VerifierSize))
	case OPCOMMIT:
		copy(r.Verf[:], d.FixedOpaque(VerifierSize))
	case OPOPEN:
		r.decodeOpen(d)
	case OPCLOSE:
		decodeStateid(d, &r.Stateid)
	case OPCREATE:
		d.Skip(20) // change_info4
		r.AttrSet, _ = DecodeBitmap(d)
	case OPREMOVE, OPLINK:
		d.Skip(20) // change_info4
	case OPRENAME:
		d.Skip(40) // source and target change_info4
	case OPREADDIR:
		copy(r.CookieVerf[:], d.FixedOpaque(VerifierSize))
		r.decodeEntries(d)
		r.EOF = d.Bool()
	case OPEXCHANGE_ID:
		decodeExchangeID(d, &r.ExchangeID)
	case OPCREATE_SESSION:
		decodeCreateSession(d, &r.CreateSession)
	default:
		return false
	}
	return true
}

func decodeStateid(d *xdr.Decoder, s *Stateid) {
	s.Seqid = d.Uint32()
	copy(s.Other[:], d.FixedOpaque(OtherSize))
}

func copyFH(b []byte) FH {
	if b == nil {
		return nil
	}
	fh := make(FH, len(b))
	copy(fh, b)
	return fh
}

// decodeOpen decodes OPEN4resok: stateid, change_info4, rflags, attrset,
// open_delegation4.
func (r *Reply) decodeOpen(d *xdr.Decoder) {
	decodeStateid(d, &r.Stateid)
	d.Skip(20) // change_info4
	d.Uint32() // rflags
	r.AttrSet, _ = DecodeBitmap(d)
	r.DelegType = d.Uint32()
	switch r.DelegType {
	case DelegNone:
	case DelegRead, DelegWrite:
		decodeStateid(d, &r.Deleg)
		d.Bool() // recall
		if r.DelegType == DelegWrite {
			if lim := d.Uint32(); lim == 1 || lim == 2 { // nfs_space_limit4
				d.Skip(8)
			} else {
				d.Fail(errBadValue("limitby", lim))
			}
		}
		d.Skip(12)               // nfsace4: type, flag, access_mask
		d.OpaqueMax(OpaqueLimit) // who
	case DelegNoneExt:
		if why := d.Uint32(); why == 1 || why == 2 { // WND4_CONTENTION, WND4_RESOURCE
			d.Bool()
		}
	default:
		d.Fail(errBadValue("delegation type", r.DelegType))
	}
}

// decodeEntries decodes a READDIR entry list of at most MaxEntries.
func (r *Reply) decodeEntries(d *xdr.Decoder) {
	for n := 0; d.Bool(); n++ {
		if n >= MaxEntries {
			d.Fail(errTooMany("directory entries", uint32(n)))
			return
		}
		var e Entry
		e.Cookie = d.Uint64()
		e.Name = string(d.OpaqueMax(MaxNameLen))
		DecodeFattr(d, &e.Attr)
		if d.Err() != nil {
			return
		}
		r.Entries = append(r.Entries, e)
	}
}
