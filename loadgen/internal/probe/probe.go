// Package probe describes an existing NFSv3 server as a client sees it — the
// "sysinfo" of a filer that Workbench does not provision. `fstress probe`
// prints its Result as one JSON object.
//
// Run takes these steps, in order; a failure of steps 1–4 ends the probe
// with a one-line error:
//
//  1. the NFS port: given in Config.Server, or the portmapper's
//     GETPORT(100003, 3, TCP) (RFC 1833 §3.2);
//  2. the MOUNT port: Config.MountPort, or GETPORT(100005, 3, TCP);
//  3. MOUNT v3 MNT of the export for its root handle (a refusal names the
//     mountstat3, e.g. MNT3ERR_NOENT), then UMNT so the server forgets the
//     mount entry (RFC 1813 appendix I; the handle stays valid, a failed
//     UMNT is ignored);
//  4. on one TCP connection to NFS: FSINFO, FSSTAT and PATHCONF of the root
//     (RFC 1813 §3.3.19, §3.3.18, §3.3.20; a status other than NFS3_OK is an
//     error), then Config.Pings NULL calls one after another, each timed
//     from before it is handed to the RPC client until its reply is back
//     (so a few µs of the client's own RPC stack are included);
//  5. the portmapper's DUMP (RFC 1833 §3.1): its failure is recorded in
//     Result.RPCProgramsError, not fatal — a filer may hide its portmapper
//     when the ports are given.
//
// Time: every connect and every call waits at most Config.Timeout (no
// retransmission: TCP), and the whole probe at most Config.Budget().
//
// RTT statistics: min, max, median (the mean of the two middle values when
// n is even) and p90 (nearest rank: the ⌈0.9·n⌉-th smallest).
package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/rpc"
)

// Limits and defaults of Config.
const (
	DefaultPings   = 20
	MaxPings       = 1000
	DefaultTimeout = 5 * time.Second
	// steps bounds the connects and calls of a probe other than the pings:
	// 2 GETPORT, MOUNT connect + MNT + UMNT, NFS connect + FSINFO + FSSTAT +
	// PATHCONF, DUMP.
	steps = 10
)

// Where a port came from (Result.NFSPortFrom, Result.MountPortFrom).
const (
	FromGiven      = "given"
	FromPortmapper = "portmapper"
)

// Config says what to probe.
type Config struct {
	Server      string        // HOST or HOST:PORT of NFS; without a port, ask the portmapper
	Export      string        // path given to MOUNT MNT
	MountPort   int           // MOUNT v3 port; 0: ask the portmapper
	PortmapPort int           // the portmapper's port on the server host; 0: 111
	Pings       int           // NULL calls timed for Result.RTT, 1..MaxPings
	Timeout     time.Duration // per connect or call, > 0
	NFSVersion  string        // "3" or "" (NFSv3), "4.1" (no portmapper, no MOUNT; Export is the pseudo path)
}

// Check validates c; its errors name the command-line flag.
func (c *Config) Check() error {
	if _, _, err := SplitServer(c.Server); err != nil {
		return err
	}
	if c.NFSVersion != "" && c.NFSVersion != "3" && c.NFSVersion != "4.1" {
		return fmt.Errorf("--nfs-version must be 3 or 4.1 (got %q)", c.NFSVersion)
	}
	switch {
	case c.Export == "":
		return errors.New("--export PATH is required")
	case c.MountPort < 0 || c.MountPort > 65535:
		return fmt.Errorf("--mount-port %d out of range (0..65535)", c.MountPort)
	case c.PortmapPort < 0 || c.PortmapPort > 65535:
		return fmt.Errorf("--portmap-port %d out of range", c.PortmapPort)
	case c.Pings < 1 || c.Pings > MaxPings:
		return fmt.Errorf("--pings must be 1..%d (got %d)", MaxPings, c.Pings)
	case c.Timeout <= 0:
		return fmt.Errorf("--timeout must be > 0 (got %v)", c.Timeout)
	}
	return nil
}

// Budget is the time the whole probe may take: Timeout for each of its
// connects and calls.
func (c *Config) Budget() time.Duration {
	return c.Timeout * time.Duration(steps+c.Pings)
}

// SplitServer splits HOST[:PORT] (an IPv6 address in brackets when a port
// follows) into the host and the port, 0 when absent.
func SplitServer(s string) (host string, port int, err error) {
	if s == "" {
		return "", 0, errors.New("--server HOST[:PORT] is required")
	}
	bad := fmt.Errorf("bad --server %q: want HOST or HOST:PORT", s)
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || h == "" {
			return "", 0, bad
		}
		return h, n, nil
	}
	h := s
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	if h == "" || strings.ContainsAny(h, "[]/ \t") || (strings.Contains(h, ":") && net.ParseIP(h) == nil) {
		return "", 0, bad
	}
	return h, 0, nil
}

// Result is what a probe found; its JSON is the output of `fstress probe`.
type Result struct {
	Server           string    `json:"server"`      // host as given
	ServerAddr       string    `json:"server_addr"` // IP address the NFS connection went to
	Export           string    `json:"export"`
	NFSPort          int       `json:"nfs_port"`
	NFSPortFrom      string    `json:"nfs_port_from"` // FromGiven or FromPortmapper
	MountPort        int       `json:"mount_port"`
	MountPortFrom    string    `json:"mount_port_from"`
	RPCPrograms      []Program `json:"rpc_programs"` // never null; empty when the DUMP failed
	RPCProgramsError string    `json:"rpc_programs_error,omitempty"`
	FSInfo           FSInfo    `json:"fsinfo"`
	FSStat           FSStat    `json:"fsstat"`
	PathConf         PathConf  `json:"pathconf"`
	RTT              RTT       `json:"rtt_us"`

	// NFSVersion is "4.1" for an NFSv4.1 probe (absent for NFSv3), whose
	// session limits are in NFS4 (probe4.go).
	NFSVersion string    `json:"nfs_version,omitempty"`
	NFS4       *Session4 `json:"nfs4,omitempty"`
}

// Program is one portmapper registration.
type Program struct {
	Program  uint32 `json:"program"`
	Name     string `json:"name"` // nfs, mountd, nlockmgr, ...; "" when unknown
	Version  uint32 `json:"version"`
	Protocol string `json:"protocol"` // "tcp", "udp", else the IP protocol number
	Port     uint32 `json:"port"`
}

// FSInfo is FSINFO3resok (RFC 1813 §3.3.19); sizes in bytes.
type FSInfo struct {
	RTMax         uint32   `json:"rtmax"`
	RTPref        uint32   `json:"rtpref"`
	RTMult        uint32   `json:"rtmult"`
	WTMax         uint32   `json:"wtmax"`
	WTPref        uint32   `json:"wtpref"`
	WTMult        uint32   `json:"wtmult"`
	DTPref        uint32   `json:"dtpref"`
	MaxFileSize   uint64   `json:"maxfilesize"`
	TimeDeltaNs   uint64   `json:"time_delta_ns"`
	Properties    uint32   `json:"properties"`
	PropertyNames []string `json:"property_names"` // nfs3.PropertyNames; never null
}

// FSStat is FSSTAT3resok (RFC 1813 §3.3.18): bytes, file slots, seconds.
type FSStat struct {
	TBytes   uint64 `json:"tbytes"`
	FBytes   uint64 `json:"fbytes"`
	ABytes   uint64 `json:"abytes"`
	TFiles   uint64 `json:"tfiles"`
	FFiles   uint64 `json:"ffiles"`
	AFiles   uint64 `json:"afiles"`
	Invarsec uint32 `json:"invarsec"`
}

// PathConf is PATHCONF3resok (RFC 1813 §3.3.20).
type PathConf struct {
	LinkMax         uint32 `json:"linkmax"`
	NameMax         uint32 `json:"name_max"`
	NoTrunc         bool   `json:"no_trunc"`
	ChownRestricted bool   `json:"chown_restricted"`
	CaseInsensitive bool   `json:"case_insensitive"`
	CasePreserving  bool   `json:"case_preserving"`
}

// RTT summarises NULL round-trip times, in microseconds.
type RTT struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
}

// programNames names the programs an NFSv3 server usually registers.
var programNames = map[uint32]string{
	rpc.PmapProgram:   "portmapper",
	nfs3.Program:      "nfs",
	nfs3.MountProgram: "mountd",
	100011:            "rquotad",
	100021:            "nlockmgr",
	100024:            "status",
	100227:            "nfs_acl",
}

func protocolName(prot uint32) string {
	switch prot {
	case rpc.IPProtoTCP:
		return "tcp"
	case rpc.IPProtoUDP:
		return "udp"
	}
	return strconv.FormatUint(uint64(prot), 10)
}

// programs turns portmapper mappings into Programs, in the same order.
func programs(ms []rpc.Mapping) []Program {
	ps := make([]Program, 0, len(ms))
	for _, m := range ms {
		ps = append(ps, Program{Program: m.Prog, Name: programNames[m.Prog], Version: m.Vers,
			Protocol: protocolName(m.Prot), Port: m.Port})
	}
	return ps
}

// summarize computes the RTT statistics of rtts (which it sorts).
func summarize(rtts []time.Duration) RTT {
	n := len(rtts)
	if n == 0 {
		return RTT{}
	}
	slices.Sort(rtts)
	p90 := rtts[(9*n+9)/10-1] // ⌈0.9·n⌉-th smallest
	return RTT{N: n, Min: micros(rtts[0]), Median: micros(median(rtts)), P90: micros(p90), Max: micros(rtts[n-1])}
}

// micros is d in µs. d is whole ns, so one division gives the float nearest
// to the exact decimal (39.013, not 39.013000000000005 as sums of µs can).
func micros(d time.Duration) float64 { return float64(d) / 1e3 }

// prober carries one probe's state.
type prober struct {
	cfg     Config
	host    string
	nfsAddr string          // HOST:PORT of NFS, once known
	ctx     context.Context // ends at the probe's budget
	opt     rpc.Options
}

// Run probes the server; ctx may end it early (interrupt).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.PortmapPort == 0 {
		cfg.PortmapPort = rpc.PmapPort
	}
	host, nport, _ := SplitServer(cfg.Server)
	ctx, cancel := context.WithTimeout(ctx, cfg.Budget())
	defer cancel()
	p := &prober{cfg: cfg, host: host, ctx: ctx,
		opt: rpc.Options{Timeout: cfg.Timeout, MaxRetransmits: 0, Auth: rpc.HostAuthSys()}}
	res := &Result{Server: host, Export: cfg.Export, RPCPrograms: []Program{}}
	res.FSInfo.PropertyNames = []string{}
	if cfg.NFSVersion == "4.1" {
		return p.run4(res, nport)
	}

	var err error
	if res.NFSPort, res.NFSPortFrom, err = p.port(nport, nfs3.Program, "NFS"); err != nil {
		return nil, err
	}
	if res.MountPort, res.MountPortFrom, err = p.port(cfg.MountPort, nfs3.MountProgram, "MOUNT"); err != nil {
		return nil, err
	}
	root, err := p.mount(res.MountPort)
	if err != nil {
		return nil, err
	}
	if err := p.nfs(res, root); err != nil {
		return nil, err
	}
	p.dump(res)
	return res, nil
}

// step returns a context for one connect or call.
func (p *prober) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(p.ctx, p.cfg.Timeout)
}

// why turns a connect or call error into one line, naming timeouts.
// Prefixes "portmapper <addr>: " (package rpc) are left to the caller.
func (p *prober) why(err error) string {
	switch {
	case errors.Is(p.ctx.Err(), context.Canceled):
		return "interrupted"
	case errors.Is(p.ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("the probe ran out of its time budget (%v)", p.cfg.Budget())
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, rpc.ErrTimeout):
		return fmt.Sprintf("timed out after %v", p.cfg.Timeout)
	}
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(err.Error())
}

// pmapWhy is why without the "portmapper <addr>: " that package rpc puts
// before its portmapper errors (the caller names the portmapper).
func (p *prober) pmapWhy(err error) string {
	return strings.TrimPrefix(p.why(err), "portmapper "+p.addr(p.cfg.PortmapPort)+": ")
}

func (p *prober) addr(port int) string { return net.JoinHostPort(p.host, strconv.Itoa(port)) }

// port returns given, or asks the portmapper for the TCP port of version 3
// of prog (what names it in errors).
func (p *prober) port(given int, prog uint32, what string) (int, string, error) {
	if given != 0 {
		return given, FromGiven, nil
	}
	ctx, cancel := p.step()
	defer cancel()
	pm := p.addr(p.cfg.PortmapPort)
	port, err := rpc.GetPort(ctx, pm, prog, 3)
	if err != nil {
		return 0, "", fmt.Errorf("cannot get the %s v3 port from the portmapper at %s: %s", what, pm, p.pmapWhy(err))
	}
	return int(port), FromPortmapper, nil
}

// dial connects to port on the server host (what names the service).
func (p *prober) dial(port int, what string) (*rpc.Client, error) {
	ctx, cancel := p.step()
	defer cancel()
	c, err := rpc.DialContext(ctx, p.addr(port), p.opt)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to the %s service at %s: %s", what, p.addr(port), p.why(err))
	}
	return c, nil
}

// mount returns the export's root handle (MNT), then unmounts (UMNT).
func (p *prober) mount(port int) (nfs3.FH, error) {
	c, err := p.dial(port, "MOUNT")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ctx, cancel := p.step()
	root, err := nfs3.Mount(ctx, c, p.cfg.Export)
	cancel()
	var me *nfs3.MountError
	switch {
	case errors.As(err, &me):
		return nil, fmt.Errorf("MOUNT of export %q at %s refused: %s", me.Export, p.addr(port), nfs3.MountStatusString(me.Status))
	case err != nil:
		return nil, fmt.Errorf("MOUNT of export %q at %s: %s", p.cfg.Export, p.addr(port), p.why(err))
	}
	ctx, cancel = p.step()
	nfs3.Unmount(ctx, c, p.cfg.Export) // best effort: only the server's mount list
	cancel()
	return root, nil
}

// nfs fills FSInfo, FSStat, PathConf, RTT and ServerAddr over one NFS
// connection.
func (p *prober) nfs(res *Result, root nfs3.FH) error {
	p.nfsAddr = p.addr(res.NFSPort)
	c, err := p.dial(res.NFSPort, "NFS")
	if err != nil {
		return err
	}
	defer c.Close()
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		res.ServerAddr = ta.IP.String()
	}
	for _, proc := range []nfs3.Proc{nfs3.ProcFsinfo, nfs3.ProcFsstat, nfs3.ProcPathconf} {
		rep, err := p.call(c, nfs3.Request{Proc: proc, FH: root})
		if err != nil {
			return err
		}
		fill(res, proc, &rep)
	}
	rtts := make([]time.Duration, 0, p.cfg.Pings)
	for i := 0; i < p.cfg.Pings; i++ {
		ctx, cancel := p.step()
		t0 := time.Now()
		_, err := c.CallContext(ctx, nfs3.Program, nfs3.Version, uint32(nfs3.ProcNull), nil)
		rtt := time.Since(t0)
		cancel()
		if err != nil {
			return fmt.Errorf("NFS NULL %d of %d at %s: %s", i+1, p.cfg.Pings, p.nfsAddr, p.why(err))
		}
		rtts = append(rtts, rtt)
	}
	res.RTT = summarize(rtts)
	return nil
}

// call makes one NFS call on the export root; a status other than NFS3_OK
// is an error.
func (p *prober) call(c *rpc.Client, req nfs3.Request) (nfs3.Reply, error) {
	ctx, cancel := p.step()
	defer cancel()
	where := fmt.Sprintf("NFS %s of the root of %q at %s", strings.ToUpper(req.Proc.String()), p.cfg.Export, p.nfsAddr)
	body, err := c.CallContext(ctx, nfs3.Program, nfs3.Version, uint32(req.Proc), req.Encode)
	if err != nil {
		return nfs3.Reply{}, fmt.Errorf("%s: %s", where, p.why(err))
	}
	rep, err := nfs3.DecodeReply(req.Proc, body)
	if err != nil {
		return nfs3.Reply{}, fmt.Errorf("%s: %s", where, p.why(err))
	}
	if rep.Status != nfs3.NFS3_OK {
		return nfs3.Reply{}, fmt.Errorf("%s: %s", where, nfs3.StatusString(rep.Status))
	}
	return rep, nil
}

// fill copies the result of FSINFO, FSSTAT or PATHCONF into res.
func fill(res *Result, proc nfs3.Proc, rep *nfs3.Reply) {
	switch proc {
	case nfs3.ProcFsinfo:
		f := &rep.FSInfo
		res.FSInfo = FSInfo{RTMax: f.RTMax, RTPref: f.RTPref, RTMult: f.RTMult, WTMax: f.WTMax, WTPref: f.WTPref,
			WTMult: f.WTMult, DTPref: f.DTPref, MaxFileSize: f.MaxFileSize, TimeDeltaNs: f.TimeDelta,
			Properties: f.Properties, PropertyNames: nfs3.PropertyNames(f.Properties)}
	case nfs3.ProcFsstat:
		s := &rep.FSStat
		res.FSStat = FSStat{TBytes: s.TBytes, FBytes: s.FBytes, ABytes: s.ABytes, TFiles: s.TFiles,
			FFiles: s.FFiles, AFiles: s.AFiles, Invarsec: s.Invarsec}
	case nfs3.ProcPathconf:
		pc := &rep.PathConf
		res.PathConf = PathConf{LinkMax: pc.LinkMax, NameMax: pc.NameMax, NoTrunc: pc.NoTrunc,
			ChownRestricted: pc.ChownRestricted, CaseInsensitive: pc.CaseInsensitive, CasePreserving: pc.CasePreserving}
	}
}

// dump fills RPCPrograms from the portmapper's DUMP, or RPCProgramsError.
func (p *prober) dump(res *Result) {
	ctx, cancel := p.step()
	defer cancel()
	pm := p.addr(p.cfg.PortmapPort)
	ms, err := rpc.Dump(ctx, pm)
	if err != nil {
		res.RPCProgramsError = fmt.Sprintf("portmapper %s: %s", pm, p.pmapWhy(err))
		return
	}
	res.RPCPrograms = programs(ms)
}

// authSys is the AUTH_SYS credential of the probe: root on this host (the
// probe only reads file-system attributes, which root squashing allows).

func (r *Result) marshal() ([]byte, error) { return results.MarshalIndented(r, "probe result") }

// WriteJSON writes r as JSON to w.
func (r *Result) WriteJSON(w io.Writer) error {
	data, err := r.marshal()
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// WriteJSONFile writes r as JSON to path atomically (temporary file and
// rename).
func (r *Result) WriteJSONFile(path string) error {
	data, err := r.marshal()
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(path, data)
}
