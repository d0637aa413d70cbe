package nfs4

import (
	"encoding/binary"

	"workbench/loadgen/internal/xdr"
)

// BeginCompoundReply appends a COMPOUND4res header with a zero status and
// operation count and the given tag; EndCompoundReply patches both.
func BeginCompoundReply(e *xdr.Encoder, tag []byte) (at int) {
	at = e.Len()
	e.Uint32(0)
	e.Opaque(tag)
	e.Uint32(0)
	return at
}

// EndCompoundReply writes the status and operation count of the header
// BeginCompoundReply appended at at.
func EndCompoundReply(e *xdr.Encoder, at int, status uint32, nops int) {
	e.PutUint32At(at, status)
	tagLen := int(binary.BigEndian.Uint32(e.Bytes()[at+4:]))
	e.PutUint32At(at+8+tagLen+pad4(tagLen), uint32(nops))
}

func pad4(n int) int { return (4 - n&3) & 3 }

// EncodeResult appends the nfs_resop4 of op with status from r (the inverse
// of the reply decoder): on failure the status alone (SETATTR adds
// r.AttrSet); on success the fields DecodeReply fills for op. GETATTR sends
// r.Attr.Mask, READDIR each entry's Attr.Mask, READ r.Count zero bytes.
func EncodeResult(e *xdr.Encoder, op Opnum, status uint32, r *Reply) {
	e.Uint32(uint32(op))
	e.Uint32(status)
	if status != NFS4_OK {
		if op == OPSETATTR {
			EncodeBitmap(e, r.AttrSet)
		}
		return
	}
	switch op {
	case OPSEQUENCE:
		s := &r.Seq
		e.FixedOpaque(s.SessionID[:])
		e.Uint32(s.SeqID)
		e.Uint32(s.Slot)
		e.Uint32(s.HighestSlot)
		e.Uint32(s.TargetHighestSlot)
		e.Uint32(s.StatusFlags)
	case OPGETFH:
		e.Opaque(r.FH)
	case OPGETATTR:
		EncodeFattr(e, r.Attr.Mask, &r.Attr)
	case OPSETATTR:
		EncodeBitmap(e, r.AttrSet)
	case OPACCESS:
		e.Uint32(r.Supported)
		e.Uint32(r.Access)
	case OPREADLINK:
		e.String(r.Target)
	case OPREAD:
		e.Bool(r.EOF)
		e.Zeros(int(r.Count))
	case OPWRITE:
		e.Uint32(r.Count)
		e.Uint32(r.Committed)
		e.FixedOpaque(r.Verf[:])
	case OPCOMMIT:
		e.FixedOpaque(r.Verf[:])
	default:
		encodeResult2(e, op, r)
	}
}

func encodeChangeInfo(e *xdr.Encoder) {
	e.Bool(true)
	e.Uint64(1)
	e.Uint64(2)
}

func encodeResult2(e *xdr.Encoder, op Opnum, r *Reply) {
	switch op {
	case OPOPEN:
		encodeStateid(e, &r.Stateid)
		encodeChangeInfo(e)
		e.Uint32(0) // rflags
		EncodeBitmap(e, r.AttrSet)
		e.Uint32(DelegNone)
	case OPCLOSE:
		encodeStateid(e, &r.Stateid)
	case OPCREATE:
		encodeChangeInfo(e)
		EncodeBitmap(e, r.AttrSet)
	case OPREMOVE, OPLINK:
		encodeChangeInfo(e)
	case OPRENAME:
		encodeChangeInfo(e)
		encodeChangeInfo(e)
	case OPREADDIR:
		e.FixedOpaque(r.CookieVerf[:])
		for i := range r.Entries {
			en := &r.Entries[i]
			e.Bool(true)
			e.Uint64(en.Cookie)
			e.String(en.Name)
			EncodeFattr(e, en.Attr.Mask, &en.Attr)
		}
		e.Bool(false)
		e.Bool(r.EOF)
	case OPEXCHANGE_ID:
		x := &r.ExchangeID
		e.Uint64(x.ClientID)
		e.Uint32(x.SeqID)
		e.Uint32(x.Flags)
		e.Uint32(SP4None)
		e.Uint64(x.ServerMinor)
		e.String(x.ServerMajor)
		e.String(x.ServerScope)
		e.Uint32(1)
		e.String(x.ImplDomain)
		e.String(x.ImplName)
		e.Int64(0)
		e.Uint32(0)
	case OPCREATE_SESSION:
		c := &r.CreateSession
		e.FixedOpaque(c.SessionID[:])
		e.Uint32(c.SeqID)
		e.Uint32(c.Flags)
		encodeChannelAttrs(e, &c.Fore)
		encodeChannelAttrs(e, &c.Back)
	}
	// PUTFH, PUTROOTFH, LOOKUP, SAVEFH, RECLAIM_COMPLETE, DESTROY_*: status only.
}
