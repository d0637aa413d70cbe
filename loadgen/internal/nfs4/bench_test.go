package nfs4

import (
	"testing"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/xdr"
)

// BenchmarkGetattrV4 and BenchmarkGetattrV3: client-side encode + reply
// decode of one GETATTR, to compare the codec cost of the two versions.
func BenchmarkGetattrV4(b *testing.B) {
	body := validReplies()[1]
	q := Request{Op: OpGetattr, FH: FH(fh8), Seq: seqArgs()}
	e := xdr.NewEncoder(512)
	var r Reply
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.Reset()
		q.Encode(e)
		DecodeReplyInto(body, &r)
	}
}

func BenchmarkGetattrV3(b *testing.B) {
	a := nfs3.Attr{Type: 1, Size: 9}
	e := xdr.NewEncoder(512)
	nfs3.EncodeReply(nfs3.ProcGetattr, &nfs3.Reply{Attr: &a}, e)
	body := append([]byte(nil), e.Bytes()...)
	q := nfs3.Request{Proc: nfs3.ProcGetattr, FH: nfs3.FH(fh8)}
	var r nfs3.Reply
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.Reset()
		q.Encode(e)
		nfs3.DecodeReplyInto(nfs3.ProcGetattr, body, &r)
	}
}

// BenchmarkSlots: Begin + End on a session's slot table.
func BenchmarkSlots(b *testing.B) {
	s := &Session{slots: newSlotTable(64), gen: 1}
	r := &Reply{HasSeq: true, Seq: SeqRes{TargetHighestSlot: 63}}
	q := Request{Op: OpGetattr}
	for i := 0; i < b.N; i++ {
		s.Begin(&q)
		s.End(&q, r)
	}
}
