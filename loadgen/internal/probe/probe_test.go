package probe

import (
	"context"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/rpc"
)

// startServer serves s on an ephemeral loopback port and returns the port.
func startServer(t *testing.T, s *nullserver.Server) int {
	t.Helper()
	addr, stop, err := s.ServeLoopback()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return addr.Port
}

// deadPort is a loopback port nothing listens on.
func deadPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

func TestSplitServer(t *testing.T) {
	good := []struct {
		in   string
		host string
		port int
	}{
		{"filer", "filer", 0},
		{"filer:2049", "filer", 2049},
		{"10.0.0.5", "10.0.0.5", 0},
		{"10.0.0.5:20490", "10.0.0.5", 20490},
		{"fd00::5", "fd00::5", 0},
		{"[fd00::5]", "fd00::5", 0},
		{"[fd00::5]:2049", "fd00::5", 2049},
	}
	for _, c := range good {
		h, p, err := SplitServer(c.in)
		if err != nil || h != c.host || p != c.port {
			t.Errorf("SplitServer(%q) = %q %d %v, want %q %d", c.in, h, p, err, c.host, c.port)
		}
	}
	for _, in := range []string{"", "filer:", "filer:0", "filer:65536", "filer:nfs", ":2049", "[]", "a b", "fd00::zz", "[fd00::5"} {
		if h, p, err := SplitServer(in); err == nil {
			t.Errorf("SplitServer(%q) = %q %d, want an error", in, h, p)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	ok := Config{Server: "filer", Export: "/x", Pings: 1, Timeout: time.Second}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Config){
		"--server":       func(c *Config) { c.Server = "" },
		"--export":       func(c *Config) { c.Export = "" },
		"--mount-port":   func(c *Config) { c.MountPort = 65536 },
		"--portmap-port": func(c *Config) { c.PortmapPort = -1 },
		"--pings must":   func(c *Config) { c.Pings = MaxPings + 1 },
		"--pings":        func(c *Config) { c.Pings = 0 },
		"--timeout":      func(c *Config) { c.Timeout = 0 },
	}
	for want, mod := range bad {
		c := ok
		mod(&c)
		if err := c.Check(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
	if c := (Config{Pings: 20, Timeout: 5 * time.Second}); c.Budget() != 150*time.Second {
		t.Errorf("budget %v", c.Budget())
	}
}

func TestSummarize(t *testing.T) {
	us := func(v ...float64) []time.Duration {
		var ds []time.Duration
		for _, x := range v {
			ds = append(ds, time.Duration(x*1e3))
		}
		return ds
	}
	cases := []struct {
		in   []time.Duration
		want RTT
	}{
		{nil, RTT{}},
		{us(7), RTT{N: 1, Min: 7, Median: 7, P90: 7, Max: 7}},
		{us(40, 10, 30, 20), RTT{N: 4, Min: 10, Median: 25, P90: 40, Max: 40}},
		// n = 10: p90 is the 9th smallest; the median the mean of the 5th and 6th.
		{us(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), RTT{N: 10, Min: 1, Median: 5.5, P90: 9, Max: 10}},
		// n = 11: p90 is the ⌈9.9⌉ = 10th smallest.
		{us(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), RTT{N: 11, Min: 1, Median: 6, P90: 10, Max: 11}},
		// Nanosecond values give exact decimal microseconds.
		{[]time.Duration{39013, 39014}, RTT{N: 2, Min: 39.013, Median: 39.013, P90: 39.014, Max: 39.014}},
	}
	for _, c := range cases {
		if got := summarize(c.in); got != c.want {
			t.Errorf("summarize(%v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestPrograms(t *testing.T) {
	m := func(prog, vers, prot, port uint32) rpc.Mapping {
		return rpc.Mapping{Prog: prog, Vers: vers, Prot: prot, Port: port}
	}
	ms := []rpc.Mapping{
		m(100000, 2, rpc.IPProtoUDP, 111), m(100003, 3, rpc.IPProtoTCP, 2049), m(100005, 1, rpc.IPProtoTCP, 20048),
		m(100021, 4, rpc.IPProtoTCP, 40001), m(100024, 1, rpc.IPProtoUDP, 40002), m(100011, 2, rpc.IPProtoTCP, 875),
		m(100227, 3, rpc.IPProtoTCP, 2049), m(395650, 1, 132, 7), // unknown program, SCTP
	}
	want := []Program{
		{100000, "portmapper", 2, "udp", 111}, {100003, "nfs", 3, "tcp", 2049}, {100005, "mountd", 1, "tcp", 20048},
		{100021, "nlockmgr", 4, "tcp", 40001}, {100024, "status", 1, "udp", 40002}, {100011, "rquotad", 2, "tcp", 875},
		{100227, "nfs_acl", 3, "tcp", 2049}, {395650, "", 1, "132", 7},
	}
	if got := programs(ms); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := programs(nil); got == nil || len(got) != 0 {
		t.Errorf("no mappings: %#v", got)
	}
}

// wantNull is what a probe of the null server on port should find, apart
// from the round-trip times.
func wantNull(port int, from string) Result {
	return Result{
		Server: "127.0.0.1", ServerAddr: "127.0.0.1", Export: "/export",
		NFSPort: port, NFSPortFrom: from, MountPort: port, MountPortFrom: from,
		RPCPrograms: []Program{{100000, "portmapper", 2, "tcp", uint32(port)}, {100003, "nfs", 3, "tcp", uint32(port)},
			{100005, "mountd", 3, "tcp", uint32(port)}},
		FSInfo: FSInfo{RTMax: 1 << 20, RTPref: 256 << 10, RTMult: 4096, WTMax: 512 << 10, WTPref: 128 << 10, WTMult: 8192,
			DTPref: 64 << 10, MaxFileSize: 1<<63 - 1, TimeDeltaNs: 1000, Properties: 0x1b,
			PropertyNames: []string{"link", "symlink", "homogeneous", "cansettime"}},
		FSStat: FSStat{TBytes: 1 << 40, FBytes: 3 << 38, ABytes: 5 << 37, TFiles: 1 << 30, FFiles: 3 << 28, AFiles: 5 << 27,
			Invarsec: 30},
		PathConf: PathConf{LinkMax: 32000, NameMax: 255, NoTrunc: true, ChownRestricted: true, CasePreserving: true},
	}
}

func checkRTT(t *testing.T, r RTT, n int) {
	t.Helper()
	if r.N != n || !(0 < r.Min && r.Min <= r.Median && r.Median <= r.P90 && r.P90 <= r.Max && r.Max < 5e6) {
		t.Errorf("rtt %+v (want n %d, 0 < min <= median <= p90 <= max < 5 s)", r, n)
	}
}

func TestRunNullserver(t *testing.T) {
	port := startServer(t, &nullserver.Server{})
	ctx := context.Background()
	// Both ports from the portmapper (here the null server itself).
	res, err := Run(ctx, Config{Server: "127.0.0.1", Export: "/export", PortmapPort: port, Pings: 7, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	checkRTT(t, res.RTT, 7)
	res.RTT = RTT{}
	if want := wantNull(port, FromPortmapper); !reflect.DeepEqual(*res, want) {
		t.Errorf("got  %+v\nwant %+v", *res, want)
	}
	// Both ports given, the portmapper dead: the DUMP failure is recorded only.
	dead := deadPort(t)
	res, err = Run(ctx, Config{Server: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Export: "/export", MountPort: port,
		PortmapPort: dead, Pings: 1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	checkRTT(t, res.RTT, 1)
	if res.NFSPortFrom != FromGiven || res.MountPortFrom != FromGiven || len(res.RPCPrograms) != 0 || res.RPCPrograms == nil ||
		!strings.HasPrefix(res.RPCProgramsError, "portmapper 127.0.0.1:"+strconv.Itoa(dead)+": ") ||
		!strings.Contains(res.RPCProgramsError, "refused") {
		t.Errorf("dead portmapper: %+v", res)
	}
	if want := wantNull(port, ""); !reflect.DeepEqual(res.FSInfo, want.FSInfo) || res.FSStat != want.FSStat || res.PathConf != want.PathConf {
		t.Errorf("fsinfo %+v fsstat %+v pathconf %+v", res.FSInfo, res.FSStat, res.PathConf)
	}
}

// Failures end the probe with one line naming the step, each within about
// one Timeout; a failed DUMP does not.
func TestRunErrors(t *testing.T) {
	const timeout = 200 * time.Millisecond
	dropNFS := func(proc nfs3.Proc) *nullserver.Server {
		return &nullserver.Server{Drop: func(prog, _, p, _ uint32) bool { return prog == nfs3.Program && p == uint32(proc) }}
	}
	ok := startServer(t, &nullserver.Server{})
	dead := deadPort(t)
	cases := []struct {
		name   string
		server *nullserver.Server // nil: ok, the plain null server
		cfg    func(port int) Config
		want   []string
	}{
		{"mount refused", &nullserver.Server{MountStatus: 2 /* MNT3ERR_NOENT */}, nil,
			[]string{`MOUNT of export "/export" at 127.0.0.1:`, "refused: MNT3ERR_NOENT"}},
		{"mount silent", &nullserver.Server{Drop: func(prog, _, _, _ uint32) bool { return prog == nfs3.MountProgram }}, nil,
			[]string{`MOUNT of export "/export" at 127.0.0.1:`, "timed out after 200ms"}},
		{"fsinfo silent", dropNFS(nfs3.ProcFsinfo), nil,
			[]string{`NFS FSINFO of the root of "/export" at 127.0.0.1:`, "timed out after 200ms"}},
		{"ping silent", dropNFS(nfs3.ProcNull), nil, []string{"NFS NULL 1 of 3 at 127.0.0.1:", "timed out after 200ms"}},
		{"no portmapper", nil, func(int) Config {
			return Config{Server: "127.0.0.1", PortmapPort: dead}
		}, []string{"cannot get the NFS v3 port from the portmapper at 127.0.0.1:" + strconv.Itoa(dead) + ": dial tcp", "refused"}},
		{"no mount portmapper", nil, func(port int) Config {
			return Config{Server: "127.0.0.1:" + strconv.Itoa(port), PortmapPort: dead}
		}, []string{"cannot get the MOUNT v3 port from the portmapper at 127.0.0.1:" + strconv.Itoa(dead)}},
		{"no NFS service", nil, func(port int) Config {
			return Config{Server: "127.0.0.1:" + strconv.Itoa(dead), MountPort: port, PortmapPort: port}
		}, []string{"cannot connect to the NFS service at 127.0.0.1:" + strconv.Itoa(dead), "refused"}},
		{"no MOUNT service", nil, func(port int) Config {
			return Config{Server: "127.0.0.1:" + strconv.Itoa(port), MountPort: dead, PortmapPort: port}
		}, []string{"cannot connect to the MOUNT service at 127.0.0.1:" + strconv.Itoa(dead), "refused"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			port := ok
			if c.server != nil {
				port = startServer(t, c.server)
			}
			cfg := Config{Server: "127.0.0.1:" + strconv.Itoa(port), MountPort: port, PortmapPort: port}
			if c.cfg != nil {
				cfg = c.cfg(port)
			}
			cfg.Export, cfg.Pings, cfg.Timeout = "/export", 3, timeout
			t0 := time.Now()
			res, err := Run(context.Background(), cfg)
			if took := time.Since(t0); took > timeout+time.Second {
				t.Errorf("took %v (timeout %v)", took, timeout)
			}
			if err == nil {
				t.Fatalf("no error: %+v", res)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("error %q is not one line", err)
			}
		})
	}
}

func TestRunDumpSilent(t *testing.T) {
	port := startServer(t, &nullserver.Server{Drop: func(prog, _, proc, _ uint32) bool {
		return prog == rpc.PmapProgram && proc == rpc.PmapProcDump
	}})
	res, err := Run(context.Background(), Config{Server: "127.0.0.1", PortmapPort: port, Export: "/export",
		Pings: 2, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	want := "portmapper 127.0.0.1:" + strconv.Itoa(port) + ": timed out after 200ms"
	if res.RPCProgramsError != want || len(res.RPCPrograms) != 0 || res.NFSPortFrom != FromPortmapper || res.RTT.N != 2 {
		t.Errorf("got %+v, want rpc_programs_error %q", res, want)
	}
}

func TestRunInterrupted(t *testing.T) {
	port := startServer(t, &nullserver.Server{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Config{Server: "127.0.0.1:" + strconv.Itoa(port), MountPort: port, Export: "/export",
		Pings: 1, Timeout: time.Second})
	if err == nil || !strings.HasSuffix(err.Error(), ": interrupted") {
		t.Errorf("cancelled probe: %v", err)
	}
}
