package nfs4

import (
	"testing"

	"workbench/loadgen/internal/xdr"
)

// compoundReply encodes a COMPOUND4res of the given results (server half).
func compoundReply(tag string, status uint32, ops []Opnum, sts []uint32, r *Reply) []byte {
	var e xdr.Encoder
	at := BeginCompoundReply(&e, []byte(tag))
	for i, op := range ops {
		EncodeResult(&e, op, sts[i], r)
	}
	EndCompoundReply(&e, at, status, len(ops))
	return e.Bytes()
}

func TestPeekReply(t *testing.T) {
	r := &Reply{Seq: SeqRes{TargetHighestSlot: 41}, Attr: Attr{Size: 7}}
	ok := compoundReply("t1", NFS4_OK, []Opnum{OPSEQUENCE, OPPUTFH, OPGETATTR}, []uint32{0, 0, 0}, r)
	p, good := PeekReply(ok)
	if !good || p != (Peek{Status: NFS4_OK, HasSeq: true, TargetHighestSlot: 41}) {
		t.Fatalf("ok reply: %+v %v", p, good)
	}
	bad := compoundReply("", NFS4ERR_BADSESSION, []Opnum{OPSEQUENCE}, []uint32{NFS4ERR_BADSESSION}, r)
	if p, good = PeekReply(bad); !good || p.Status != NFS4ERR_BADSESSION || !p.HasSeq || p.SeqStatus != NFS4ERR_BADSESSION {
		t.Fatalf("BADSESSION reply: %+v %v", p, good)
	}
	rep := p.Reply()
	if rep.SeqStatus != NFS4ERR_BADSESSION || !rep.HasSeq {
		t.Fatalf("Reply(): %+v", rep)
	}
	noSeq := compoundReply("", NFS4ERR_OP_ILLEGAL, []Opnum{OPILLEGAL}, []uint32{NFS4ERR_OP_ILLEGAL}, r)
	if p, good = PeekReply(noSeq); !good || p.HasSeq || p.Status != NFS4ERR_OP_ILLEGAL {
		t.Fatalf("reply without SEQUENCE: %+v %v", p, good)
	}
	for n := 0; n < len(ok); n++ { // every truncation is refused or read without running past it
		if p, good := PeekReply(ok[:n]); good && p.HasSeq && p.SeqStatus == NFS4_OK && p.TargetHighestSlot != 41 {
			t.Fatalf("truncated to %d: %+v", n, p)
		}
	}
}

func TestOpenCloseEncoding(t *testing.T) {
	q := &Request{Op: OpOpenClose, FH: FH("dir"), Name: "f", Create: true, Mode: 0o644, Owner: []byte("o")}
	var e xdr.Encoder
	q.Encode(&e)
	var d xdr.Decoder
	d.Reset(e.Bytes())
	_, minor, nops := DecodeCompoundHeader(&d)
	if minor != MinorVersion || nops != 5 {
		t.Fatalf("minor %d, %d ops", minor, nops)
	}
	want := []Opnum{OPSEQUENCE, OPPUTFH, OPOPEN, OPGETFH, OPCLOSE}
	var a OpArgs
	for i, op := range want {
		if !DecodeOpArgs(&d, &a) || a.Op != op {
			t.Fatalf("op %d: %v, want %v (%v)", i, a.Op, op, d.Err())
		}
	}
	if a.Stateid != CurrentStateid || d.Remaining() != 0 {
		t.Fatalf("CLOSE stateid %+v, %d bytes left", a.Stateid, d.Remaining())
	}
}
