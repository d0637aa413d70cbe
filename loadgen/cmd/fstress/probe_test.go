package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"workbench/loadgen/internal/nullserver"
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

// decodeJSON decodes one JSON object with numbers kept exact.
func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return m
}

func num[T uint32 | uint64 | int](v T) json.Number {
	return json.Number(strconv.FormatUint(uint64(v), 10))
}

// wantProbe is the JSON a probe of the null server on port should print,
// built from the values the null server sends (rtt_us aside).
func wantProbe(port int, from string) map[string]any {
	names := map[uint32]string{100000: "portmapper", 100003: "nfs", 100005: "mountd"}
	progs := []any{}
	for _, m := range nullserver.Mappings(uint32(port)) {
		progs = append(progs, map[string]any{"program": num(m.Prog), "name": names[m.Prog], "version": num(m.Vers),
			"protocol": "tcp", "port": num(m.Port)})
	}
	fi, fs, pc := nullserver.FSInfo, nullserver.FSStat, nullserver.PathConf
	return map[string]any{
		"server": "127.0.0.1", "server_addr": "127.0.0.1", "export": "/export",
		"nfs_port": num(port), "nfs_port_from": from, "mount_port": num(port), "mount_port_from": from,
		"rpc_programs": progs,
		"fsinfo": map[string]any{"rtmax": num(fi.RTMax), "rtpref": num(fi.RTPref), "rtmult": num(fi.RTMult),
			"wtmax": num(fi.WTMax), "wtpref": num(fi.WTPref), "wtmult": num(fi.WTMult), "dtpref": num(fi.DTPref),
			"maxfilesize": num(fi.MaxFileSize), "time_delta_ns": num(fi.TimeDelta), "properties": num(fi.Properties),
			"property_names": []any{"link", "symlink", "homogeneous", "cansettime"}},
		"fsstat": map[string]any{"tbytes": num(fs.TBytes), "fbytes": num(fs.FBytes), "abytes": num(fs.ABytes),
			"tfiles": num(fs.TFiles), "ffiles": num(fs.FFiles), "afiles": num(fs.AFiles), "invarsec": num(fs.Invarsec)},
		"pathconf": map[string]any{"linkmax": num(pc.LinkMax), "name_max": num(pc.NameMax), "no_trunc": pc.NoTrunc,
			"chown_restricted": pc.ChownRestricted, "case_insensitive": pc.CaseInsensitive, "case_preserving": pc.CasePreserving},
	}
}

// checkRTT checks rtt_us and removes it from m.
func checkRTT(t *testing.T, m map[string]any, n int) {
	t.Helper()
	rtt, ok := m["rtt_us"].(map[string]any)
	if !ok {
		t.Fatalf("rtt_us: %v", m["rtt_us"])
	}
	delete(m, "rtt_us")
	if len(rtt) != 5 || rtt["n"] != num(n) {
		t.Errorf("rtt_us %v: want n = %d and min, median, p90, max", rtt, n)
	}
	var v []float64
	for _, k := range []string{"min", "median", "p90", "max"} {
		f, err := rtt[k].(json.Number).Float64()
		if err != nil {
			t.Fatalf("rtt_us.%s: %v", k, rtt[k])
		}
		v = append(v, f)
	}
	if !(0 < v[0] && v[0] <= v[1] && v[1] <= v[2] && v[2] <= v[3] && v[3] < 5e6) {
		t.Errorf("rtt_us %v: want 0 < min <= median <= p90 <= max < 5 s", rtt)
	}
}

func TestProbe(t *testing.T) {
	port := startServer(t, &nullserver.Server{})
	p := strconv.Itoa(port)
	// No ports given: both from the portmapper (the null server answers it on
	// its own port). JSON on stdout, nothing on stderr.
	code, stdout, stderr := runCLI("probe", "--server", "127.0.0.1", "--portmap-port", p, "--export", "/export", "--pings", "7")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := decodeJSON(t, []byte(stdout))
	checkRTT(t, got, 7)
	if want := wantProbe(port, "portmapper"); !reflect.DeepEqual(got, want) {
		t.Errorf("probe JSON:\n got %v\nwant %v", got, want)
	}

	// Ports given, no portmapper: the probe succeeds, rpc_programs is empty
	// and rpc_programs_error says why. --json: the file, nothing on stdout.
	dead := strconv.Itoa(deadPort(t))
	js := filepath.Join(t.TempDir(), "probe.json")
	code, stdout, stderr = runCLI("probe", "--server", "127.0.0.1:"+p, "--mount-port", p, "--portmap-port", dead,
		"--export", "/export", "--json", js)
	if code != 0 || stdout != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	got = decodeJSON(t, b)
	checkRTT(t, got, 20)
	errMsg, _ := got["rpc_programs_error"].(string)
	if !strings.HasPrefix(errMsg, "portmapper 127.0.0.1:"+dead+": ") || !strings.Contains(errMsg, "refused") {
		t.Errorf("rpc_programs_error %q", errMsg)
	}
	delete(got, "rpc_programs_error")
	want := wantProbe(port, "given")
	want["rpc_programs"] = []any{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("probe JSON:\n got %v\nwant %v", got, want)
	}
}

// An unreachable or silent server, or a refused MOUNT: exit 1, one line on
// stderr, nothing on stdout, no JSON file, within about one --timeout.
func TestProbeUnreachable(t *testing.T) {
	dead := strconv.Itoa(deadPort(t))
	silent := strconv.Itoa(startServer(t, &nullserver.Server{Drop: func(_, _, _, _ uint32) bool { return true }}))
	refuse := strconv.Itoa(startServer(t, &nullserver.Server{MountStatus: 13}))
	cases := []struct {
		name    string
		args    []string
		timeout time.Duration
		want    string
	}{
		{"refused", []string{"--server", "127.0.0.1:" + dead, "--mount-port", dead, "--portmap-port", dead}, 5 * time.Second,
			"fstress: probe: cannot connect to the MOUNT service at 127.0.0.1:" + dead + ": dial tcp"},
		{"no portmapper", []string{"--server", "127.0.0.1", "--portmap-port", dead}, 5 * time.Second,
			"fstress: probe: cannot get the NFS v3 port from the portmapper at 127.0.0.1:" + dead},
		{"silent", []string{"--server", "127.0.0.1:" + silent, "--mount-port", silent, "--portmap-port", silent}, 500 * time.Millisecond,
			"fstress: probe: MOUNT of export \"/export\" at 127.0.0.1:" + silent + ": timed out after 500ms"},
		{"silent portmapper", []string{"--server", "127.0.0.1", "--portmap-port", silent}, 500 * time.Millisecond,
			"fstress: probe: cannot get the NFS v3 port from the portmapper at 127.0.0.1:" + silent + ": timed out after 500ms"},
		{"mount refused", []string{"--server", "127.0.0.1:" + refuse, "--mount-port", refuse}, 5 * time.Second,
			"fstress: probe: MOUNT of export \"/export\" at 127.0.0.1:" + refuse + " refused: MNT3ERR_ACCES"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "probe.json")
			args := append([]string{"probe", "--export", "/export", "--json", js, "--timeout", c.timeout.String()}, c.args...)
			t0 := time.Now()
			code, stdout, stderr := runCLI(args...)
			took := time.Since(t0)
			if code != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q", code, stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") || !strings.HasPrefix(stderr, c.want) {
				t.Errorf("stderr %q, want one line starting %q", stderr, c.want)
			}
			if took > c.timeout+time.Second {
				t.Errorf("took %v with --timeout %v", took, c.timeout)
			}
			if entries, _ := os.ReadDir(filepath.Dir(js)); len(entries) != 0 {
				t.Errorf("files left: %v", entries)
			}
		})
	}
}

func TestProbeUsage(t *testing.T) {
	ok := []string{"--server", "filer", "--export", "/x"}
	cases := []struct {
		code int
		args []string
		want string
	}{
		{exitUsage, []string{"--bogus"}, "fstress: probe: flag provided but not defined: -bogus"},
		{exitUsage, []string{"extra"}, `fstress: probe: unexpected argument "extra"`},
		{exitUsage, []string{"--pings", "many"}, "fstress: probe: invalid value"},
		{exitUsage, []string{"--timeout", "soon"}, "fstress: probe: invalid value"},
		{exitUsage, []string{"--server", ""}, "fstress: probe: --server HOST[:PORT] is required"},
		{exitUsage, []string{"--server", "filer:0"}, `fstress: probe: bad --server "filer:0"`},
		{exitUsage, []string{"--export", ""}, "fstress: probe: --export PATH is required"},
		{exitUsage, []string{"--pings", "0"}, "fstress: probe: --pings must be 1..1000 (got 0)"},
		{exitUsage, []string{"--pings", "1001"}, "fstress: probe: --pings must be 1..1000 (got 1001)"},
		{exitUsage, []string{"--timeout", "0"}, "fstress: probe: --timeout must be > 0"},
		{exitUsage, []string{"--mount-port", "70000"}, "fstress: probe: --mount-port 70000 out of range"},
		{exitUsage, []string{"--json", "/no/such/dir/p.json"}, "fstress: probe: --json /no/such/dir/p.json: directory /no/such/dir does not exist"},
	}
	for _, c := range cases {
		code, stdout, stderr := runCLI(append(append([]string{"probe"}, ok...), c.args...)...)
		if code != c.code || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, c.want) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want %q...)", c.args, code, c.code, stdout, stderr, c.want)
		}
	}
	if _, out, _ := runCLI("help"); !strings.Contains(out, "probe      --server HOST[:PORT] --export PATH") {
		t.Errorf("usage lacks probe:\n%s", out)
	}
}
