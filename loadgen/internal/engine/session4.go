package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/rpc"
)

// NFSv4.1 (RFC 8881) beside NFSv3: no portmapper and no MOUNT; the
// connections go to the NFS port (DefaultNFS4Port when --server gives port
// 0), one session (EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE) is shared
// by all of them (SP4_NONE: a SEQUENCE on a new connection binds it), and
// the export is the pseudo path, looked up from PUTROOTFH.

// NFSVersion41 selects NFSv4.1 (ConnConfig.NFSVersion).
const NFSVersion41 = "4.1"

// DefaultNFS4Port is the NFS port an NFSv4.1 server listens on (RFC 8881 §2.9.3).
const DefaultNFS4Port = "2049"

// setupTimeout bounds the session set-up and tear-down calls.
const setupTimeout = 10 * time.Second

// V41 reports whether c selects NFSv4.1.
func (c *ConnConfig) V41() bool { return c.NFSVersion == NFSVersion41 }

// CheckNFSVersion accepts "3" and "4.1" (the --nfs-version values).
func CheckNFSVersion(v string) error {
	if v != "3" && v != NFSVersion41 {
		return fmt.Errorf("--nfs-version must be 3 or 4.1 (got %q)", v)
	}
	return nil
}

// NFS4Addr is server (HOST:PORT) with PORT 0 replaced by 2049.
func NFS4Addr(server string) (string, error) {
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		return "", fmt.Errorf("bad --server %q: want HOST:PORT", server)
	}
	if port == "0" {
		port = DefaultNFS4Port
	}
	return net.JoinHostPort(host, port), nil
}

// connect4 dials cfg.Conns connections, sets up the session on the first
// and looks the export (pseudo path) up; a goroutine keeps the lease.
func connect4(ctx context.Context, cfg ConnConfig) (*Session, error) {
	var err error
	if cfg.Server, err = NFS4Addr(cfg.Server); err != nil {
		return nil, err
	}
	opt := rpc.Options{Timeout: cfg.Timeout, MaxRetransmits: cfg.Retransmits, Auth: rpc.HostAuthSys()}
	s := &Session{Cfg: cfg}
	for i := 0; i < cfg.Conns; i++ {
		c, err := rpc.Dial(cfg.Server, opt)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("cannot connect to the NFS service at %s: %v", cfg.Server, oneLine(err))
		}
		s.Clients = append(s.Clients, c)
	}
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	if _, err := s.Clients[0].CallContext(sctx, nfs4.Program, nfs4.Version, nfs4.ProcNull, nil); err != nil {
		s.Close()
		return nil, fmt.Errorf("NFS service at %s does not answer NFSv4 NULL: %v", cfg.Server, oneLine(err))
	}
	v4, err := nfs4.NewSession(sctx, s.Clients[0], nfs4.Options{Slots: nfs4.MaxSlots})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("NFSv4.1 session with %s: %v", cfg.Server, oneLine(err))
	}
	s.V4 = v4
	root, _, err := v4.LookupPath(sctx, cfg.Export)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("cannot look up the pseudo path %q at %s: %v", cfg.Export, cfg.Server, oneLine(err))
	}
	s.Root = nfs3.FH(root)
	kctx, stop := context.WithCancel(context.Background())
	go v4.KeepAlive(kctx)
	s.stopV4 = stop
	return s, nil
}

// close4 ends the lease keep-alive and destroys the session and client id.
func (s *Session) close4() {
	if s.V4 == nil {
		return
	}
	if s.stopV4 != nil {
		s.stopV4()
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	s.V4.Close(ctx)
	s.V4 = nil
}

// statusString names an NFS status of the session's version.
func (s *Session) statusString(st uint32) string {
	if s.Cfg.V41() {
		return nfs4.StatusString(st)
	}
	return nfs3.StatusString(st)
}

// client returns connection i (under mu: a run may replace it).
func (s *Session) client(i int) *rpc.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Clients[i%len(s.Clients)]
}

// setClient replaces connection i (after a reconnect).
func (s *Session) setClient(i int, c *rpc.Client) {
	s.mu.Lock()
	s.Clients[i] = c
	s.mu.Unlock()
	if i == 0 && s.V4 != nil {
		s.V4.SetClient(c)
	}
}

// errSessionLost: a set-up call found the session gone.
var errSessionLost = errors.New("NFSv4.1 session lost (NFS4ERR_BADSESSION)")
