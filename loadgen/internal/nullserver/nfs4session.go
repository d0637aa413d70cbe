package nullserver

import (
	"encoding/binary"

	"workbench/loadgen/internal/nfs4"
)

// sessionOp executes EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION and
// DESTROY_CLIENTID against the server-wide state. Every EXCHANGE_ID gets a
// new client id.
func (s *Server) sessionOp(c *conn4, a *nfs4.OpArgs) uint32 {
	v := &s.v4
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.clients == nil {
		v.clients = map[uint64]*v4Client{}
		v.sessions = map[[nfs4.SessionIDSize]byte]*v4Session{}
	}
	r := &c.rep
	switch a.Op {
	case nfs4.OPEXCHANGE_ID:
		v.nextID++
		v.clients[v.nextID] = &v4Client{seq: 1}
		r.ExchangeID = nfs4.ExchangeIDRes{ClientID: v.nextID, SeqID: 1, Flags: nfs4.ExchgidUseNonPNFS,
			ServerMajor: "fstress-nullserver", ServerScope: "fstress-nullserver",
			ImplDomain: "workbench", ImplName: "fstress nullserver"}
	case nfs4.OPCREATE_SESSION:
		return s.createSession(c, a)
	case nfs4.OPDESTROY_SESSION:
		ss := v.sessions[a.Seq.SessionID]
		if ss == nil {
			return nfs4.NFS4ERR_BADSESSION
		}
		ss.dead.Store(true)
		delete(v.sessions, a.Seq.SessionID)
	case nfs4.OPDESTROY_CLIENTID:
		if v.clients[a.ClientID] == nil {
			return nfs4.NFS4ERR_STALE_CLIENTID
		}
		for _, ss := range v.sessions {
			if ss.client == a.ClientID {
				return nfs4.NFS4ERR_CLIENTID_BUSY
			}
		}
		delete(v.clients, a.ClientID)
	}
	return nfs4.NFS4_OK
}

// createSession (v.mu held) checks the client id and csa_sequence and
// grants a fore channel of at most Slots4 (DefaultSlots4) slots.
func (s *Server) createSession(c *conn4, a *nfs4.OpArgs) uint32 {
	v := &s.v4
	cl := v.clients[a.ClientID]
	if cl == nil {
		return nfs4.NFS4ERR_STALE_CLIENTID
	}
	if a.CSSeq != cl.seq {
		return nfs4.NFS4ERR_SEQ_MISORDERED
	}
	cl.seq++
	slots := s.Slots4
	if slots == 0 {
		slots = DefaultSlots4
	}
	fore := a.Fore
	fore.MaxRequests = max(1, min(fore.MaxRequests, slots))
	fore.MaxResponseSizeCached = min(fore.MaxResponseSizeCached, 64<<10)
	fore.MaxRequestSize = min(fore.MaxRequestSize, maxRead+64<<10)
	fore.MaxResponseSize = min(fore.MaxResponseSize, maxRead+64<<10)
	fore.HeaderPadSize = 0
	v.nextID++
	ss := &v4Session{client: a.ClientID, slots: make([]uint32, fore.MaxRequests)}
	copy(ss.id[:8], "nullsess")
	binary.BigEndian.PutUint64(ss.id[8:], v.nextID)
	v.sessions[ss.id] = ss
	c.rep.CreateSession = nfs4.CreateSessionRes{SessionID: ss.id, SeqID: a.CSSeq, Fore: fore,
		Back: nfs4.ChannelAttrs{MaxRequestSize: 4096, MaxResponseSize: 4096, MaxOperations: 2, MaxRequests: 1}}
	return nfs4.NFS4_OK
}
