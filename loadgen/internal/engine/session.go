package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/xdr"
)

// ConnConfig says how to reach the NFS server.
type ConnConfig struct {
	Server      string        // HOST:PORT of the NFS service
	MountPort   int           // MOUNT v3 port; 0 → ask the portmapper on the server host
	Export      string        // export path
	Conns       int           // TCP connections for the run (default 1)
	Timeout     time.Duration // per-attempt RPC timeout (default 5s)
	Retransmits int           // retransmits before a call counts as a timeout (default 1)
	NFSVersion  string        // "3" or "" (NFSv3, MOUNT), NFSVersion41 (no MOUNT; Export is the pseudo path)
}

func (c *ConnConfig) defaults() {
	if c.Conns < 1 {
		c.Conns = 1
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.Retransmits < 0 {
		c.Retransmits = 0
	}
}

// Session is a mounted export: the root handle and the NFS connections.
type Session struct {
	Cfg     ConnConfig
	Root    nfs3.FH
	Clients []*rpc.Client

	V4     *nfs4.Session // the NFSv4.1 session (nil for NFSv3)
	stopV4 func()        // ends the lease keep-alive
	mu     sync.Mutex    // guards Clients while a run replaces lost connections
}

// askPortmapper returns the TCP port the portmapper on host (port 111) has for prog/vers.
func askPortmapper(ctx context.Context, host string, prog, vers uint32, what string) (int, error) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p, err := rpc.GetPort(gctx, net.JoinHostPort(host, "111"), prog, vers)
	if err != nil {
		return 0, fmt.Errorf("cannot ask the portmapper at %s:111 for the %s port: %v", host, what, oneLine(err))
	}
	if p == 0 {
		return 0, fmt.Errorf("portmapper at %s:111 has no %s registration", host, what)
	}
	return int(p), nil
}

// NFSAddr is server (HOST:PORT) with PORT 0 replaced by the NFS v3 port the
// portmapper on HOST gives (an external server whose port the user left to
// its portmapper).
func NFSAddr(ctx context.Context, server string) (string, error) {
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		return "", fmt.Errorf("bad --server %q: want HOST:PORT", server)
	}
	if port != "0" {
		return server, nil
	}
	p, err := askPortmapper(ctx, host, nfs3.Program, nfs3.Version, "NFS v3")
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// Connect mounts the export and dials cfg.Conns NFS connections. Errors are
// one-line and name the problem (unreachable server, wrong export, ...).
func Connect(ctx context.Context, cfg ConnConfig) (*Session, error) {
	cfg.defaults()
	if cfg.V41() {
		return connect4(ctx, cfg)
	}
	host, _, err := net.SplitHostPort(cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("bad --server %q: want HOST:PORT", cfg.Server)
	}
	opt := rpc.Options{Timeout: cfg.Timeout, MaxRetransmits: cfg.Retransmits, Auth: rpc.HostAuthSys()}
	if cfg.Server, err = NFSAddr(ctx, cfg.Server); err != nil {
		return nil, err
	}
	mport := cfg.MountPort
	if mport == 0 {
		if mport, err = askPortmapper(ctx, host, nfs3.MountProgram, nfs3.MountVersion, "MOUNT v3"); err != nil {
			return nil, err
		}
	}
	maddr := net.JoinHostPort(host, strconv.Itoa(mport))
	mopt := opt
	mopt.Timeout = 5 * time.Second
	mc, err := rpc.Dial(maddr, mopt)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to the MOUNT service at %s: %v", maddr, oneLine(err))
	}
	mctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	root, err := nfs3.Mount(mctx, mc, cfg.Export)
	cancel()
	mc.Close()
	if err != nil {
		hint := ""
		if strings.Contains(err.Error(), "MNT3ERR_ACCES") || strings.Contains(err.Error(), "MNT3ERR_NOENT") {
			hint = " (wrong export? NFS-Ganesha serves NFSv3 MNT by the export's Path unless NFS_CORE_PARAM { mount_path_pseudo = true })"
		}
		return nil, fmt.Errorf("cannot mount export %q from %s: %v%s", cfg.Export, maddr, oneLine(err), hint)
	}
	s := &Session{Cfg: cfg, Root: root}
	for i := 0; i < cfg.Conns; i++ {
		c, err := rpc.Dial(cfg.Server, opt)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("cannot connect to the NFS service at %s: %v", cfg.Server, oneLine(err))
		}
		s.Clients = append(s.Clients, c)
	}
	// A NULL call proves the NFS service answers.
	if _, err := s.Clients[0].Call(nfs3.Program, nfs3.Version, uint32(nfs3.ProcNull), func(*xdr.Encoder) {}); err != nil {
		s.Close()
		return nil, fmt.Errorf("NFS service at %s does not answer NULL: %v", cfg.Server, oneLine(err))
	}
	return s, nil
}

// Alive reports whether every connection of the session is still open
// (an agent reuses a session between trials only then).
func (s *Session) Alive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.Clients) == 0 {
		return false
	}
	for _, c := range s.Clients {
		select {
		case <-c.Done():
			return false
		default:
		}
	}
	return true
}

// Close closes every connection (NFSv4.1: after DESTROY_SESSION and
// DESTROY_CLIENTID).
func (s *Session) Close() {
	s.close4()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.Clients {
		c.Close()
	}
	s.Clients = nil
}

func oneLine(err error) string {
	b := []byte(err.Error())
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}

// ---- pipelined setup calls (file-set build and lookup) ----

// pipe runs NFS calls with up to window outstanding, spread over the
// session's connections. Callbacks run on the RPC reader goroutines; they
// must only touch state guarded by p.mu (held while they run).
type pipe struct {
	s        *Session
	keepOpen bool                    // NFSv4.1: CREATE keeps the file open (opened) for WRITE
	opened   map[string]nfs4.Stateid // NFSv4.1: handle → open stateid (under mu)
	sem      chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	n        int
	err      error
	calls    int64
}

func newPipe(s *Session, window int) *pipe {
	return &pipe{s: s, sem: make(chan struct{}, window)}
}

// call sends req; done gets the decoded reply (FH copied) under p.mu.
// A transport error or malformed reply records the first error of the pipe.
func (p *pipe) call(req nfs3.Request, done func(rep *nfs3.Reply)) {
	if p.s.V4 != nil {
		p.call4(req, done)
		return
	}
	p.sem <- struct{}{}
	p.wg.Add(1)
	p.mu.Lock()
	c := p.s.Clients[p.n%len(p.s.Clients)]
	p.n++
	p.calls++
	p.mu.Unlock()
	r := req
	err := c.Go(nfs3.Program, nfs3.Version, uint32(r.Proc), r.Encode, func(body []byte, err error) {
		defer func() { <-p.sem; p.wg.Done() }()
		var rep nfs3.Reply
		if err == nil {
			rep, err = nfs3.DecodeReply(r.Proc, body)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			if p.err == nil {
				p.err = fmt.Errorf("%s %s: %v", r.Proc, r.Name, oneLine(err))
			}
			return
		}
		if rep.FH != nil {
			rep.FH = append(nfs3.FH(nil), rep.FH...)
		}
		if done != nil {
			done(&rep)
		}
	})
	if err != nil {
		<-p.sem
		p.wg.Done()
		p.mu.Lock()
		if p.err == nil {
			p.err = fmt.Errorf("%s %s: %v", r.Proc, r.Name, oneLine(err))
		}
		p.mu.Unlock()
	}
}

// wait waits for every call so far and returns the first error.
func (p *pipe) wait() error {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// fail records an error (under p.mu, i.e. from a callback).
func (p *pipe) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

var errStop = errors.New("stopped")
