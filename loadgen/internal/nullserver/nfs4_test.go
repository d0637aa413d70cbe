package nullserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/xdr"
)

func compound(t *testing.T, c *rpc.Client, q *nfs4.Request) *nfs4.Reply {
	t.Helper()
	body, err := c.Call(nfs4.Program, nfs4.Version, nfs4.ProcCompound, q.Encode)
	if err != nil {
		t.Fatalf("%s: %v", q.Op, err)
	}
	r, err := nfs4.DecodeReply(body)
	if err != nil {
		t.Fatalf("%s: %v", q.Op, err)
	}
	return &r
}

func TestNFS4Versions(t *testing.T) {
	addr, _ := start(t)
	c := dial(t, addr)
	if _, err := c.Call(nfs4.Program, nfs4.Version, nfs4.ProcNull, nil); err != nil {
		t.Fatalf("v4 NULL: %v", err)
	}
	var re *rpc.RPCError
	if _, err := c.Call(nfs4.Program, 2, 0, nil); !errors.As(err, &re) || re.AcceptStat != rpc.ProgMismatch || re.Low != 3 || re.High != 4 {
		t.Fatalf("v2: %v", err)
	}
	if _, err := c.Call(nfs4.Program, nfs4.Version, 2, nil); !errors.As(err, &re) || re.AcceptStat != rpc.ProcUnavail {
		t.Fatalf("v4 proc 2: %v", err)
	}
	// minor version 0: MINOR_VERS_MISMATCH with no results
	body, err := c.Call(nfs4.Program, nfs4.Version, nfs4.ProcCompound, func(e *xdr.Encoder) {
		e.String("tag")
		e.Uint32(0)
		e.Uint32(1)
		e.Uint32(uint32(nfs4.OPPUTROOTFH))
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := nfs4.DecodeReply(body)
	if err != nil || r.Status != nfs4.NFS4ERR_MINOR_VERS_MISMATCH || r.NumOps != 0 {
		t.Fatalf("minor 0: %+v %v", r, err)
	}
	// truncated arguments: GARBAGE_ARGS
	_, err = c.Call(nfs4.Program, nfs4.Version, nfs4.ProcCompound, func(e *xdr.Encoder) {
		e.Uint32(0)
		e.Uint32(1)
		e.Uint32(1)
		e.Uint32(uint32(nfs4.OPPUTFH))
		e.Uint32(100)
	})
	if !errors.As(err, &re) || re.AcceptStat != rpc.GarbageArgs {
		t.Fatalf("truncated PUTFH: %v", err)
	}
}

func TestNFS4SessionRules(t *testing.T) {
	addr, _ := start(t)
	c := dial(t, addr)
	if r := compound(t, c, &nfs4.Request{Op: nfs4.OpSequence}); r.Status != nfs4.NFS4ERR_BADSESSION {
		t.Fatalf("unknown session: %s", nfs4.StatusString(r.Status))
	}
	r := compound(t, c, &nfs4.Request{Op: nfs4.OpCreateSession, ClientID: 77, CSSeq: 1})
	if r.Status != nfs4.NFS4ERR_STALE_CLIENTID {
		t.Fatalf("unknown client: %s", nfs4.StatusString(r.Status))
	}
	x := compound(t, c, &nfs4.Request{Op: nfs4.OpExchangeID, Owner: []byte("me")})
	if x.Status != nfs4.NFS4_OK || x.ExchangeID.SeqID != 1 {
		t.Fatalf("exchange_id: %+v", x)
	}
	cs := compound(t, c, &nfs4.Request{Op: nfs4.OpCreateSession, ClientID: x.ExchangeID.ClientID, CSSeq: 1,
		Fore: nfs4.ChannelAttrs{MaxRequestSize: 1 << 20, MaxResponseSize: 1 << 20, MaxOperations: 8, MaxRequests: 1000}})
	if cs.Status != nfs4.NFS4_OK || cs.CreateSession.Fore.MaxRequests != nullserver.DefaultSlots4 {
		t.Fatalf("create_session: %+v", cs.CreateSession)
	}
	sid := cs.CreateSession.SessionID
	seq := func(slot, id uint32) uint32 {
		return compound(t, c, &nfs4.Request{Op: nfs4.OpSequence, Seq: nfs4.SeqArgs{SessionID: sid, SeqID: id, Slot: slot}}).Status
	}
	for _, tc := range []struct{ slot, id, want uint32 }{
		{0, 1, nfs4.NFS4_OK}, {0, 1, nfs4.NFS4ERR_SEQ_MISORDERED}, {0, 3, nfs4.NFS4ERR_SEQ_MISORDERED},
		{0, 2, nfs4.NFS4_OK}, {5, 1, nfs4.NFS4_OK}, {64, 1, nfs4.NFS4ERR_BADSLOT},
	} {
		if st := seq(tc.slot, tc.id); st != tc.want {
			t.Errorf("slot %d seq %d: %s, want %s", tc.slot, tc.id, nfs4.StatusString(st), nfs4.StatusString(tc.want))
		}
	}
	// an operation without SEQUENCE
	if r := compound(t, c, &nfs4.Request{Op: nfs4.OpReclaimComplete, Seq: nfs4.SeqArgs{SessionID: sid, SeqID: 3}}); r.Status != nfs4.NFS4_OK {
		t.Errorf("reclaim_complete: %s", nfs4.StatusString(r.Status))
	}
	body, err := c.Call(nfs4.Program, nfs4.Version, nfs4.ProcCompound, func(e *xdr.Encoder) {
		e.Uint32(0)
		e.Uint32(1)
		e.Uint32(1)
		e.Uint32(uint32(nfs4.OPPUTROOTFH))
	})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := nfs4.DecodeReply(body); err != nil || r.Status != nfs4.NFS4ERR_OP_NOT_IN_SESSION {
		t.Errorf("PUTROOTFH alone: %s %v", nfs4.StatusString(r.Status), err)
	}
	if st := compound(t, c, &nfs4.Request{Op: nfs4.OpDestroyClientID, ClientID: x.ExchangeID.ClientID}).Status; st != nfs4.NFS4ERR_CLIENTID_BUSY {
		t.Errorf("destroy_clientid with a session: %s", nfs4.StatusString(st))
	}
	if st := compound(t, c, &nfs4.Request{Op: nfs4.OpDestroySession, Seq: nfs4.SeqArgs{SessionID: sid}}).Status; st != nfs4.NFS4_OK {
		t.Errorf("destroy_session: %s", nfs4.StatusString(st))
	}
	if st := seq(0, 3); st != nfs4.NFS4ERR_BADSESSION {
		t.Errorf("after destroy: %s", nfs4.StatusString(st))
	}
}

// TestNFS4EveryKind sends every COMPOUND kind through a session: each must
// come back NFS4_OK with the results the kind asks for.
func TestNFS4EveryKind(t *testing.T) {
	addr, _ := start(t)
	c := dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := nfs4.NewSession(ctx, c, nfs4.Options{})
	if err != nil {
		t.Fatal(err)
	}
	root, _, err := s.LookupPath(ctx, "export")
	if err != nil {
		t.Fatal(err)
	}
	fh, sid, _, err := s.Open(ctx, root, "f", true, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []nfs4.Request{
		{Op: nfs4.OpGetattr, FH: fh}, {Op: nfs4.OpSetattr, FH: fh, Mode: 0o600, SetSize: true, Size: 3},
		{Op: nfs4.OpLookup, FH: root, Name: "x"}, {Op: nfs4.OpAccess, FH: fh, Access: 0x3f},
		{Op: nfs4.OpReadlink, FH: fh}, {Op: nfs4.OpRead, FH: fh, Stateid: sid, Count: 5000},
		{Op: nfs4.OpWrite, FH: fh, Stateid: sid, Count: 7000}, {Op: nfs4.OpCommit, FH: fh},
		{Op: nfs4.OpOpen, FH: root, Name: "g"}, {Op: nfs4.OpClose, FH: fh, Stateid: sid},
		{Op: nfs4.OpMkdir, FH: root, Name: "d", Mode: 0o755}, {Op: nfs4.OpSymlink, FH: root, Name: "l", Target: "t"},
		{Op: nfs4.OpRemove, FH: root, Name: "f"}, {Op: nfs4.OpRename, FH: root, Name: "a", ToFH: root, ToName: "b"},
		{Op: nfs4.OpLink, FH: fh, ToFH: root, ToName: "h"}, {Op: nfs4.OpReaddir, FH: root},
		{Op: nfs4.OpSequence}, {Op: nfs4.OpReclaimComplete}, {Op: nfs4.OpLookupPath, Path: []string{"a", "b"}},
	}
	for i := range reqs {
		q := &reqs[i]
		r, err := s.Call(ctx, q)
		if err != nil || r.Status != nfs4.NFS4_OK {
			t.Fatalf("%s: %v %v", q.Op, err, r.Err())
		}
		checkKind(t, q, r)
	}
}

func checkKind(t *testing.T, q *nfs4.Request, r *nfs4.Reply) {
	t.Helper()
	bad := false
	switch q.Op {
	case nfs4.OpGetattr, nfs4.OpLookup, nfs4.OpLookupPath:
		bad = !r.HasAttr || r.Attr.Mask != and3(q, nfs4.DefaultAttrs)
	case nfs4.OpSetattr:
		bad = r.AttrSet != nfs4.MakeBitmap(nfs4.AttrSize, nfs4.AttrMode)
	case nfs4.OpRead:
		bad = r.Count != q.Count
	case nfs4.OpWrite:
		bad = r.Count != q.Count || r.Committed != nfs4.FileSync
	case nfs4.OpAccess:
		bad = r.Access != q.Access
	case nfs4.OpReadlink:
		bad = r.Target == ""
	case nfs4.OpOpen, nfs4.OpMkdir, nfs4.OpSymlink:
		bad = len(r.FH) != 16
	case nfs4.OpClose:
		bad = r.Stateid.Seqid != q.Stateid.Seqid+1
	case nfs4.OpReaddir:
		bad = len(r.Entries) != 3 || !r.EOF || r.Entries[0].Cookie != 3
	}
	if bad || !r.HasSeq || r.SeqStatus != nfs4.NFS4_OK {
		t.Errorf("%s: unexpected reply %+v", q.Op, r)
	}
}

func and3(q *nfs4.Request, def nfs4.Bitmap) nfs4.Bitmap {
	if !q.Attrs.IsZero() {
		return q.Attrs
	}
	return def
}
