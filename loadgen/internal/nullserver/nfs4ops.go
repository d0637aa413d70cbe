package nullserver

import (
	"encoding/binary"

	"workbench/loadgen/internal/nfs4"
)

var (
	attrTime   = int64(1.7e18)
	supported4 = nfs4.MakeBitmap(nfs4.AttrSupportedAttrs, nfs4.AttrType, nfs4.AttrChange, nfs4.AttrSize,
		nfs4.AttrFsid, nfs4.AttrLeaseTime, nfs4.AttrRdattrError, nfs4.AttrFileID, nfs4.AttrMaxFileSize,
		nfs4.AttrMaxRead, nfs4.AttrMaxWrite, nfs4.AttrMode, nfs4.AttrNumLinks, nfs4.AttrSpaceUsed,
		nfs4.AttrTimeAccess, nfs4.AttrTimeMetadata, nfs4.AttrTimeModify, nfs4.AttrMountedOnFileID)
	settable4 = nfs4.MakeBitmap(nfs4.AttrSize, nfs4.AttrMode)
)

func and(a, b nfs4.Bitmap) nfs4.Bitmap { return nfs4.Bitmap{a[0] & b[0], a[1] & b[1], a[2] & b[2]} }

// fillAttr sets a to the canned attributes of an object of type typ,
// masked by the request.
func fillAttr(a *nfs4.Attr, typ uint32, fileid uint64, mask nfs4.Bitmap) {
	*a = nfs4.Attr{Mask: and(mask, supported4), Supported: supported4, Type: typ, Change: 1,
		Size: 1 << 20, FsidMajor: 1, FsidMinor: 1, LeaseTime: 90, FileID: fileid, MaxFileSize: 1<<63 - 1,
		MaxRead: maxRead, MaxWrite: maxRead, Mode: 0o644, Nlink: 1, Used: 1 << 20, Atime: attrTime,
		Ctime: attrTime, Mtime: attrTime, MountedOnFileID: fileid}
	if typ == nfs4.NF4DIR {
		a.Mode, a.Size, a.Used, a.Nlink = 0o755, 4096, 4096, 2
	}
}

func fileidOf(fh []byte) uint64 {
	if len(fh) >= 16 {
		return binary.BigEndian.Uint64(fh[8:16])
	}
	return 2
}

// op executes one operation after SEQUENCE (or a sessionless one alone).
func (s *Server) op(c *conn4, a *nfs4.OpArgs) uint32 {
	r := &c.rep
	switch a.Op {
	case nfs4.OPPUTROOTFH:
		c.cur = c.curBuf[:len(RootFH4)]
		copy(c.cur, RootFH4)
		return nfs4.NFS4_OK
	case nfs4.OPPUTFH:
		c.cur = c.curBuf[:len(a.FH)]
		copy(c.cur, a.FH)
		return nfs4.NFS4_OK
	case nfs4.OPRECLAIM_COMPLETE:
		return nfs4.NFS4_OK
	case nfs4.OPEXCHANGE_ID, nfs4.OPCREATE_SESSION, nfs4.OPDESTROY_SESSION, nfs4.OPDESTROY_CLIENTID:
		return s.sessionOp(c, a)
	}
	if c.cur == nil {
		return nfs4.NFS4ERR_NOFILEHANDLE
	}
	switch a.Op {
	case nfs4.OPGETFH:
		r.FH = c.cur
	case nfs4.OPGETATTR:
		fillAttr(&r.Attr, typeOf(c.cur), fileidOf(c.cur), a.Attrs)
	case nfs4.OPSETATTR:
		r.AttrSet = and(a.Attrs, settable4)
	case nfs4.OPACCESS:
		r.Supported, r.Access = a.Access, a.Access
	case nfs4.OPREADLINK:
		if typeOf(c.cur) != nfs4.NF4LNK && typeOf(c.cur) != nfs4.NF4REG {
			return nfs4.NFS4ERR_INVAL
		}
		r.Target = "nullserver-target"
	case nfs4.OPREAD:
		r.Count = min(a.Count, maxRead)
	case nfs4.OPWRITE:
		r.Count, r.Committed, r.Verf = a.Count, nfs4.FileSync, verf
	case nfs4.OPCOMMIT:
		r.Verf = verf
	default:
		return s.dirOp(c, a)
	}
	return nfs4.NFS4_OK
}

// dirOp executes the operations on a directory (the current handle) and
// CLOSE.
func (s *Server) dirOp(c *conn4, a *nfs4.OpArgs) uint32 {
	r := &c.rep
	switch a.Op {
	case nfs4.OPLOOKUP:
		typ := byte(nfs4.NF4REG)
		if string(c.cur) == string(RootFH4) { // pseudo-path components are directories
			typ = nfs4.NF4DIR
		}
		c.handle4(c.cur, a.Name, typ)
	case nfs4.OPOPEN:
		c.handle4(c.cur, a.Name, nfs4.NF4REG)
		r.Stateid.Seqid = 1
		copy(r.Stateid.Other[:4], "nst4")
		copy(r.Stateid.Other[4:], c.cur[8:16])
		r.AttrSet = and(a.Attrs, settable4)
	case nfs4.OPCLOSE:
		r.Stateid = a.Stateid
		r.Stateid.Seqid++
	case nfs4.OPCREATE:
		if a.Type != nfs4.NF4DIR && a.Type != nfs4.NF4LNK {
			return nfs4.NFS4ERR_BADTYPE
		}
		c.handle4(c.cur, a.Name, byte(a.Type))
		r.AttrSet = and(a.Attrs, settable4)
	case nfs4.OPREMOVE:
	case nfs4.OPSAVEFH:
		c.saved = c.saveBuf[:len(c.cur)]
		copy(c.saved, c.cur)
	case nfs4.OPRENAME, nfs4.OPLINK:
		if c.saved == nil {
			return nfs4.NFS4ERR_NOFILEHANDLE
		}
	case nfs4.OPREADDIR:
		s.readdir4(c, a)
	default:
		return nfs4.NFS4ERR_NOTSUPP
	}
	return nfs4.NFS4_OK
}

// readdir4 lists file0, dir0 and link0 (cookies 3, 4, 5: 1 and 2 are
// reserved) for cookie 0, nothing after; always EOF.
func (s *Server) readdir4(c *conn4, a *nfs4.OpArgs) {
	r := &c.rep
	r.CookieVerf, r.EOF = verf, true
	if a.Cookie != 0 {
		return
	}
	names := [3]string{"file0", "dir0", "link0"}
	types := [3]uint32{nfs4.NF4REG, nfs4.NF4DIR, nfs4.NF4LNK}
	for i := range c.ents {
		en := &c.ents[i]
		en.Cookie, en.Name = uint64(3+i), names[i]
		fillAttr(&en.Attr, types[i], uint64(10+i), a.Attrs)
	}
	r.Entries = c.ents[:]
}
