package nfs4

import "workbench/loadgen/internal/xdr"

// cbProgram is the callback program number CREATE_SESSION names; no back
// channel is bound, so it is never called.
const cbProgram = 0x40000000

// encodeSessionOps appends EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION or
// DESTROY_CLIENTID (each alone in its COMPOUND) and returns 1; 0 for
// other kinds.
func (r *Request) encodeSessionOps(e *xdr.Encoder) uint32 {
	switch r.Op {
	case OpExchangeID:
		e.Uint32(uint32(OPEXCHANGE_ID))
		e.FixedOpaque(r.Verifier[:])
		e.Opaque(r.Owner)
		e.Uint32(0)       // eia_flags
		e.Uint32(SP4None) // eia_state_protect
		e.Uint32(0)       // eia_client_impl_id: none
	case OpCreateSession:
		e.Uint32(uint32(OPCREATE_SESSION))
		e.Uint64(r.ClientID)
		e.Uint32(r.CSSeq)
		e.Uint32(0) // csa_flags: not persistent, no back channel on this connection
		encodeChannelAttrs(e, &r.Fore)
		back := ChannelAttrs{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1}
		encodeChannelAttrs(e, &back)
		e.Uint32(cbProgram)
		e.Uint32(1) // csa_sec_parms: one entry,
		e.Uint32(0) // AUTH_NONE
	case OpDestroySession:
		e.Uint32(uint32(OPDESTROY_SESSION))
		e.FixedOpaque(r.Seq.SessionID[:])
	case OpDestroyClientID:
		e.Uint32(uint32(OPDESTROY_CLIENTID))
		e.Uint64(r.ClientID)
	default:
		return 0
	}
	return 1
}

func encodeChannelAttrs(e *xdr.Encoder, c *ChannelAttrs) {
	e.Uint32(c.HeaderPadSize)
	e.Uint32(c.MaxRequestSize)
	e.Uint32(c.MaxResponseSize)
	e.Uint32(c.MaxResponseSizeCached)
	e.Uint32(c.MaxOperations)
	e.Uint32(c.MaxRequests)
	e.Uint32(0) // ca_rdma_ird: none
}

func decodeChannelAttrs(d *xdr.Decoder, c *ChannelAttrs) {
	c.HeaderPadSize = d.Uint32()
	c.MaxRequestSize = d.Uint32()
	c.MaxResponseSize = d.Uint32()
	c.MaxResponseSizeCached = d.Uint32()
	c.MaxOperations = d.Uint32()
	c.MaxRequests = d.Uint32()
	switch n := d.Uint32(); n { // ca_rdma_ird<1>
	case 0:
	case 1:
		d.Uint32()
	default:
		d.Fail(errTooMany("ca_rdma_ird", n))
	}
}

// ExchangeIDRes is the EXCHANGE_ID4resok fstress keeps.
type ExchangeIDRes struct {
	ClientID     uint64
	SeqID        uint32 // eir_sequenceid: csa_sequence of the first CREATE_SESSION
	Flags        uint32
	StateProtect uint32
	ServerMinor  uint64
	ServerMajor  string
	ServerScope  string
	ImplDomain   string
	ImplName     string
}

// CreateSessionRes is the CREATE_SESSION4resok.
type CreateSessionRes struct {
	SessionID [SessionIDSize]byte
	SeqID     uint32
	Flags     uint32
	Fore      ChannelAttrs
	Back      ChannelAttrs
}

func decodeExchangeID(d *xdr.Decoder, x *ExchangeIDRes) {
	x.ClientID = d.Uint64()
	x.SeqID = d.Uint32()
	x.Flags = d.Uint32()
	x.StateProtect = d.Uint32()
	switch x.StateProtect {
	case SP4None:
	case SP4MachCred:
		DecodeBitmap(d) // spo_must_enforce
		DecodeBitmap(d) // spo_must_allow
	case SP4SSV:
		DecodeBitmap(d)
		DecodeBitmap(d)
		d.Skip(16) // hash alg, encr alg, ssv len, window
		n := d.Uint32()
		if n > 16 {
			d.Fail(errTooMany("spi_handles", n))
			return
		}
		for i := uint32(0); i < n && d.Err() == nil; i++ {
			d.OpaqueMax(OpaqueLimit)
		}
	default:
		d.Fail(errBadValue("state_protect_how", x.StateProtect))
		return
	}
	x.ServerMinor = d.Uint64()
	x.ServerMajor = string(d.OpaqueMax(OpaqueLimit))
	x.ServerScope = string(d.OpaqueMax(OpaqueLimit))
	switch n := d.Uint32(); n { // eir_server_impl_id<1>
	case 0:
	case 1:
		x.ImplDomain = string(d.OpaqueMax(OpaqueLimit))
		x.ImplName = string(d.OpaqueMax(OpaqueLimit))
		d.Skip(12) // nii_date
	default:
		d.Fail(errTooMany("eir_server_impl_id", n))
	}
}

func decodeCreateSession(d *xdr.Decoder, c *CreateSessionRes) {
	copy(c.SessionID[:], d.FixedOpaque(SessionIDSize))
	c.SeqID = d.Uint32()
	c.Flags = d.Uint32()
	decodeChannelAttrs(d, &c.Fore)
	decodeChannelAttrs(d, &c.Back)
}
