package nfs4

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/xdr"
)

// wire builds expected XDR by hand, field by field, independently of
// xdr.Encoder: u appends 4-byte words, h 8-byte hypers, s a string with
// its length and zero padding, raw bytes as they are.
type wire struct{ b []byte }

func (w *wire) u(vs ...uint32) *wire {
	for _, v := range vs {
		w.b = append(w.b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return w
}
func (w *wire) h(v uint64) *wire { return w.u(uint32(v>>32), uint32(v)) }
func (w *wire) s(x string) *wire {
	w.u(uint32(len(x)))
	w.b = append(w.b, x...)
	for len(w.b)%4 != 0 {
		w.b = append(w.b, 0)
	}
	return w
}
func (w *wire) raw(x string) *wire { w.b = append(w.b, x...); return w }

var (
	sess16 = "SESSION-ID-16byt" // sessionid4: 16 opaque bytes, no length
	fh8    = "FH-8byte"
	other  = "OTHER-12byte" // stateid4.other
	verf8  = "VERIFIER"
)

// head: COMPOUND4args tag "" (length 0), minorversion 1, n operations,
// then SEQUENCE4args (op 53): sessionid, sequenceid 7, slotid 2,
// highest_slotid 5, cachethis FALSE.
func head(n uint32) *wire {
	return new(wire).u(0, 1, n).u(53).raw(sess16).u(7, 2, 5, 0)
}

func seqArgs() SeqArgs {
	var s SeqArgs
	copy(s.SessionID[:], sess16)
	s.SeqID, s.Slot, s.HighestSlot = 7, 2, 5
	return s
}

func sid() Stateid {
	s := Stateid{Seqid: 1}
	copy(s.Other[:], other)
	return s
}

// putfh: PUTFH (22) nfs_fh4 fh8.
func (w *wire) putfh() *wire { return w.u(22).s(fh8) }

// defAttrs: bitmap4 of DefaultAttrs — word 0 bits 1 type, 3 change, 4 size,
// 8 fsid, 20 fileid = 0x0010011a; word 1 bits 33 mode, 35 numlinks, 45
// space_used, 47 time_access, 52 time_metadata, 53 time_modify =
// 0x0030a00a.
func (w *wire) defAttrs() *wire { return w.u(2, 0x0010011a, 0x0030a00a) }

func goldens() []struct {
	q    Request
	want *wire
} {
	fh := FH(fh8)
	return []struct {
		q    Request
		want *wire
	}{
		{Request{Op: OpGetattr, FH: fh}, head(3).putfh().u(9).defAttrs()},
		// SETATTR (34): stateid {seqid 1, other}, fattr4 {bitmap [size(4)] [mode(33)=bit 1 of word 1],
		// attr_vals 12 bytes: size 4096 (hyper) then mode 0600}.
		{Request{Op: OpSetattr, FH: fh, Stateid: sid(), Mode: 0o600, SetSize: true, Size: 4096},
			head(3).putfh().u(34, 1).raw(other).u(2, 1<<4, 1<<1).u(12).h(4096).u(0o600)},
		// LOOKUP (15) "name", GETFH (10), GETATTR (9).
		{Request{Op: OpLookup, FH: fh, Name: "name"}, head(5).putfh().u(15).s("name").u(10).u(9).defAttrs()},
		// PUTROOTFH (24), LOOKUP "export", LOOKUP "a", GETFH, GETATTR [lease_time(10)].
		{Request{Op: OpLookupPath, Path: []string{"export", "a"}, Attrs: MakeBitmap(AttrLeaseTime)},
			head(6).u(24).u(15).s("export").u(15).s("a").u(10).u(9).u(1, 1<<10)},
		{Request{Op: OpAccess, FH: fh, Access: 0x3f}, head(3).putfh().u(3, 0x3f)},
		{Request{Op: OpReadlink, FH: fh}, head(3).putfh().u(27)},
		// READ (25): stateid, offset 8192, count 4096.
		{Request{Op: OpRead, FH: fh, Stateid: sid(), Offset: 8192, Count: 4096},
			head(3).putfh().u(25, 1).raw(other).h(8192).u(4096)},
		// WRITE (38): stateid, offset, stable UNSTABLE4, data<> of 5 zero bytes + 3 pad.
		{Request{Op: OpWrite, FH: fh, Stateid: sid(), Offset: 3, Count: 5},
			head(3).putfh().u(38, 1).raw(other).h(3).u(0).u(5).raw("\x00\x00\x00\x00\x00\x00\x00\x00")},
		{Request{Op: OpWrite, FH: fh, Stateid: sid(), Data: []byte("abc"), Stable: FileSync},
			head(3).putfh().u(38, 1).raw(other).h(0).u(2).s("abc")},
		{Request{Op: OpCommit, FH: fh, Offset: 1, Count: 2}, head(3).putfh().u(5).h(1).u(2)},
		// OPEN (18): seqid 0, share_access BOTH|WANT_NO_DELEG, deny NONE, owner {clientid, "own"},
		// openflag4 OPEN4_CREATE, createhow4 UNCHECKED4, fattr4 [mode] = 0644, claim CLAIM_NULL "f";
		// then GETFH, GETATTR.
		{Request{Op: OpOpen, FH: fh, Name: "f", Create: true, Mode: 0o644, ClientID: 0x1122334455667788, Owner: []byte("own")},
			head(5).putfh().u(18, 0, 0x403, 0).h(0x1122334455667788).s("own").u(1, 0).u(2, 0, 1<<1).u(4, 0o644).u(0).s("f").u(10).u(9).defAttrs()},
		// OPEN without create, read only: openflag4 OPEN4_NOCREATE.
		{Request{Op: OpOpen, FH: fh, Name: "f", Access: ShareAccessRead, ClientID: 9, Owner: []byte("o")},
			head(5).putfh().u(18, 0, 0x401, 0).h(9).s("o").u(0).u(0).s("f").u(10).u(9).defAttrs()},
		// CLOSE (4): seqid 0, stateid.
		{Request{Op: OpClose, FH: fh, Stateid: sid()}, head(3).putfh().u(4, 0, 1).raw(other)},
		// CREATE (6): createtype4 NF4DIR (void), objname "d", fattr4 [mode] 0755; GETFH.
		{Request{Op: OpMkdir, FH: fh, Name: "d", Mode: 0o755}, head(4).putfh().u(6, 2).s("d").u(2, 0, 1<<1).u(4, 0o755).u(10)},
		// CREATE NF4LNK linkdata "target", objname "l", fattr4 [mode] 0777; GETFH.
		{Request{Op: OpSymlink, FH: fh, Name: "l", Target: "target", Mode: 0o777},
			head(4).putfh().u(6, 5).s("target").s("l").u(2, 0, 1<<1).u(4, 0o777).u(10)},
		{Request{Op: OpRemove, FH: fh, Name: "gone"}, head(3).putfh().u(28).s("gone")},
		// RENAME: PUTFH from, SAVEFH (32), PUTFH to, RENAME (29) oldname newname.
		{Request{Op: OpRename, FH: fh, Name: "a", ToFH: fh, ToName: "bb"}, head(5).putfh().u(32).putfh().u(29).s("a").s("bb")},
		// LINK: PUTFH file, SAVEFH, PUTFH dir, LINK (11) newname.
		{Request{Op: OpLink, FH: fh, ToFH: fh, ToName: "h"}, head(5).putfh().u(32).putfh().u(11).s("h")},
		// READDIR (26): cookie, cookieverf, dircount, maxcount, attr_request [type, size, fileid].
		{Request{Op: OpReaddir, FH: fh, Cookie: 5, DirCount: 1024, MaxCount: 4096},
			head(3).putfh().u(26).h(5).raw("\x00\x00\x00\x00\x00\x00\x00\x00").u(1024, 4096).u(1, 1<<1|1<<4|1<<20)},
		{Request{Op: OpSequence}, head(1)},
		// RECLAIM_COMPLETE (58) rca_one_fs FALSE.
		{Request{Op: OpReclaimComplete}, head(2).u(58, 0)},
	}
}

func TestGoldenCompounds(t *testing.T) {
	for _, g := range goldens() {
		q := g.q
		q.Seq = seqArgs()
		e := xdr.NewEncoder(256)
		q.Encode(e)
		if !bytes.Equal(e.Bytes(), g.want.b) {
			t.Errorf("%s:\n got %s\nwant %s", q.Op, hex.EncodeToString(e.Bytes()), hex.EncodeToString(g.want.b))
		}
	}
}

// TestGoldenSessionOps: the COMPOUNDs without SEQUENCE.
func TestGoldenSessionOps(t *testing.T) {
	var s SeqArgs
	copy(s.SessionID[:], sess16)
	var v [8]byte
	copy(v[:], verf8)
	cases := []struct {
		q    Request
		want *wire
	}{
		// EXCHANGE_ID (42): client_owner4 {verifier, ownerid "me"}, flags 0, SP4_NONE, impl_id<> empty.
		{Request{Op: OpExchangeID, Verifier: v, Owner: []byte("me")}, new(wire).u(0, 1, 1, 42).raw(verf8).s("me").u(0, 0, 0)},
		// CREATE_SESSION (43): clientid, sequence, flags 0, fore channel_attrs4 (pad, maxreq,
		// maxresp, maxresp_cached, maxops, maxreqs, rdma_ird<> empty), back channel, cb_program,
		// sec_parms<1> {AUTH_NONE}.
		{Request{Op: OpCreateSession, ClientID: 5, CSSeq: 1, Fore: ChannelAttrs{MaxRequestSize: 1000, MaxResponseSize: 2000,
			MaxResponseSizeCached: 300, MaxOperations: 16, MaxRequests: 64}},
			new(wire).u(0, 1, 1, 43).h(5).u(1, 0).u(0, 1000, 2000, 300, 16, 64, 0).u(0, 4096, 4096, 0, 2, 1, 0).u(0x40000000, 1, 0)},
		{Request{Op: OpDestroySession, Seq: s}, new(wire).u(0, 1, 1, 44).raw(sess16)},
		{Request{Op: OpDestroyClientID, ClientID: 0xabcdef}, new(wire).u(0, 1, 1, 57).h(0xabcdef)},
	}
	for _, c := range cases {
		e := xdr.NewEncoder(256)
		c.q.Encode(e)
		if !bytes.Equal(e.Bytes(), c.want.b) {
			t.Errorf("%s:\n got %s\nwant %s", c.q.Op, hex.EncodeToString(e.Bytes()), hex.EncodeToString(c.want.b))
		}
	}
}

// TestGoldenLiteral pins the wire builder itself: SEQUENCE + PUTFH +
// GETATTR written out byte by byte.
func TestGoldenLiteral(t *testing.T) {
	want := strings.Join([]string{
		"00000000", "00000001", "00000003", // tag "", minorversion 1, 3 ops
		"00000035", hex.EncodeToString([]byte(sess16)), "00000007", "00000002", "00000005", "00000000", // SEQUENCE
		"00000016", "00000008", hex.EncodeToString([]byte(fh8)), // PUTFH
		"00000009", "00000002", "0010011a", "0030a00a", // GETATTR
	}, "")
	q := Request{Op: OpGetattr, FH: FH(fh8), Seq: seqArgs()}
	e := xdr.NewEncoder(64)
	q.Encode(e)
	if got := hex.EncodeToString(e.Bytes()); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestArgsRoundTrip decodes every golden COMPOUND with the server half.
func TestArgsRoundTrip(t *testing.T) {
	for _, g := range goldens() {
		d := xdr.NewDecoder(g.want.b)
		_, minor, n := DecodeCompoundHeader(d)
		var a OpArgs
		for i := uint32(0); i < n; i++ {
			if !DecodeOpArgs(d, &a) {
				t.Fatalf("%s: op %d unknown", g.q.Op, a.Op)
			}
			if i == 0 && (a.Op != OPSEQUENCE || a.Seq != seqArgs()) {
				t.Errorf("%s: first op %s %+v", g.q.Op, a.Op, a.Seq)
			}
		}
		if d.Err() != nil || d.Remaining() != 0 || minor != 1 {
			t.Errorf("%s: %v, %d left", g.q.Op, d.Err(), d.Remaining())
		}
	}
}

func TestEncodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	q := Request{Op: OpWrite, FH: FH(fh8), Stateid: sid(), Count: 4096, Seq: seqArgs()}
	e := xdr.NewEncoder(8192)
	n := testing.AllocsPerRun(100, func() { e.Reset(); q.Encode(e) })
	if n != 0 {
		t.Errorf("WRITE encode: %v allocations", n)
	}
	q = Request{Op: OpOpen, FH: FH(fh8), Name: "f", Create: true, Mode: 0o644, Owner: []byte("o"), Seq: seqArgs()}
	if n := testing.AllocsPerRun(100, func() { e.Reset(); q.Encode(e) }); n != 0 {
		t.Errorf("OPEN encode: %v allocations", n)
	}
}

// A WRITE whose bytes Content makes encodes as the WRITE of those bytes.
func TestWriteContentEncodesAsItsBytes(t *testing.T) {
	src := content.NewSource(content.Default(), 2)
	data := make([]byte, 5000)
	src.Fill(data, 1, 4096, 3)
	byData := Request{Op: OpWrite, FH: FH(fh8), Stateid: sid(), Offset: 4096, Data: data, Seq: seqArgs()}
	byContent := Request{Op: OpWrite, FH: FH(fh8), Stateid: sid(), Offset: 4096, Count: 5000, Seq: seqArgs(),
		Content: content.Ref{Src: src, File: 1, Gen: 3}}
	a, b := xdr.NewEncoder(0), xdr.NewEncoder(0)
	byData.Encode(a)
	byContent.Encode(b)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("the Content WRITE differs from the WRITE of its bytes")
	}
	q := byContent
	e := xdr.NewEncoder(8192)
	if n := testing.AllocsPerRun(100, func() { e.Reset(); q.Encode(e) }); n != 0 && !raceEnabled {
		t.Errorf("Content WRITE encode: %v allocations", n)
	}
}
