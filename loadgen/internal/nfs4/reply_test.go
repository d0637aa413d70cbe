package nfs4

import (
	"errors"
	"testing"

	"workbench/loadgen/internal/xdr"
)

// seqRes: SEQUENCE4res (op 53, NFS4_OK): sessionid, sequenceid 7, slotid
// 2, highest_slotid 5, target_highest_slotid 9, status_flags 0.
func seqRes(w *wire) *wire { return w.u(53, 0).raw(sess16).u(7, 2, 5, 9, 0) }

// replyHead: COMPOUND4res status, tag "", n results.
func replyHead(status, n uint32) *wire { return new(wire).u(status).s("").u(n) }

// lookupReply: SEQUENCE, PUTFH, LOOKUP, GETFH fh8, GETATTR of type NF4REG,
// size 4096, fileid 77, mode 0644 (bitmap words 0x00100012, 0x2).
func lookupReply() *wire {
	w := seqRes(replyHead(0, 5)).u(22, 0).u(15, 0).u(10, 0).s(fh8)
	return w.u(9, 0).u(2, 1<<1|1<<4|1<<20, 1<<1).u(4 + 8 + 8 + 4).u(NF4REG).h(4096).h(77).u(0o644)
}

func TestDecodeLookupReply(t *testing.T) {
	r, err := DecodeReply(lookupReply().b)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != 0 || r.NumOps != 5 || !r.HasSeq || r.Seq.TargetHighestSlot != 9 || string(r.FH) != fh8 {
		t.Fatalf("%+v", r)
	}
	a := r.Attr
	if !r.HasAttr || a.Type != NF4REG || a.Size != 4096 || a.FileID != 77 || a.Mode != 0o644 ||
		a.Mask != MakeBitmap(AttrType, AttrSize, AttrFileID, AttrMode) {
		t.Fatalf("attr %+v", a)
	}
}

func TestDecodeErrorReplies(t *testing.T) {
	cases := []struct {
		name   string
		w      *wire
		status uint32
		op     Opnum
	}{
		// SEQUENCE failing: the only result.
		{"badsession", replyHead(NFS4ERR_BADSESSION, 1).u(53, NFS4ERR_BADSESSION), NFS4ERR_BADSESSION, OPSEQUENCE},
		{"delay", replyHead(NFS4ERR_DELAY, 1).u(53, NFS4ERR_DELAY), NFS4ERR_DELAY, OPSEQUENCE},
		// LOOKUP failing after SEQUENCE and PUTFH.
		{"noent", seqRes(replyHead(NFS4ERR_NOENT, 3)).u(22, 0).u(15, NFS4ERR_NOENT), NFS4ERR_NOENT, OPLOOKUP},
		// SETATTR failing carries attrsset (empty bitmap).
		{"setattr", seqRes(replyHead(NFS4ERR_GRACE, 3)).u(22, 0).u(34, NFS4ERR_GRACE, 0), NFS4ERR_GRACE, OPSETATTR},
		// an empty result list (e.g. MINOR_VERS_MISMATCH).
		{"minor", replyHead(NFS4ERR_MINOR_VERS_MISMATCH, 0), NFS4ERR_MINOR_VERS_MISMATCH, 0},
	}
	for _, c := range cases {
		r, err := DecodeReply(c.w.b)
		if err != nil || r.Status != c.status || r.Op != c.op {
			t.Errorf("%s: %+v %v", c.name, r, err)
		}
		if c.status != 0 && r.Err() == nil {
			t.Errorf("%s: Err nil", c.name)
		}
	}
	var se *StatusError
	r, _ := DecodeReply(cases[2].w.b)
	if !errors.As(r.Err(), &se) || se.Error() != "LOOKUP: NFS4ERR_NOENT" {
		t.Errorf("Err: %v", r.Err())
	}
}

func TestDecodeRejects(t *testing.T) {
	cases := map[string]*wire{
		"result after a failure": seqRes(replyHead(NFS4ERR_NOENT, 3)).u(15, NFS4ERR_NOENT).u(10, 0).s(fh8),
		"too many results":       replyHead(0, MaxOps+1),
		"unknown operation":      replyHead(0, 1).u(40, 0),
		"huge tag":               new(wire).u(0, 1<<30),
		"fh over 128 bytes":      replyHead(0, 1).u(10, 0).u(129).raw(string(make([]byte, 132))),
		"huge fh length":         replyHead(0, 1).u(10, 0).u(0xffffffff),
		"huge bitmap":            replyHead(0, 1).u(9, 0).u(1000),
		"huge attr_vals":         replyHead(0, 1).u(9, 0).u(1, 2).u(1 << 31),
		"huge read data":         replyHead(0, 1).u(25, 0).u(0).u(0x7fffffff),
		"bad bool":               replyHead(0, 1).u(25, 0).u(2).u(0),
		"bad delegation":         replyHead(0, 1).u(18, 0).u(1).raw(other).u(0).h(0).h(0).u(0).u(0).u(7),
		"trailing bytes":         replyHead(0, 0).u(0),
		"endless readdir":        replyHead(0, 1).u(26, 0).raw(verf8).u(1).h(3).s("a").u(0).u(0).u(1),
		"impl_id array of 2":     replyHead(0, 1).u(42, 0).h(1).u(1, 0, 0).h(0).s("o").s("s").u(2),
		"rdma_ird of 5":          replyHead(0, 1).u(43, 0).raw(sess16).u(1, 0).u(0, 0, 0, 0, 0, 0).u(5),
	}
	for name, w := range cases {
		if _, err := DecodeReply(w.b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	_, err := DecodeReply(cases["huge fh length"].b)
	if !errors.Is(err, xdr.ErrTooLong) {
		t.Errorf("huge fh: %v, want ErrTooLong", err)
	}
}

// TestDecodeTruncated: every proper prefix of valid replies is an error,
// never a panic.
func TestDecodeTruncated(t *testing.T) {
	for _, w := range validReplies() {
		for n := 0; n < len(w); n++ {
			if _, err := DecodeReply(w[:n]); err == nil {
				t.Fatalf("prefix %d of %d accepted", n, len(w))
			}
		}
	}
}

// validReplies are encoded by the server half for every kind.
func validReplies() [][]byte {
	var out [][]byte
	out = append(out, lookupReply().b)
	ents := []Entry{{Cookie: 3, Name: "a", Attr: Attr{Mask: DirAttrs, Type: NF4DIR}}, {Cookie: 4, Name: "bcdef"}}
	reps := []struct {
		op Opnum
		r  Reply
	}{
		{OPGETATTR, Reply{Attr: Attr{Mask: DefaultAttrs, Size: 9, Atime: -1}}},
		{OPSETATTR, Reply{AttrSet: MakeBitmap(AttrMode)}}, {OPACCESS, Reply{Access: 3, Supported: 0x3f}},
		{OPREADLINK, Reply{Target: "tgt"}}, {OPREAD, Reply{Count: 5, EOF: true}},
		{OPWRITE, Reply{Count: 5, Committed: 2}}, {OPCOMMIT, Reply{}}, {OPOPEN, Reply{Stateid: sid()}},
		{OPCLOSE, Reply{Stateid: sid()}}, {OPCREATE, Reply{}}, {OPREMOVE, Reply{}}, {OPRENAME, Reply{}},
		{OPLINK, Reply{}}, {OPREADDIR, Reply{Entries: ents, EOF: true}}, {OPGETFH, Reply{FH: FH(fh8)}},
		{OPEXCHANGE_ID, Reply{ExchangeID: ExchangeIDRes{ClientID: 1, ServerMajor: "m", ImplName: "n"}}},
		{OPCREATE_SESSION, Reply{CreateSession: CreateSessionRes{Fore: ChannelAttrs{MaxRequests: 8}}}},
	}
	for i := range reps {
		e := xdr.NewEncoder(512)
		at := BeginCompoundReply(e, []byte("tag"))
		EncodeResult(e, OPSEQUENCE, 0, &Reply{})
		EncodeResult(e, OPPUTFH, 0, &Reply{})
		EncodeResult(e, reps[i].op, 0, &reps[i].r)
		EndCompoundReply(e, at, 0, 3)
		out = append(out, e.Bytes())
	}
	return out
}

// TestResultRoundTrip: what the server half encodes, the client half
// decodes to the same fields.
func TestResultRoundTrip(t *testing.T) {
	reps := validReplies()[1:]
	for i, b := range reps {
		r, err := DecodeReply(b)
		if err != nil || r.NumOps != 3 || r.Status != 0 {
			t.Fatalf("reply %d: %+v %v", i, r, err)
		}
	}
	r, _ := DecodeReply(reps[0])
	if r.Attr.Mask != DefaultAttrs || r.Attr.Size != 9 || r.Attr.Atime != -1 {
		t.Errorf("getattr: %+v", r.Attr)
	}
	r, _ = DecodeReply(reps[13])
	if len(r.Entries) != 2 || r.Entries[0].Attr.Type != NF4DIR || r.Entries[1].Name != "bcdef" || !r.EOF {
		t.Errorf("readdir: %+v", r.Entries)
	}
	r, _ = DecodeReply(reps[15])
	if r.ExchangeID.ClientID != 1 || r.ExchangeID.ImplName != "n" {
		t.Errorf("exchange_id: %+v", r.ExchangeID)
	}
}

// TestDecodeFattrUnknown: an attribute of unknown form stops attr_vals
// decoding without failing the reply.
func TestDecodeFattrUnknown(t *testing.T) {
	// bitmap: type (1), fs_locations (24: form not decoded), mode (33)
	w := new(wire).u(2, 1<<1|1<<24, 1<<1).u(12).u(NF4DIR).u(0).u(0o755)
	d := xdr.NewDecoder(w.b)
	var a Attr
	DecodeFattr(d, &a)
	if d.Err() != nil || d.Remaining() != 0 || a.Type != NF4DIR || a.Mask != MakeBitmap(AttrType) {
		t.Fatalf("%+v %v", a, d.Err())
	}
}

func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	body := validReplies()[5] // READ
	var r Reply
	if n := testing.AllocsPerRun(100, func() { DecodeReplyInto(body, &r) }); n != 0 {
		t.Errorf("READ reply decode: %v allocations", n)
	}
}

// FuzzDecodeReply: no input panics, runs away or allocates what a header
// merely claims; a reply that decodes re-decodes identically.
func FuzzDecodeReply(f *testing.F) {
	for _, b := range validReplies() {
		f.Add(b)
	}
	f.Add(replyHead(NFS4ERR_BADSESSION, 1).u(53, NFS4ERR_BADSESSION).b)
	f.Add(replyHead(0, 1).u(26, 0).raw(verf8).u(1).h(3).s("a").u(1, 2).u(4).u(2).u(0).u(1).b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Reply
		if err := DecodeReplyInto(b, &r); err != nil {
			return
		}
		if len(r.Entries) > len(b)/16 || len(r.FH) > FHSize || r.NumOps > MaxOps {
			t.Fatalf("decoded more than the input holds: %d entries, fh %d", len(r.Entries), len(r.FH))
		}
	})
}

// FuzzDecodeOpArgs: the server half never panics on any COMPOUND4args.
func FuzzDecodeOpArgs(f *testing.F) {
	for _, g := range goldens() {
		f.Add(g.want.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := xdr.NewDecoder(b)
		_, _, n := DecodeCompoundHeader(d)
		var a OpArgs
		for i := uint32(0); i < n && d.Err() == nil; i++ {
			if !DecodeOpArgs(d, &a) {
				return
			}
		}
	})
}

// A READDIR reply decodes at most MaxEntries entries: fstress asks maxcount
// 32 KiB, so a longer list is a server's mistake, not a directory to hold.
func TestDecodeReaddirBounded(t *testing.T) {
	readdir := func(n int) *wire {
		w := replyHead(0, 1).u(26, 0).raw(verf8)
		for i := 0; i < n; i++ {
			w.u(1).h(uint64(i + 3)).s("a").u(0).u(0)
		}
		return w.u(0).u(1)
	}
	if legal := (32 << 10) / 24; MaxEntries > 2*legal { // an entry is ≥ 24 bytes on the wire
		t.Fatalf("MaxEntries %d: more than twice the %d entries of a 32 KiB reply", MaxEntries, legal)
	}
	if r, err := DecodeReply(readdir(MaxEntries).b); err != nil || len(r.Entries) != MaxEntries {
		t.Fatalf("%d entries: %v", MaxEntries, err)
	}
	if _, err := DecodeReply(readdir(MaxEntries + 1).b); err == nil {
		t.Errorf("%d entries: accepted", MaxEntries+1)
	}
}
