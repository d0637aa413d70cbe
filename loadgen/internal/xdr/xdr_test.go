package xdr

import (
	"bytes"
	"errors"
	"testing"
)

func TestEncodeGolden(t *testing.T) {
	var e Encoder
	e.Uint32(0x01020304)
	e.Int32(-2)
	e.Uint64(0x1122334455667788)
	e.Int64(-1)
	e.Bool(true)
	e.Bool(false)
	e.Opaque([]byte{0xaa, 0xbb, 0xcc})
	e.FixedOpaque([]byte{1, 2, 3, 4, 5})
	e.String("abcd")
	e.String("")
	e.Zeros(2)
	want := []byte{
		1, 2, 3, 4,
		0xff, 0xff, 0xff, 0xfe,
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0, 0, 0, 1,
		0, 0, 0, 0,
		0, 0, 0, 3, 0xaa, 0xbb, 0xcc, 0,
		1, 2, 3, 4, 5, 0, 0, 0,
		0, 0, 0, 4, 'a', 'b', 'c', 'd',
		0, 0, 0, 0,
		0, 0, 0, 2, 0, 0, 0, 0,
	}
	if !bytes.Equal(e.Bytes(), want) {
		t.Fatalf("got  % x\nwant % x", e.Bytes(), want)
	}
	if e.Len() != len(want) {
		t.Fatalf("Len %d", e.Len())
	}
	e.PutUint32At(0, 7)
	if !bytes.Equal(e.Bytes()[:4], []byte{0, 0, 0, 7}) {
		t.Fatal("PutUint32At")
	}
	e.Reset()
	if e.Len() != 0 {
		t.Fatal("Reset")
	}
}

func TestRoundTrip(t *testing.T) {
	var e Encoder
	for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 8, 4095, 4096, 4097, 10000} {
		e.Reset()
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*7 + 1)
		}
		e.Uint32(42)
		e.Opaque(data)
		e.FixedOpaque(data)
		e.String(string(data))
		e.Zeros(n)
		e.Uint64(1 << 63)
		e.Bool(true)
		if e.Len()%4 != 0 {
			t.Fatalf("n=%d: length %d not a multiple of 4", n, e.Len())
		}
		d := NewDecoder(e.Bytes())
		if d.Uint32() != 42 || !bytes.Equal(d.Opaque(), data) || !bytes.Equal(d.FixedOpaque(n), data) ||
			d.String() != string(data) || !bytes.Equal(d.Opaque(), make([]byte, n)) ||
			d.Uint64() != 1<<63 || !d.Bool() {
			t.Fatalf("n=%d: round trip mismatch (err %v)", n, d.Err())
		}
		if d.Err() != nil || d.Remaining() != 0 {
			t.Fatalf("n=%d: err %v remaining %d", n, d.Err(), d.Remaining())
		}
	}
}

func TestDecoderErrors(t *testing.T) {
	d := NewDecoder([]byte{0, 0, 0})
	if d.Uint32() != 0 || !errors.Is(d.Err(), ErrShort) {
		t.Fatalf("short uint32: %v", d.Err())
	}
	first := d.Err()
	d.Uint64()
	d.Fail(errors.New("other"))
	if d.Err() != first {
		t.Fatal("error not sticky")
	}

	d = NewDecoder([]byte{0, 0, 0, 2})
	if d.Bool(); !errors.Is(d.Err(), ErrBadBool) {
		t.Fatalf("bool 2: %v", d.Err())
	}
	// Opaque length beyond the buffer, including a huge one.
	for _, b := range [][]byte{{0, 0, 0, 5, 1, 2, 3, 4}, {0xff, 0xff, 0xff, 0xff}, {0, 0, 0, 1, 9}} {
		d = NewDecoder(b)
		if d.Opaque() != nil || !errors.Is(d.Err(), ErrShort) {
			t.Fatalf("% x: %v", b, d.Err())
		}
		d.Reset(b)
		if d.SkipOpaque(); !errors.Is(d.Err(), ErrShort) {
			t.Fatalf("skip % x: %v", b, d.Err())
		}
	}
	d = NewDecoder([]byte{0, 0, 0, 65})
	if d.OpaqueMax(64); !errors.Is(d.Err(), ErrTooLong) {
		t.Fatalf("OpaqueMax: %v", d.Err())
	}
	d.Reset([]byte{0, 0, 0, 1, 'x', 0, 0, 0})
	if s := d.StringMax(1); s != "x" || d.Err() != nil {
		t.Fatalf("StringMax %q %v", s, d.Err())
	}
}

func TestEncodeNoAlloc(t *testing.T) {
	e := NewEncoder(1024)
	data := make([]byte, 100)
	n := testing.AllocsPerRun(100, func() {
		e.Reset()
		e.Uint32(1)
		e.Uint64(2)
		e.Opaque(data)
		e.String("name")
		e.Zeros(200)
		e.OpaqueSpace(99)
	})
	if n != 0 {
		t.Fatalf("%v allocs per encode", n)
	}
}

func TestOpaqueSpaceIsOpaqueFilledInPlace(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 4096} {
		want, got := NewEncoder(0), NewEncoder(0)
		data := bytes.Repeat([]byte{0xab}, n)
		want.Uint32(7)
		want.Opaque(data)
		got.Uint32(7)
		copy(got.OpaqueSpace(n), data)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("n=%d: %x, want %x", n, got.Bytes(), want.Bytes())
		}
	}
}
