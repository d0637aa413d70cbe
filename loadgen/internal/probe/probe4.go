package probe

import (
	"context"
	"fmt"
	"net"
	"time"

	"workbench/loadgen/internal/nfs4"
)

// NFSv4.1 probe (Config.NFSVersion "4.1"): no portmapper and no MOUNT.
// NULL pings on the NFS port (2049 unless given), then a session
// (EXCHANGE_ID, CREATE_SESSION asking nfs4.MaxSlots slots, 64 MiB requests
// and replies and 1024 operations, RECLAIM_COMPLETE): the server's answer is
// its session limits (Result.NFS4). A LOOKUP of the pseudo path with the
// root's lease time and max read/write/file size, then DESTROY_SESSION and
// DESTROY_CLIENTID.

// Session4 is what the server granted an NFSv4.1 session, and who it is.
type Session4 struct {
	MaxSlots              uint32 `json:"max_slots"` // ca_maxrequests granted (asked: nfs4.MaxSlots)
	MaxRequestSize        uint32 `json:"max_request_size"`
	MaxResponseSize       uint32 `json:"max_response_size"`
	MaxResponseSizeCached uint32 `json:"max_response_size_cached"`
	MaxOperations         uint32 `json:"max_operations"`
	LeaseTimeS            uint32 `json:"lease_time_s"`
	ServerOwner           string `json:"server_owner"` // so_major_id
	ServerScope           string `json:"server_scope"`
	ImplDomain            string `json:"impl_domain,omitempty"`
	ImplName              string `json:"impl_name,omitempty"`
}

// What the probe asks, so that the server's answer is its limit.
const (
	askSize = 64 << 20 // ca_maxrequestsize, ca_maxresponsesize
	askOps  = 1024     // ca_maxoperations
)

// FromDefault: the NFSv4.1 port was not given (2049).
const FromDefault = "default"

// run4 is Run for NFSv4.1.
func (p *prober) run4(res *Result, nport int) (*Result, error) {
	res.NFSVersion, res.NFSPort, res.NFSPortFrom = "4.1", nport, FromGiven
	if nport == 0 {
		res.NFSPort, res.NFSPortFrom = 2049, FromDefault
	}
	res.MountPortFrom = "none"
	res.RPCProgramsError = "not asked: NFSv4.1 needs no portmapper"
	p.nfsAddr = p.addr(res.NFSPort)
	c, err := p.dial(res.NFSPort, "NFS")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		res.ServerAddr = ta.IP.String()
	}
	rtts := make([]time.Duration, 0, p.cfg.Pings)
	for i := 0; i < p.cfg.Pings; i++ {
		ctx, cancel := p.step()
		t0 := time.Now()
		_, err := c.CallContext(ctx, nfs4.Program, nfs4.Version, nfs4.ProcNull, nil)
		rtt := time.Since(t0)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("NFSv4 NULL %d of %d at %s: %s", i+1, p.cfg.Pings, p.nfsAddr, p.why(err))
		}
		rtts = append(rtts, rtt)
	}
	res.RTT = summarize(rtts)
	ctx, cancel := p.step()
	defer cancel()
	s, err := nfs4.NewSession(ctx, c, nfs4.Options{Slots: nfs4.MaxSlots, MaxRequestSize: askSize,
		MaxResponseSize: askSize, MaxOperations: askOps})
	if err != nil {
		return nil, fmt.Errorf("NFSv4.1 session with %s: %s", p.nfsAddr, p.why(err))
	}
	defer s.Close(ctx)
	fore, x := s.Fore(), s.ExchangeID()
	res.NFS4 = &Session4{MaxSlots: fore.MaxRequests, MaxRequestSize: fore.MaxRequestSize,
		MaxResponseSize: fore.MaxResponseSize, MaxResponseSizeCached: fore.MaxResponseSizeCached,
		MaxOperations: fore.MaxOperations, LeaseTimeS: uint32(s.Lease() / time.Second),
		ServerOwner: x.ServerMajor, ServerScope: x.ServerScope, ImplDomain: x.ImplDomain, ImplName: x.ImplName}
	return res, p.root4(ctx, s, res)
}

// root4 looks the pseudo path up and fills FSInfo's sizes from its
// attributes (max read, write and file size).
func (p *prober) root4(ctx context.Context, s *nfs4.Session, res *Result) error {
	r, err := s.Call(ctx, &nfs4.Request{Op: nfs4.OpLookupPath, Path: nfs4.SplitPath(p.cfg.Export),
		Attrs: nfs4.MakeBitmap(nfs4.AttrType, nfs4.AttrMaxFileSize, nfs4.AttrMaxRead, nfs4.AttrMaxWrite)})
	if err == nil {
		err = r.Err()
	}
	if err != nil {
		return fmt.Errorf("LOOKUP of the pseudo path %q at %s: %s", p.cfg.Export, p.nfsAddr, p.why(err))
	}
	a := &r.Attr
	res.FSInfo.RTMax, res.FSInfo.WTMax = uint32(min(a.MaxRead, 1<<31)), uint32(min(a.MaxWrite, 1<<31))
	res.FSInfo.MaxFileSize = a.MaxFileSize
	return nil
}
