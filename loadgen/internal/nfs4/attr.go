package nfs4

import (
	"fmt"
	"math/bits"

	"workbench/loadgen/internal/xdr"
)

// Attribute numbers (RFC 8881 §5.6, §5.7).
const (
	AttrSupportedAttrs  = 0
	AttrType            = 1
	AttrFHExpireType    = 2
	AttrChange          = 3
	AttrSize            = 4
	AttrLinkSupport     = 5
	AttrSymlinkSupport  = 6
	AttrNamedAttr       = 7
	AttrFsid            = 8
	AttrUniqueHandles   = 9
	AttrLeaseTime       = 10
	AttrRdattrError     = 11
	AttrFilehandle      = 19
	AttrFileID          = 20
	AttrMaxFileSize     = 27
	AttrMaxRead         = 30
	AttrMaxWrite        = 31
	AttrMode            = 33
	AttrNumLinks        = 35
	AttrOwner           = 36
	AttrOwnerGroup      = 37
	AttrSpaceUsed       = 45
	AttrTimeAccess      = 47
	AttrTimeAccessSet   = 48
	AttrTimeMetadata    = 52
	AttrTimeModify      = 53
	AttrTimeModifySet   = 54
	AttrMountedOnFileID = 55
)

// Bitmap is a bitmap4 of attribute numbers below 96.
type Bitmap [3]uint32

// MakeBitmap returns the bitmap of the given attribute numbers (< 96).
func MakeBitmap(attrs ...int) Bitmap {
	var b Bitmap
	for _, a := range attrs {
		b.Set(a)
	}
	return b
}

// Set adds attribute a (< 96; others are ignored).
func (b *Bitmap) Set(a int) {
	if a >= 0 && a < 96 {
		b[a/32] |= 1 << (a % 32)
	}
}

// Has reports whether attribute a is in b.
func (b Bitmap) Has(a int) bool { return a >= 0 && a < 96 && b[a/32]&(1<<(a%32)) != 0 }

// IsZero reports whether b is empty.
func (b Bitmap) IsZero() bool { return b == Bitmap{} }

// DefaultAttrs is what GETATTR asks when Request.Attrs is empty: the
// equivalent of NFSv3's fattr3 that fstress uses.
var DefaultAttrs = MakeBitmap(AttrType, AttrChange, AttrSize, AttrFsid, AttrFileID, AttrMode,
	AttrNumLinks, AttrSpaceUsed, AttrTimeAccess, AttrTimeMetadata, AttrTimeModify)

// DirAttrs is what READDIR asks for each entry when Request.Attrs is empty.
var DirAttrs = MakeBitmap(AttrType, AttrSize, AttrFileID)

// EncodeBitmap appends a bitmap4 without trailing zero words.
func EncodeBitmap(e *xdr.Encoder, b Bitmap) {
	n := 3
	for n > 0 && b[n-1] == 0 {
		n--
	}
	e.Uint32(uint32(n))
	for i := 0; i < n; i++ {
		e.Uint32(b[i])
	}
}

// DecodeBitmap reads a bitmap4 of at most MaxBitmapLen words; bits of
// words past the third are dropped (reported by the second result).
func DecodeBitmap(d *xdr.Decoder) (b Bitmap, high bool) {
	n := d.Uint32()
	if n > MaxBitmapLen {
		d.Fail(fmt.Errorf("%w: bitmap of %d words", xdr.ErrTooLong, n))
		return b, false
	}
	for i := uint32(0); i < n && d.Err() == nil; i++ {
		w := d.Uint32()
		if i < 3 {
			b[i] = w
		} else if w != 0 {
			high = true
		}
	}
	return b, high
}

// Attr is the subset of fattr4 fstress uses; times are nanoseconds since
// the epoch. Mask has the attributes that were decoded.
type Attr struct {
	Mask            Bitmap
	Supported       Bitmap
	Type            uint32
	Change          uint64
	Size            uint64
	FsidMajor       uint64
	FsidMinor       uint64
	LeaseTime       uint32
	RdattrError     uint32
	FileID          uint64
	MaxFileSize     uint64
	MaxRead         uint64
	MaxWrite        uint64
	Mode            uint32
	Nlink           uint32
	Used            uint64
	Atime           int64
	Ctime           int64 // time_metadata
	Mtime           int64
	MountedOnFileID uint64
}

func decodeTime(d *xdr.Decoder) int64 {
	s, ns := d.Int64(), d.Uint32()
	return s*1e9 + int64(ns)
}

func encodeTime(e *xdr.Encoder, t int64) {
	s, ns := t/1e9, t%1e9
	if ns < 0 {
		s, ns = s-1, ns+1e9
	}
	e.Int64(s)
	e.Uint32(uint32(ns))
}

// DecodeFattr reads a fattr4 into a: the bitmap, then attr_vals (at most
// MaxAttrLen bytes) in ascending attribute order. Attributes fstress has
// no use for are skipped when their size is known; at the first attribute
// whose form this decoder does not know, decoding of attr_vals stops (the
// value is length-delimited, so the outer reply stays in step) and a.Mask
// lacks it and every later one.
func DecodeFattr(d *xdr.Decoder, a *Attr) {
	*a = Attr{}
	mask, _ := DecodeBitmap(d)
	vals := d.OpaqueMax(MaxAttrLen)
	if d.Err() != nil {
		return
	}
	var vd xdr.Decoder
	vd.Reset(vals)
	for w := 0; w < 3; w++ {
		for m := mask[w]; m != 0; m &= m - 1 {
			n := w*32 + trailingZeros(m)
			if !decodeAttrVal(&vd, a, n) || vd.Err() != nil {
				return
			}
			a.Mask.Set(n)
		}
	}
}

func trailingZeros(x uint32) int { return bits.TrailingZeros32(x) }

// decodeAttrVal decodes attribute n; false when its form is unknown.
func decodeAttrVal(d *xdr.Decoder, a *Attr, n int) bool {
	switch n {
	case AttrSupportedAttrs:
		a.Supported, _ = DecodeBitmap(d)
	case AttrType:
		a.Type = d.Uint32()
	case AttrChange:
		a.Change = d.Uint64()
	case AttrSize:
		a.Size = d.Uint64()
	case AttrFsid:
		a.FsidMajor, a.FsidMinor = d.Uint64(), d.Uint64()
	case AttrLeaseTime:
		a.LeaseTime = d.Uint32()
	case AttrRdattrError:
		a.RdattrError = d.Uint32()
	case AttrFileID:
		a.FileID = d.Uint64()
	case AttrMaxFileSize:
		a.MaxFileSize = d.Uint64()
	case AttrMaxRead:
		a.MaxRead = d.Uint64()
	case AttrMaxWrite:
		a.MaxWrite = d.Uint64()
	case AttrMode:
		a.Mode = d.Uint32()
	case AttrNumLinks:
		a.Nlink = d.Uint32()
	case AttrSpaceUsed:
		a.Used = d.Uint64()
	case AttrTimeAccess:
		a.Atime = decodeTime(d)
	case AttrTimeMetadata:
		a.Ctime = decodeTime(d)
	case AttrTimeModify:
		a.Mtime = decodeTime(d)
	case AttrMountedOnFileID:
		a.MountedOnFileID = d.Uint64()
	default:
		return skipAttrVal(d, n)
	}
	return true
}

// skipAttrVal consumes an attribute fstress does not keep; false when its
// form is unknown.
func skipAttrVal(d *xdr.Decoder, n int) bool {
	switch n {
	case AttrFHExpireType, 13, 28, 29: // fh_expire_type, aclsupport, maxlink, maxname
		d.Skip(4)
	case AttrLinkSupport, AttrSymlinkSupport, AttrNamedAttr, AttrUniqueHandles,
		14, 15, 16, 17, 18, 25, 26, 34, 46: // booleans
		d.Bool()
	case 21, 22, 23, 38, 39, 40, 42, 43, 44: // files_*, quota_*, space_avail/free/total
		d.Skip(8)
	case 41: // rawdev: specdata4
		d.Skip(8)
	case 49, 50, 51: // time_backup, time_create, time_delta
		d.Skip(12)
	case AttrTimeAccessSet, AttrTimeModifySet: // settime4
		if d.Uint32() == 1 {
			d.Skip(12)
		}
	case AttrFilehandle:
		d.OpaqueMax(FHSize)
	case AttrOwner, AttrOwnerGroup, 32: // utf8 strings
		d.OpaqueMax(OpaqueLimit)
	default:
		return false
	}
	return true
}

// EncodeFattr appends a fattr4 of the attributes in mask that this encoder
// knows (those Attr holds, except supported_attrs given as a bitmap);
// others are left out of the bitmap sent.
func EncodeFattr(e *xdr.Encoder, mask Bitmap, a *Attr) {
	var sent Bitmap
	for w := 0; w < 3; w++ {
		for m := mask[w]; m != 0; m &= m - 1 {
			if n := w*32 + trailingZeros(m); encodable(n) {
				sent.Set(n)
			}
		}
	}
	EncodeBitmap(e, sent)
	lenAt := e.Len()
	e.Uint32(0)
	for w := 0; w < 3; w++ {
		for m := sent[w]; m != 0; m &= m - 1 {
			encodeAttrVal(e, a, w*32+trailingZeros(m))
		}
	}
	e.PutUint32At(lenAt, uint32(e.Len()-lenAt-4))
}

func encodable(n int) bool {
	switch n {
	case AttrSupportedAttrs, AttrType, AttrChange, AttrSize, AttrFsid, AttrLeaseTime,
		AttrRdattrError, AttrFileID, AttrMaxFileSize, AttrMaxRead, AttrMaxWrite, AttrMode,
		AttrNumLinks, AttrSpaceUsed, AttrTimeAccess, AttrTimeMetadata, AttrTimeModify,
		AttrMountedOnFileID:
		return true
	}
	return false
}

func encodeAttrVal(e *xdr.Encoder, a *Attr, n int) {
	switch n {
	case AttrSupportedAttrs:
		EncodeBitmap(e, a.Supported)
	case AttrType:
		e.Uint32(a.Type)
	case AttrChange:
		e.Uint64(a.Change)
	case AttrSize:
		e.Uint64(a.Size)
	case AttrFsid:
		e.Uint64(a.FsidMajor)
		e.Uint64(a.FsidMinor)
	case AttrLeaseTime:
		e.Uint32(a.LeaseTime)
	case AttrRdattrError:
		e.Uint32(a.RdattrError)
	case AttrFileID:
		e.Uint64(a.FileID)
	case AttrMaxFileSize:
		e.Uint64(a.MaxFileSize)
	case AttrMaxRead:
		e.Uint64(a.MaxRead)
	case AttrMaxWrite:
		e.Uint64(a.MaxWrite)
	case AttrMode:
		e.Uint32(a.Mode)
	case AttrNumLinks:
		e.Uint32(a.Nlink)
	case AttrSpaceUsed:
		e.Uint64(a.Used)
	case AttrTimeAccess:
		encodeTime(e, a.Atime)
	case AttrTimeMetadata:
		encodeTime(e, a.Ctime)
	case AttrTimeModify:
		encodeTime(e, a.Mtime)
	case AttrMountedOnFileID:
		e.Uint64(a.MountedOnFileID)
	}
}
