// Server half of the NFSv4.1 codec: the inverse of the client half.
// DecodeCompoundHeader and DecodeOpArgs parse a COMPOUND4args op by op;
// EncodeResult writes one nfs_resop4 from a Reply. Package nullserver
// answers COMPOUNDs with them, and the tests check Encode and DecodeReply
// against their inverses.

package nfs4

import (
	"fmt"

	"workbench/loadgen/internal/xdr"
)

// MaxRequestOps bounds the operations a server accepts in one COMPOUND.
const MaxRequestOps = 64

// OpArgs holds the decoded arguments of one operation. Byte slices alias
// the request.
type OpArgs struct {
	Op       Opnum
	Seq      SeqArgs
	FH       []byte
	Name     []byte // LOOKUP, REMOVE, CREATE, OPEN (CLAIM_NULL), LINK; RENAME old name
	ToName   []byte // RENAME new name
	Target   []byte // CREATE NF4LNK
	Type     uint32 // CREATE object type
	Stateid  Stateid
	Offset   uint64
	Count    uint32
	Data     []byte // WRITE
	Stable   uint32
	Access   uint32 // ACCESS bits; OPEN share_access
	Create   bool   // OPEN
	Claim    uint32 // OPEN
	Attrs    Bitmap // GETATTR / READDIR attr_request; SETATTR / OPEN / CREATE attributes set
	SetAttr  Attr   // SETATTR / OPEN / CREATE attribute values
	Cookie   uint64
	Verf     [VerifierSize]byte // READDIR cookieverf; EXCHANGE_ID co_verifier
	DirCount uint32
	MaxCount uint32
	ClientID uint64
	Owner    []byte // OPEN owner; EXCHANGE_ID co_ownerid
	CSSeq    uint32
	Fore     ChannelAttrs
}

// DecodeCompoundHeader reads the tag, minor version and operation count of
// a COMPOUND4args; a count over MaxRequestOps is an error.
func DecodeCompoundHeader(d *xdr.Decoder) (tag []byte, minor, nops uint32) {
	tag = d.OpaqueMax(MaxTagLen)
	minor, nops = d.Uint32(), d.Uint32()
	if nops > MaxRequestOps {
		d.Fail(errTooMany("operations", nops))
	}
	return tag, minor, nops
}

// DecodeOpArgs reads one nfs_argop4 into a; false (with no error) for an
// operation it does not know, whose arguments cannot be skipped.
func DecodeOpArgs(d *xdr.Decoder, a *OpArgs) bool {
	*a = OpArgs{Op: Opnum(d.Uint32())}
	switch a.Op {
	case OPSEQUENCE:
		copy(a.Seq.SessionID[:], d.FixedOpaque(SessionIDSize))
		a.Seq.SeqID, a.Seq.Slot, a.Seq.HighestSlot = d.Uint32(), d.Uint32(), d.Uint32()
		a.Seq.CacheThis = d.Bool()
	case OPPUTROOTFH, OPGETFH, OPSAVEFH, OPREADLINK:
	case OPPUTFH:
		a.FH = d.OpaqueMax(FHSize)
	case OPLOOKUP, OPREMOVE, OPLINK:
		a.Name = d.OpaqueMax(MaxNameLen)
	case OPRENAME:
		a.Name, a.ToName = d.OpaqueMax(MaxNameLen), d.OpaqueMax(MaxNameLen)
	case OPGETATTR:
		a.Attrs, _ = DecodeBitmap(d)
	case OPSETATTR:
		decodeStateid(d, &a.Stateid)
		decodeSetFattr(d, a)
	case OPACCESS:
		a.Access = d.Uint32()
	case OPREAD:
		decodeStateid(d, &a.Stateid)
		a.Offset, a.Count = d.Uint64(), d.Uint32()
	case OPWRITE:
		decodeStateid(d, &a.Stateid)
		a.Offset, a.Stable = d.Uint64(), d.Uint32()
		a.Data = d.Opaque()
		a.Count = uint32(len(a.Data))
	case OPCOMMIT:
		a.Offset, a.Count = d.Uint64(), d.Uint32()
	case OPCLOSE:
		d.Uint32() // seqid
		decodeStateid(d, &a.Stateid)
	case OPREADDIR:
		a.Cookie = d.Uint64()
		copy(a.Verf[:], d.FixedOpaque(VerifierSize))
		a.DirCount, a.MaxCount = d.Uint32(), d.Uint32()
		a.Attrs, _ = DecodeBitmap(d)
	case OPRECLAIM_COMPLETE:
		d.Bool()
	default:
		return decodeOpArgs2(d, a)
	}
	return true
}

func decodeOpArgs2(d *xdr.Decoder, a *OpArgs) bool {
	switch a.Op {
	case OPOPEN:
		decodeOpenArgs(d, a)
	case OPCREATE:
		switch a.Type = d.Uint32(); a.Type {
		case NF4LNK:
			a.Target = d.OpaqueMax(MaxPathLen)
		case NF4BLK, NF4CHR:
			d.Skip(8)
		}
		a.Name = d.OpaqueMax(MaxNameLen)
		decodeSetFattr(d, a)
	case OPEXCHANGE_ID:
		decodeExchangeIDArgs(d, a)
	case OPCREATE_SESSION:
		a.ClientID, a.CSSeq = d.Uint64(), d.Uint32()
		d.Uint32() // flags
		decodeChannelAttrs(d, &a.Fore)
		var back ChannelAttrs
		decodeChannelAttrs(d, &back)
		d.Uint32() // cb_program
		decodeCBSecParms(d)
	case OPDESTROY_SESSION:
		copy(a.Seq.SessionID[:], d.FixedOpaque(SessionIDSize))
	case OPDESTROY_CLIENTID:
		a.ClientID = d.Uint64()
	default:
		return false
	}
	return true
}

// decodeSetFattr reads a fattr4 of settable attributes into a.Attrs and
// a.SetAttr.
func decodeSetFattr(d *xdr.Decoder, a *OpArgs) {
	DecodeFattr(d, &a.SetAttr)
	a.Attrs = a.SetAttr.Mask
}

func decodeOpenArgs(d *xdr.Decoder, a *OpArgs) {
	d.Uint32() // seqid
	a.Access = d.Uint32()
	d.Uint32() // share_deny
	a.ClientID = d.Uint64()
	a.Owner = d.OpaqueMax(OpaqueLimit)
	if a.Create = d.Uint32() == OpenCreate; a.Create {
		switch how := d.Uint32(); how {
		case 0, 1: // UNCHECKED4, GUARDED4
			decodeSetFattr(d, a)
		case 2: // EXCLUSIVE4
			d.Skip(VerifierSize)
		case 3: // EXCLUSIVE4_1
			d.Skip(VerifierSize)
			decodeSetFattr(d, a)
		default:
			d.Fail(errBadValue("createmode", how))
		}
	}
	switch a.Claim = d.Uint32(); a.Claim {
	case ClaimNull, 5: // CLAIM_NULL, CLAIM_DELEG_PREV_FH
		if a.Claim == ClaimNull {
			a.Name = d.OpaqueMax(MaxNameLen)
		}
	case 4, 1: // CLAIM_FH (void), CLAIM_PREVIOUS (delegation type)
		if a.Claim == 1 {
			d.Uint32()
		}
	default:
		d.Fail(errBadValue("open claim", a.Claim))
	}
}

func decodeExchangeIDArgs(d *xdr.Decoder, a *OpArgs) {
	copy(a.Verf[:], d.FixedOpaque(VerifierSize))
	a.Owner = d.OpaqueMax(OpaqueLimit)
	d.Uint32() // flags
	if how := d.Uint32(); how != SP4None {
		d.Fail(fmt.Errorf("%w: state protection %d not supported", ErrMalformed, how))
		return
	}
	switch n := d.Uint32(); n { // client_impl_id<1>
	case 0:
	case 1:
		d.OpaqueMax(OpaqueLimit)
		d.OpaqueMax(OpaqueLimit)
		d.Skip(12)
	default:
		d.Fail(errTooMany("client_impl_id", n))
	}
}

// decodeCBSecParms reads csa_sec_parms: AUTH_NONE and AUTH_SYS entries
// (RPCSEC_GSS is refused).
func decodeCBSecParms(d *xdr.Decoder) {
	n := d.Uint32()
	if n > 8 {
		d.Fail(errTooMany("csa_sec_parms", n))
		return
	}
	for i := uint32(0); i < n && d.Err() == nil; i++ {
		switch fl := d.Uint32(); fl {
		case 0: // AUTH_NONE
		case 1: // AUTH_SYS: stamp, machine name, uid, gid, gids
			d.Uint32()
			d.OpaqueMax(255)
			d.Skip(8)
			if g := d.Uint32(); g <= 16 {
				d.Skip(int(4 * g))
			} else {
				d.Fail(errTooMany("gids", g))
			}
		default:
			d.Fail(errBadValue("callback security flavor", fl))
		}
	}
}
