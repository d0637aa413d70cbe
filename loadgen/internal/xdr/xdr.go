// Package xdr implements the subset of XDR (RFC 4506) that ONC RPC and
// NFSv3 need: 32/64-bit integers, booleans, fixed and variable-length opaque
// data and strings, all big-endian and padded to 4-byte units.
//
// The Encoder appends to a reusable byte slice (no allocation once the slice
// has grown to its working size). The Decoder reads from a byte slice with a
// sticky error: after the first short read or bad value every further read
// returns the zero value and Err reports the first problem, so callers can
// decode a whole structure and check the error once.
//
// Additions to the project contract: Encoder.Int64, Encoder.Zeros,
// Encoder.Len, Encoder.PutUint32At, Encoder.Grow, Encoder.SetBytes,
// Decoder.Reset, Decoder.Int32, Decoder.Int64, Decoder.Skip,
// Decoder.SkipOpaque, Decoder.Remaining, Decoder.Rest, Decoder.Offset,
// Decoder.Fail, Decoder.OpaqueMax, Decoder.StringMax, and the errors
// ErrShort and ErrTooLong, ErrBadBool.
package xdr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Errors reported by Decoder.Err.
var (
	ErrShort   = errors.New("xdr: short buffer")
	ErrTooLong = errors.New("xdr: length exceeds limit")
	ErrBadBool = errors.New("xdr: boolean is neither 0 nor 1")
)

// pad returns the number of zero bytes that follow n bytes of opaque data.
func pad(n int) int { return (4 - n&3) & 3 }

var zeros [4]byte

// Encoder appends XDR items to an internal buffer.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an encoder whose buffer has capacity n.
func NewEncoder(n int) *Encoder { return &Encoder{buf: make([]byte, 0, n)} }

// Reset empties the buffer, keeping its capacity.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

// Bytes returns the encoded bytes. They alias the encoder's buffer and are
// valid until the next Reset or append.
func (e *Encoder) Bytes() []byte { return e.buf }

// SetBytes makes b (its length and capacity) the encoder's buffer; encoding
// appends after len(b).
func (e *Encoder) SetBytes(b []byte) { e.buf = b }

// Len returns the number of bytes encoded so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Grow makes room for n more bytes without reallocation.
func (e *Encoder) Grow(n int) {
	if cap(e.buf)-len(e.buf) < n {
		nb := make([]byte, len(e.buf), 2*cap(e.buf)+n)
		copy(nb, e.buf)
		e.buf = nb
	}
}

// PutUint32At overwrites the 4 bytes at offset off (e.g. a record mark or a
// length reserved earlier).
func (e *Encoder) PutUint32At(off int, v uint32) {
	binary.BigEndian.PutUint32(e.buf[off:off+4], v)
}

// Uint32 appends an unsigned int.
func (e *Encoder) Uint32(v uint32) { e.buf = binary.BigEndian.AppendUint32(e.buf, v) }

// Int32 appends a signed int.
func (e *Encoder) Int32(v int32) { e.Uint32(uint32(v)) }

// Uint64 appends an unsigned hyper.
func (e *Encoder) Uint64(v uint64) { e.buf = binary.BigEndian.AppendUint64(e.buf, v) }

// Int64 appends a signed hyper.
func (e *Encoder) Int64(v int64) { e.Uint64(uint64(v)) }

// Bool appends a boolean (0 or 1).
func (e *Encoder) Bool(v bool) {
	if v {
		e.Uint32(1)
	} else {
		e.Uint32(0)
	}
}

// FixedOpaque appends fixed-length opaque data followed by its padding.
func (e *Encoder) FixedOpaque(b []byte) {
	e.buf = append(e.buf, b...)
	e.buf = append(e.buf, zeros[:pad(len(b))]...)
}

// Opaque appends variable-length opaque data: length, bytes, padding.
func (e *Encoder) Opaque(b []byte) {
	e.Uint32(uint32(len(b)))
	e.FixedOpaque(b)
}

// String appends a string (same wire form as Opaque).
func (e *Encoder) String(s string) {
	e.Uint32(uint32(len(s)))
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, zeros[:pad(len(s))]...)
}

// Zeros appends variable-length opaque data of n zero bytes (length, bytes,
// padding) without needing a source buffer.
func (e *Encoder) Zeros(n int) {
	e.Uint32(uint32(n))
	e.buf = append(e.buf, make([]byte, n+pad(n))...) // compiled to a clear, no allocation
}

// OpaqueSpace appends variable-length opaque data of n bytes that the
// caller fills in place: the length, n bytes (not cleared) and zero
// padding. It returns the n bytes, valid until the next append.
func (e *Encoder) OpaqueSpace(n int) []byte {
	e.Uint32(uint32(n))
	at := len(e.buf)
	e.buf = slices.Grow(e.buf, n+pad(n))[:at+n]
	e.buf = append(e.buf, zeros[:pad(n)]...)
	return e.buf[at : at+n]
}

// Decoder reads XDR items from a byte slice. Slices returned by Opaque and
// FixedOpaque alias the input.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a decoder reading b.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Reset makes the decoder read b from the start and clears its error.
func (d *Decoder) Reset(b []byte) { d.buf, d.off, d.err = b, 0, nil }

// Err returns the first decoding error, or nil.
func (d *Decoder) Err() error { return d.err }

// Fail records err as the decoder's error if none is recorded yet.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

// Offset returns the number of bytes consumed.
func (d *Decoder) Offset() int { return d.off }

// Remaining returns the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Rest returns the unread bytes (aliasing the input) without consuming them.
func (d *Decoder) Rest() []byte { return d.buf[d.off:] }

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf)-d.off {
		d.err = fmt.Errorf("%w: need %d bytes at offset %d, have %d", ErrShort, n, d.off, len(d.buf)-d.off)
		return nil
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}

// Uint32 reads an unsigned int.
func (d *Decoder) Uint32() uint32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint32(b)
}

// Int32 reads a signed int.
func (d *Decoder) Int32() int32 { return int32(d.Uint32()) }

// Uint64 reads an unsigned hyper.
func (d *Decoder) Uint64() uint64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// Int64 reads a signed hyper.
func (d *Decoder) Int64() int64 { return int64(d.Uint64()) }

// Bool reads a boolean; values other than 0 and 1 are an error.
func (d *Decoder) Bool() bool {
	v := d.Uint32()
	if v > 1 {
		d.Fail(fmt.Errorf("%w: %d at offset %d", ErrBadBool, v, d.off-4))
		return false
	}
	return v == 1
}

// Skip consumes n bytes.
func (d *Decoder) Skip(n int) { d.take(n) }

// FixedOpaque reads n bytes of opaque data and its padding. The result
// aliases the input.
func (d *Decoder) FixedOpaque(n int) []byte {
	b := d.take(n + pad(n))
	if b == nil {
		return nil
	}
	return b[:n:n]
}

// Opaque reads variable-length opaque data. The result aliases the input.
func (d *Decoder) Opaque() []byte {
	n := d.Uint32()
	if d.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(d.buf)-d.off) {
		d.Fail(fmt.Errorf("%w: opaque length %d at offset %d, %d bytes left", ErrShort, n, d.off-4, len(d.buf)-d.off))
		return nil
	}
	return d.FixedOpaque(int(n))
}

// OpaqueMax reads variable-length opaque data of at most max bytes.
func (d *Decoder) OpaqueMax(max int) []byte {
	n := d.Uint32()
	if d.err != nil {
		return nil
	}
	if uint64(n) > uint64(max) {
		d.Fail(fmt.Errorf("%w: %d > %d at offset %d", ErrTooLong, n, max, d.off-4))
		return nil
	}
	return d.FixedOpaque(int(n))
}

// SkipOpaque consumes variable-length opaque data and returns its length.
func (d *Decoder) SkipOpaque() int {
	n := d.Uint32()
	if d.err != nil {
		return 0
	}
	if uint64(n) > uint64(len(d.buf)-d.off) {
		d.Fail(fmt.Errorf("%w: opaque length %d at offset %d, %d bytes left", ErrShort, n, d.off-4, len(d.buf)-d.off))
		return 0
	}
	d.take(int(n) + pad(int(n)))
	return int(n)
}

// String reads a string (allocates a copy).
func (d *Decoder) String() string { return string(d.Opaque()) }

// StringMax reads a string of at most max bytes.
func (d *Decoder) StringMax(max int) string { return string(d.OpaqueMax(max)) }
