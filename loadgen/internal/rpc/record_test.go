package rpc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

func hx(s ...string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Join(s, ""), " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// frame splits rec into fragments of the given sizes (the rest goes in the
// last fragment) with record marks.
func frame(rec []byte, sizes ...int) []byte {
	var out []byte
	for {
		n := len(rec)
		if len(sizes) > 0 && sizes[0] < n {
			n = sizes[0]
			sizes = sizes[1:]
		}
		h := uint32(n)
		if n == len(rec) {
			h |= lastFragment
		}
		out = binary.BigEndian.AppendUint32(out, h)
		out = append(out, rec[:n]...)
		rec = rec[n:]
		if h&lastFragment != 0 {
			return out
		}
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) + seed
	}
	return b
}

// flaky returns a deadline error before every other read and reads at most
// max bytes at a time, to exercise resumption.
type flaky struct {
	r   io.Reader
	max int
	n   int
}

func (f *flaky) Read(p []byte) (int, error) {
	f.n++
	if f.n%2 == 1 {
		return 0, os.ErrDeadlineExceeded
	}
	if len(p) > f.max {
		p = p[:f.max]
	}
	return f.r.Read(p)
}

func TestRecordReader(t *testing.T) {
	recs := [][]byte{
		pattern(8, 1),
		pattern(100, 2),
		pattern(0, 0),
		pattern(5000, 3),
		pattern(70000, 4), // larger than the 4 KiB test buffer
		pattern(12, 5),
	}
	splits := [][]int{nil, {4, 4}, nil, {1, 1000, 3}, {65536, 100}, {0, 0, 4}}
	var stream []byte
	for i, r := range recs {
		stream = append(stream, frame(r, splits[i]...)...)
	}
	for _, mode := range []string{"plain", "flaky"} {
		var src io.Reader = bytes.NewReader(stream)
		if mode == "flaky" {
			src = &flaky{r: src, max: 777}
		}
		rr := NewRecordReader(bufio.NewReaderSize(src, 4096))
		for i, want := range recs {
			var got []byte
			var err error
			for tries := 0; tries < 10000; tries++ {
				got, err = rr.Next()
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					break
				}
			}
			if err != nil {
				t.Fatalf("%s: record %d: %v", mode, i, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: record %d: got %d bytes, want %d", mode, i, len(got), len(want))
			}
		}
		var err error
		for tries := 0; tries < 100; tries++ {
			if _, err = rr.Next(); !errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
		}
		if err != io.EOF {
			t.Fatalf("%s: at end: %v", mode, err)
		}
	}
}

func TestRecordReaderTooLarge(t *testing.T) {
	stream := binary.BigEndian.AppendUint32(nil, lastFragment|(MaxRecord+1))
	rr := NewRecordReader(bufio.NewReader(bytes.NewReader(stream)))
	if _, err := rr.Next(); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("got %v", err)
	}
}

func TestParseReply(t *testing.T) {
	// accepted, AUTH_NONE verifier, SUCCESS, body
	body, err := ParseReply(hx("00000000 00000000 00000000 00000000 cafebabe"))
	if err != nil || !bytes.Equal(body, hx("cafebabe")) {
		t.Fatalf("success: % x %v", body, err)
	}
	// a verifier with a body is skipped
	body, err = ParseReply(hx("00000000 00000001 00000005 0102030405000000 00000000"))
	if err != nil || len(body) != 0 {
		t.Fatalf("verifier: % x %v", body, err)
	}
	cases := []struct {
		in   []byte
		want RPCError
	}{
		{hx("00000000 00000000 00000000 00000001"), RPCError{AcceptStat: ProgUnavail}},
		{hx("00000000 00000000 00000000 00000002 00000002 00000004"), RPCError{AcceptStat: ProgMismatch, Low: 2, High: 4}},
		{hx("00000000 00000000 00000000 00000003"), RPCError{AcceptStat: ProcUnavail}},
		{hx("00000000 00000000 00000000 00000004"), RPCError{AcceptStat: GarbageArgs}},
		{hx("00000000 00000000 00000000 00000005"), RPCError{AcceptStat: SystemErr}},
		{hx("00000001 00000000 00000002 00000002"), RPCError{Denied: true, RejectStat: RPCMismatch, Low: 2, High: 2}},
		{hx("00000001 00000001 00000005"), RPCError{Denied: true, RejectStat: AuthError, AuthStat: 5}},
	}
	for i, c := range cases {
		_, e := ParseReply(c.in)
		if e == nil || *e != c.want || e.Error() == "" {
			t.Errorf("case %d: got %+v want %+v", i, e, c.want)
		}
	}
	for _, in := range [][]byte{nil, hx("00000000 00000000"), hx("00000007"), hx("00000000 00000000 00000000 00000002 00000001"), hx("00000001 00000001")} {
		if _, e := ParseReply(in); e == nil || e.Malformed == nil {
			t.Errorf("% x: got %+v, want malformed", in, e)
		}
	}
}

func TestEncodeAuth(t *testing.T) {
	got := encodeAuth(AuthSys{Stamp: 0x11223344, Machine: "host", UID: 1000, GID: 100, GIDs: []uint32{4, 5}})
	want := hx("00000001 00000020", "11223344", "00000004 686f7374", "000003e8", "00000064", "00000002 00000004 00000005",
		"00000000 00000000")
	if !bytes.Equal(got, want) {
		t.Fatalf("got  % x\nwant % x", got, want)
	}
	many := make([]uint32, 20)
	if n := binary.BigEndian.Uint32(encodeAuth(AuthSys{GIDs: many})[4:]); n != 4+4+4+4+4+16*4 {
		t.Fatalf("gid list not capped at 16: body %d bytes", n)
	}
}

// A record marker may claim up to MaxRecord bytes without sending them: the
// reader's buffer follows what arrives, not the claim (1024 connections each
// told "64 MiB" used to hold 64 GiB).
func TestRecordReaderDoesNotTrustTheMarker(t *testing.T) {
	stream := binary.BigEndian.AppendUint32(nil, lastFragment|MaxRecord)
	stream = append(stream, pattern(10, 7)...)
	rr := NewRecordReader(bufio.NewReaderSize(bytes.NewReader(stream), 4096))
	if _, err := rr.Next(); err != io.ErrUnexpectedEOF && err != io.EOF {
		t.Fatalf("truncated record: got %v", err)
	}
	if c := cap(rr.acc); c > recordGrowStep {
		t.Fatalf("a 10-byte fragment claiming %d bytes holds a %d-byte buffer; want ≤ %d", MaxRecord, c, recordGrowStep)
	}
	// 64 MiB (the old bound) is refused at the marker, before any allocation
	stream = binary.BigEndian.AppendUint32(nil, lastFragment|64<<20)
	rr = NewRecordReader(bufio.NewReader(bytes.NewReader(stream)))
	if _, err := rr.Next(); err == nil || !strings.Contains(err.Error(), "larger") || cap(rr.acc) != 0 {
		t.Fatalf("64 MiB marker: %v, buffer %d", err, cap(rr.acc))
	}
}

// The largest legal reply (a 1 MiB READ and its headers) still passes, in
// fragments of any size, and its buffer is no larger than twice the record.
func TestRecordReaderLargestReply(t *testing.T) {
	want := pattern(MaxRecord, 9)
	stream := frame(want, 1<<20-3, 5000)
	rr := NewRecordReader(bufio.NewReaderSize(bytes.NewReader(stream), 4096))
	got, err := rr.Next()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, %v; want %d", len(got), err, len(want))
	}
	if cap(rr.acc) > 2*MaxRecord {
		t.Fatalf("buffer %d for a %d-byte record", cap(rr.acc), MaxRecord)
	}
}
