package nfs4

import (
	"encoding/binary"
	"fmt"

	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/xdr"
)

// Peek is what a load generator needs of a COMPOUND reply without decoding
// it: the COMPOUND status and the SEQUENCE result that ends the call's slot.
type Peek struct {
	Status            uint32
	HasSeq            bool
	SeqStatus         uint32
	TargetHighestSlot uint32
}

// PeekReply reads the status, tag, result count and the first result's
// SEQUENCE status (with sr_target_highest_slotid when it succeeded) of a
// COMPOUND4res. ok is false when the body is too short for what it reads.
func PeekReply(body []byte) (p Peek, ok bool) {
	if len(body) < 8 {
		return p, false
	}
	p.Status = binary.BigEndian.Uint32(body)
	tag := uint64(binary.BigEndian.Uint32(body[4:]))
	off := 8 + (tag+3)&^3
	if uint64(len(body)) < off+12 {
		return p, uint64(len(body)) >= off+4 // no result at all
	}
	b := body[off:]
	if binary.BigEndian.Uint32(b) == 0 || Opnum(binary.BigEndian.Uint32(b[4:])) != OPSEQUENCE {
		return p, true
	}
	p.HasSeq, p.SeqStatus = true, binary.BigEndian.Uint32(b[8:])
	if p.SeqStatus == NFS4_OK {
		// sessionid(16) sequenceid slotid highest_slotid target_highest_slotid
		const at = 12 + SessionIDSize + 12
		if len(b) < at+4 {
			return p, false
		}
		p.TargetHighestSlot = binary.BigEndian.Uint32(b[at:])
	}
	return p, true
}

// Reply returns the minimal Reply Session.End needs.
func (p *Peek) Reply() Reply {
	return Reply{Status: p.Status, HasSeq: p.HasSeq, SeqStatus: p.SeqStatus,
		Seq: SeqRes{TargetHighestSlot: p.TargetHighestSlot}}
}

// DecodeReadReply decodes a COMPOUND reply like DecodeReplyInto and also
// returns a copy of the data of its READ result (nil when none).
func DecodeReadReply(body []byte) (*Reply, []byte, error) {
	r := new(Reply)
	if err := DecodeReplyInto(body, r); err != nil {
		return nil, nil, err
	}
	if r.Status != NFS4_OK || r.NumOps == 0 || r.Op != OPREAD {
		return r, nil, nil
	}
	// the READ result is the last: find it by walking the results again
	var d xdr.Decoder
	d.Reset(body)
	d.Uint32()
	d.OpaqueMax(MaxTagLen)
	n := d.Uint32()
	var scratch Reply
	for i := uint32(0); i < n && d.Err() == nil; i++ {
		op := Opnum(d.Uint32())
		d.Uint32()
		if op == OPREAD {
			d.Bool()
			data := d.OpaqueMax(1 << 24)
			if d.Err() != nil {
				break
			}
			return r, append([]byte(nil), data...), nil
		}
		scratch.decodeResult(&d, op)
	}
	return nil, nil, fmt.Errorf("%w: READ data", ErrMalformed)
}

// SetClient moves the session's synchronous calls (Call, Recover, Close)
// to c, e.g. after the connection was re-established.
func (s *Session) SetClient(c *rpc.Client) {
	s.mu.Lock()
	s.c = c
	s.mu.Unlock()
}
