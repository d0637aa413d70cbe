// Server half of the NFSv3 codec: the inverse of the client half in
// nfs3.go. DecodeRequest parses the arguments of a call and EncodeReply
// writes its result; package nullserver answers calls with them, and the
// tests use them to check Encode and DecodeReply against their inverses.

package nfs3

import (
	"fmt"

	"workbench/loadgen/internal/xdr"
)

func decodeSattr(d *xdr.Decoder, r *Request) {
	if d.Bool() {
		r.Mode = d.Uint32()
	}
	if d.Bool() { // uid
		d.Uint32()
	}
	if d.Bool() { // gid
		d.Uint32()
	}
	if r.SetSize = d.Bool(); r.SetSize {
		r.Size = d.Uint64()
	}
	for range 2 { // atime, mtime
		switch how := d.Uint32(); how {
		case 0, 1:
		case 2:
			d.Uint32()
			d.Uint32()
		default:
			d.Fail(fmt.Errorf("nfs3: bad time_how %d", how))
		}
	}
}

func decodeFHArg(d *xdr.Decoder) FH { return FH(d.OpaqueMax(FHSize)) }

// DecodeRequest parses the arguments of procedure p from b into r (the
// inverse of Encode; the server side and tests use it). FH, ToFH and Data
// alias b. Trailing bytes are an error.
func DecodeRequest(p Proc, b []byte, r *Request) error {
	*r = Request{Proc: p}
	d := xdr.NewDecoder(b)
	switch p {
	case ProcNull:
	case ProcGetattr, ProcReadlink, ProcFsstat, ProcFsinfo, ProcPathconf:
		r.FH = decodeFHArg(d)
	case ProcSetattr:
		r.FH = decodeFHArg(d)
		decodeSattr(d, r)
		if d.Bool() { // guard: ctime
			d.Uint32()
			d.Uint32()
		}
	case ProcLookup, ProcRemove, ProcRmdir:
		r.FH, r.Name = decodeFHArg(d), d.String()
	case ProcAccess:
		r.FH, r.Access = decodeFHArg(d), d.Uint32()
	case ProcRead, ProcCommit:
		r.FH, r.Offset, r.Count = decodeFHArg(d), d.Uint64(), d.Uint32()
	case ProcWrite:
		decodeWriteArgs(d, r)
	case ProcCreate:
		decodeCreateArgs(d, r)
	case ProcMkdir:
		r.FH, r.Name = decodeFHArg(d), d.String()
		decodeSattr(d, r)
	case ProcSymlink:
		r.FH, r.Name = decodeFHArg(d), d.String()
		decodeSattr(d, r)
		r.Target = d.String()
	case ProcMknod:
		decodeMknodArgs(d, r)
	case ProcRename:
		r.FH, r.Name = decodeFHArg(d), d.String()
		r.ToFH, r.ToName = decodeFHArg(d), d.String()
	case ProcLink:
		r.FH = decodeFHArg(d)
		r.ToFH, r.ToName = decodeFHArg(d), d.String()
	case ProcReaddir, ProcReaddirplus:
		decodeReaddirArgs(d, r, p == ProcReaddirplus)
	default:
		return ErrUnknownProc
	}
	if d.Err() != nil {
		return fmt.Errorf("nfs3: %s args: %w", p, d.Err())
	}
	if d.Remaining() != 0 {
		return fmt.Errorf("nfs3: %s args: %d trailing bytes", p, d.Remaining())
	}
	return nil
}

// decodeWriteArgs parses WRITE3args: file, offset, count, stable, data; the
// count must equal the data length.
func decodeWriteArgs(d *xdr.Decoder, r *Request) {
	r.FH = decodeFHArg(d)
	r.Offset = d.Uint64()
	r.Count = d.Uint32()
	r.Stable = d.Uint32()
	r.Data = d.Opaque()
	if d.Err() == nil && uint32(len(r.Data)) != r.Count {
		d.Fail(fmt.Errorf("nfs3: WRITE count %d but %d data bytes", r.Count, len(r.Data)))
	}
}

// decodeCreateArgs parses CREATE3args: where, then createhow3 — sattr3 for
// UNCHECKED and GUARDED, the 8-byte verifier for EXCLUSIVE.
func decodeCreateArgs(d *xdr.Decoder, r *Request) {
	r.FH, r.Name = decodeFHArg(d), d.String()
	r.CreateHow = d.Uint32()
	switch r.CreateHow {
	case CreateUnchecked, CreateGuarded:
		decodeSattr(d, r)
	case CreateExclusive:
		copy(r.CookieVerf[:], d.FixedOpaque(8))
	default:
		d.Fail(fmt.Errorf("nfs3: bad createmode3 %d", r.CreateHow))
	}
}

// decodeMknodArgs parses MKNOD3args: where, then mknoddata3 — sattr3 and
// specdata3 for character and block devices, sattr3 for sockets and FIFOs.
func decodeMknodArgs(d *xdr.Decoder, r *Request) {
	r.FH, r.Name = decodeFHArg(d), d.String()
	r.NodeType = d.Uint32()
	switch r.NodeType {
	case NF3CHR, NF3BLK:
		decodeSattr(d, r)
		d.Uint32() // specdata1
		d.Uint32() // specdata2
	case NF3SOCK, NF3FIFO:
		decodeSattr(d, r)
	}
}

// decodeReaddirArgs parses READDIR3args (dir, cookie, cookieverf, count) or
// READDIRPLUS3args (… dircount, maxcount).
func decodeReaddirArgs(d *xdr.Decoder, r *Request, plus bool) {
	r.FH = decodeFHArg(d)
	r.Cookie = d.Uint64()
	copy(r.CookieVerf[:], d.FixedOpaque(8))
	r.Count = d.Uint32()
	if plus {
		r.MaxCount = d.Uint32()
	}
}

// EncodeReply writes the result of procedure p described by r (the inverse
// of DecodeReply, for servers and tests). Attributes are sent when r.Attr is
// non-nil (also as the pre-operation attributes of wcc_data); READ sends
// r.Count zero bytes; READDIRPLUS entries carry attributes (type and size
// from the entry) and their FH when non-nil.
func EncodeReply(p Proc, r *Reply, e *xdr.Encoder) {
	if p == ProcNull {
		return
	}
	e.Uint32(r.Status)
	ok := r.Status == NFS3_OK
	switch p {
	case ProcGetattr:
		if ok {
			a := r.Attr
			if a == nil {
				a = &Attr{}
			}
			encodeFattr(e, a)
		}
	case ProcSetattr, ProcRemove, ProcRmdir:
		encodeWcc(e, r.Attr)
	case ProcLookup:
		if ok {
			e.Opaque(r.FH)
			encodePostOp(e, r.Attr)
		}
		encodePostOp(e, r.Attr)
	case ProcAccess:
		encodePostOp(e, r.Attr)
		if ok {
			e.Uint32(r.Access)
		}
	case ProcReadlink:
		encodePostOp(e, r.Attr)
		if ok {
			e.String(r.Target)
		}
	case ProcRead:
		encodeReadResult(e, r, ok)
	case ProcWrite:
		encodeWriteResult(e, r, ok)
	case ProcCreate, ProcMkdir, ProcSymlink, ProcMknod:
		encodeCreatedResult(e, r, ok)
	case ProcRename:
		encodeWcc(e, r.Attr) // from directory
		encodeWcc(e, r.Attr) // to directory
	case ProcLink:
		encodePostOp(e, r.Attr)
		encodeWcc(e, r.Attr)
	case ProcReaddir, ProcReaddirplus:
		encodePostOp(e, r.Attr)
		if ok {
			encodeDirList(e, r, p == ProcReaddirplus)
		}
	case ProcFsstat:
		encodePostOp(e, r.Attr)
		if ok {
			encodeFsstat(e, &r.FSStat)
		}
	case ProcFsinfo:
		encodePostOp(e, r.Attr)
		if ok {
			encodeFsinfo(e, &r.FSInfo)
		}
	case ProcPathconf:
		encodePostOp(e, r.Attr)
		if ok {
			encodePathconf(e, &r.PathConf)
		}
	case ProcCommit:
		encodeWcc(e, r.Attr)
		if ok {
			e.FixedOpaque(r.Verf[:])
		}
	}
}

// encodeReadResult writes READ3res after the status: attributes, then on
// success count, eof and count zero bytes of data.
func encodeReadResult(e *xdr.Encoder, r *Reply, ok bool) {
	encodePostOp(e, r.Attr)
	if ok {
		e.Uint32(r.Count)
		e.Bool(r.EOF)
		e.Zeros(int(r.Count))
	}
}

// encodeWriteResult writes WRITE3res after the status: wcc_data, then on
// success count, committed and the write verifier.
func encodeWriteResult(e *xdr.Encoder, r *Reply, ok bool) {
	encodeWcc(e, r.Attr)
	if ok {
		e.Uint32(r.Count)
		e.Uint32(r.Committed)
		e.FixedOpaque(r.Verf[:])
	}
}

// encodeCreatedResult writes CREATE3res, MKDIR3res, SYMLINK3res and
// MKNOD3res after the status: on success post_op_fh3 and the object's
// attributes; then the directory's wcc_data.
func encodeCreatedResult(e *xdr.Encoder, r *Reply, ok bool) {
	if ok {
		e.Bool(r.FH != nil)
		if r.FH != nil {
			e.Opaque(r.FH)
		}
		encodePostOp(e, r.Attr)
	}
	encodeWcc(e, r.Attr)
}

// encodeDirList writes the success arm of READDIR3res / READDIRPLUS3res
// after the directory attributes: cookieverf, the entry list, eof.
func encodeDirList(e *xdr.Encoder, r *Reply, plus bool) {
	e.FixedOpaque(r.CookieVerf[:])
	for i := range r.Entries {
		en := &r.Entries[i]
		e.Bool(true)
		e.Uint64(en.FileID)
		e.String(en.Name)
		e.Uint64(en.Cookie)
		if plus {
			e.Bool(true)
			encodeFattr(e, &Attr{Type: en.Type, Size: en.Size, FileID: en.FileID, Nlink: 1})
			e.Bool(en.FH != nil)
			if en.FH != nil {
				e.Opaque(en.FH)
			}
		}
	}
	e.Bool(false)
	e.Bool(r.EOF)
}

// encodeFsstat writes the success arm of FSSTAT3res after the attributes.
func encodeFsstat(e *xdr.Encoder, s *FSStat) {
	e.Uint64(s.TBytes)
	e.Uint64(s.FBytes)
	e.Uint64(s.ABytes)
	e.Uint64(s.TFiles)
	e.Uint64(s.FFiles)
	e.Uint64(s.AFiles)
	e.Uint32(s.Invarsec)
}

// encodeFsinfo writes the success arm of FSINFO3res after the attributes.
func encodeFsinfo(e *xdr.Encoder, f *FSInfo) {
	for _, v := range []uint32{f.RTMax, f.RTPref, f.RTMult, f.WTMax, f.WTPref, f.WTMult, f.DTPref} {
		e.Uint32(v)
	}
	e.Uint64(f.MaxFileSize)
	encodeTime(e, f.TimeDelta)
	e.Uint32(f.Properties)
}

// encodePathconf writes the success arm of PATHCONF3res after the
// attributes (RFC 1813 §3.3.20).
func encodePathconf(e *xdr.Encoder, p *PathConf) {
	e.Uint32(p.LinkMax)
	e.Uint32(p.NameMax)
	e.Bool(p.NoTrunc)
	e.Bool(p.ChownRestricted)
	e.Bool(p.CaseInsensitive)
	e.Bool(p.CasePreserving)
}

func encodeTime(e *xdr.Encoder, ns uint64) {
	e.Uint32(uint32(ns / 1e9))
	e.Uint32(uint32(ns % 1e9))
}

func encodeFattr(e *xdr.Encoder, a *Attr) {
	e.Uint32(a.Type)
	e.Uint32(a.Mode)
	e.Uint32(a.Nlink)
	e.Uint32(a.UID)
	e.Uint32(a.GID)
	e.Uint64(a.Size)
	e.Uint64(a.Used)
	e.Uint32(0)
	e.Uint32(0)
	e.Uint64(a.Fsid)
	e.Uint64(a.FileID)
	encodeTime(e, a.Atime)
	encodeTime(e, a.Mtime)
	encodeTime(e, a.Ctime)
}

func encodePostOp(e *xdr.Encoder, a *Attr) {
	e.Bool(a != nil)
	if a != nil {
		encodeFattr(e, a)
	}
}

func encodeWcc(e *xdr.Encoder, a *Attr) {
	e.Bool(a != nil)
	if a != nil {
		e.Uint64(a.Size)
		encodeTime(e, a.Mtime)
		encodeTime(e, a.Ctime)
	}
	encodePostOp(e, a)
}
