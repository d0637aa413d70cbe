package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/probe"
	"workbench/loadgen/internal/results"
)

func startNull(t *testing.T) (host string, port int) {
	t.Helper()
	return "127.0.0.1", startServer(t, &nullserver.Server{})
}

// startDenyMount answers every RPC call with an accepted reply whose body is
// mountstat3 MNT3ERR_NOENT (2): a server that does not export the path.
func startDenyMount(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				for {
					var hdr [4]byte
					if _, err := io.ReadFull(c, hdr[:]); err != nil {
						return
					}
					n := binary.BigEndian.Uint32(hdr[:]) & 0x7fffffff
					rec := make([]byte, n)
					if _, err := io.ReadFull(c, rec); err != nil || n < 4 {
						return
					}
					// xid, REPLY, MSG_ACCEPTED, verf AUTH_NONE len 0, SUCCESS, MNT3ERR_NOENT
					words := []uint32{binary.BigEndian.Uint32(rec), 1, 0, 0, 0, 0, 2}
					out := make([]byte, 4+4*len(words))
					binary.BigEndian.PutUint32(out, 0x80000000|uint32(4*len(words)))
					for i, w := range words {
						binary.BigEndian.PutUint32(out[4+4*i:], w)
					}
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}(c)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBadInputs(t *testing.T) {
	host, port := startNull(t)
	srv := host + ":" + strconv.Itoa(port)
	mp := strconv.Itoa(port)
	deny := strconv.Itoa(startDenyMount(t))
	dir := t.TempDir()
	neg := write(t, dir, "neg.dist", "1K:3\n8K:-1\n")
	empty := write(t, dir, "empty.dist", "# nothing here\n\n")
	nan := write(t, dir, "nan.dist", "1K:3\nabc:1\n")
	wNeg := write(t, dir, "neg.wl", "name = neg\nmix = getattr:1\nfile_size = @neg.dist\n")
	wEmpty := write(t, dir, "empty.wl", "name = empty\nmix = getattr:1\nfile_size = @empty.dist\n")
	wNaN := write(t, dir, "nan.wl", "name = nan\nmix = getattr:1\nfile_size = @nan.dist\n")
	_, _, _ = neg, empty, nan
	null := write(t, dir, "null.wl", "name = null\nmix = null:1\n")

	cases := []struct {
		name string
		args []string
		want string // substring of the one-line error
	}{
		{"unknown workload", []string{"--workload", "no_such_workload"}, "no_such_workload"},
		{"negative weight", []string{"--workload", wNeg}, "neg"},
		{"no entries", []string{"--workload", wEmpty}, "empty"},
		{"not a number", []string{"--workload", wNaN}, "abc"},
		{"unreachable server", []string{"--workload", null, "--server", "127.0.0.1:1", "--mount-port", "1"}, "127.0.0.1"},
		{"wrong export", []string{"--workload", null, "--mount-port", deny}, "export"},
		{"rate zero", []string{"--workload", null, "--rate", "0"}, "rate"},
		{"rate negative", []string{"--workload", null, "--rate", "-5"}, "rate"},
		{"interval too short", []string{"--workload", null, "--interval", "50ms"}, "--interval must be >= 100ms"},
		{"interval over duration", []string{"--workload", null, "--interval", "1"}, "--interval 1s must be <= --duration 200ms"},
		{"interval bad", []string{"--workload", null, "--interval", "soon"}, "interval"},
		{"too many intervals", []string{"--workload", null, "--interval", "0.1", "--duration", "400"}, "at most 3600"},
		{"drain factor", []string{"--workload", null, "--drain-factor", "0.5"}, "--drain-factor must be in [1"},
		{"drain timeout", []string{"--workload", null, "--drain-timeout", "-1"}, "--drain-timeout must be >= 0"},
		{"beside gap negative", []string{"--workload", null, "--beside-null-gap", "-1"}, "--beside-null-gap must be 0 (none) or >= 1ms"},
		{"beside gap tiny", []string{"--workload", null, "--beside-null-gap", "10us"}, "--beside-null-gap must be 0 (none) or >= 1ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "out.json")
			args := map[string]string{"--server": srv, "--mount-port": mp, "--export": "/export", "--rate": "100",
				"--duration": "0.2", "--warmup": "0", "--json": js}
			for i := 0; i < len(c.args); i += 2 {
				args[c.args[i]] = c.args[i+1]
			}
			argv := []string{"run"}
			for k, v := range args {
				argv = append(argv, k, v)
			}
			code, _, stderr := runCLI(argv...)
			want := exitUsage // a refusal of the input; a server that fails the run: exit 1
			if c.name == "unreachable server" || c.name == "wrong export" {
				want = exitError
			}
			if code != want {
				t.Fatalf("exit %d, want %d", code, want)
			}
			if n := strings.Count(stderr, "\n"); n != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("want one line on stderr, got %d: %q", n, stderr)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("error %q does not name %q", stderr, c.want)
			}
			if _, err := os.Stat(js); err == nil {
				t.Errorf("JSON file written on error")
			}
			entries, _ := os.ReadDir(filepath.Dir(js))
			if len(entries) != 0 {
				t.Errorf("left files behind: %v", entries)
			}
		})
	}
}

func TestRunAndMerge(t *testing.T) {
	host, port := startNull(t)
	srv := host + ":" + strconv.Itoa(port)
	dir := t.TempDir()
	wl := write(t, dir, "mix.wl", "name = small\nmix = getattr:60, read:30, lookup:10\nfileset_files_per_ops = 0.1\nfile_size = 8K\n")
	var files []string
	for i := 0; i < 2; i++ {
		js := filepath.Join(dir, "r"+strconv.Itoa(i)+".json")
		code, _, stderr := runCLI("run", "--server", srv, "--mount-port", strconv.Itoa(port), "--export", "/export",
			"--workload", wl, "--rate", "500", "--duration", "0.5", "--warmup", "0.1", "--json", js,
			"--client-id", strconv.Itoa(i), "--seed", strconv.Itoa(i+1), "--interval", "100ms",
			"--drain-state", filepath.Join(dir, "drain.json"),
			// This test is about run + merge, not pacing: a loaded CI box may delay sends by a
			// few ms, which the default 2 ms lag bound would rightly flag as generator saturation.
			"--lag-bound", "100ms")
		if code != 0 {
			t.Fatalf("run exit %d: %s", code, stderr)
		}
		if !strings.Contains(stderr, "getattr") {
			t.Errorf("no human summary on stderr: %q", stderr)
		}
		files = append(files, js)
		// the first run measures the idle RTTs, the second takes them from --drain-state; the
		// record is the READ stage's with the NULL stage's in it, drain_s the sum of both
		from := map[int]string{0: "measured", 1: "state"}[i]
		if d := readDrain(t, js); !d.Drained || d.Probe != "read" || d.IdleFrom != from || d.Null == nil ||
			d.Null.Probe != "null" || d.Null.IdleFrom != from || d.DrainS <= d.Null.DrainS {
			t.Errorf("run %d: drain %+v", i, d)
		}
	}
	out := filepath.Join(dir, "m.json")
	code, _, stderr := runCLI(append(append([]string{"merge"}, files...), "--json", out)...)
	if code != 0 {
		t.Fatalf("merge exit %d: %s", code, stderr)
	}
	var m map[string]any
	b, _ := os.ReadFile(out)
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"offered_rate", "achieved_rate", "duration_s", "ops_total", "mean_ms", "std_ms", "p50_ms", "p95_ms",
		"p99_ms", "max_ms", "ops", "mix_target", "mix_actual", "send_lag_ms", "generator_saturated", "errors", "timeouts", "retransmits", "histogram"} {
		if _, ok := m[k]; !ok {
			t.Errorf("merged JSON lacks %q", k)
		}
	}
	if m["ops_total"].(float64) != 500 {
		t.Errorf("merged ops_total %v, want 500", m["ops_total"])
	}
	if m["offered_rate"].(float64) != 1000 {
		t.Errorf("merged offered_rate %v, want 1000", m["offered_rate"])
	}
	// the series: 0.1 s warm-up + 5 measured intervals of 0.1 s, 50 calls each from each client
	ser, _ := m["series"].(map[string]any)
	ivs, _ := ser["intervals"].([]any)
	if len(ivs) != 6 || ser["interval_s"] != 0.1 {
		t.Fatalf("merged series: %v", ser["interval_s"])
	}
	for _, x := range ivs {
		iv := x.(map[string]any)
		if iv["sent"].(float64) != 100 || iv["count"].(float64) != 100 {
			t.Errorf("interval %v: sent %v count %v, want 100", iv["k"], iv["sent"], iv["count"])
		}
	}
	d0, d1, dm := readDrain(t, files[0]), readDrain(t, files[1]), readDrain(t, out)
	if !dm.Drained || dm.DrainS != max(d0.DrainS, d1.DrainS) {
		t.Errorf("merged drain %+v, want the longer of %v and %v", dm, d0.DrainS, d1.DrainS)
	}
	checkBesideMerged(t, files, out)
}

// checkBesideMerged: each run of 0.5 s has its NULLs beside it (default gap
// 100 ms: 1..6 calls, mean > 0), and the merge pools them exactly.
func checkBesideMerged(t *testing.T, files []string, merged string) {
	t.Helper()
	var n, sumNs uint64
	for _, f := range files {
		r := readResult(t, f)
		if b := r.NullRTTMs; b == nil || b.N < 1 || b.N > 6 || !(b.Mean > 0) || b.GapMs != 100 {
			t.Fatalf("%s: null_rtt_ms %+v: want 1..6 calls every 100 ms, mean > 0", f, b)
		}
		n, sumNs = n+r.NullRTTMs.N, sumNs+r.NullRTTMs.Exact.SumNs
	}
	if m := readResult(t, merged).NullRTTMs; m == nil || m.N != n || m.Mean != float64(sumNs)/float64(n)/1e6 {
		t.Errorf("merged null_rtt_ms %+v: want n %d, mean %v", m, n, float64(sumNs)/float64(n)/1e6)
	}
}

func readDrain(t *testing.T, path string) results.Drain {
	t.Helper()
	r, err := results.ReadJSONFile(path)
	if err != nil || r.Drain == nil {
		t.Fatalf("%s: %v, drain %v", path, err, r)
	}
	return *r.Drain
}

// A server whose NULL replies stay slow: no load, exit 4, one line, no JSON.
func TestRunNotDrained(t *testing.T) {
	port := strconv.Itoa(startServer(t, &nullserver.Server{Delay: func(prog, _, proc, _ uint32) time.Duration {
		if prog == nfs3.Program && proc == uint32(nfs3.ProcNull) {
			return 30 * time.Millisecond
		}
		return 0
	}}))
	js := filepath.Join(t.TempDir(), "out.json")
	t0 := time.Now()
	code, _, stderr := runCLI("run", "--server", "127.0.0.1:"+port, "--mount-port", port, "--export", "/export",
		"--workload", "web_server", "--rate", "50", "--duration", "0.2", "--warmup", "0", "--json", js,
		"--drain-idle-rtt", "100us", "--drain-timeout", "0.3")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; code != exitNotDrained || !strings.HasPrefix(last, "fstress: server not drained after 0.3 s") {
		t.Fatalf("exit %d, stderr %q; want 4 and a last line naming the drain", code, stderr)
	}
	if el := time.Since(t0); el > 10*time.Second {
		t.Errorf("took %v", el)
	}
	if _, err := os.Stat(js); err == nil {
		t.Error("JSON written for a server that did not drain")
	}
}

// A server whose NULLs are fast and READs slow (a disk queue): the READ
// stage does not drain, exit 4 naming it; --drain-probe null has no READ
// stage.
func TestRunNotDrainedByReads(t *testing.T) {
	var slowReads atomic.Bool
	slowReads.Store(true)
	port := strconv.Itoa(startServer(t, &nullserver.Server{Delay: func(prog, _, proc, _ uint32) time.Duration {
		if prog == nfs3.Program && proc == uint32(nfs3.ProcRead) && slowReads.Load() {
			return 30 * time.Millisecond
		}
		return 0
	}}))
	dir := t.TempDir()
	wl := write(t, dir, "r.wl", "name = r\nmix = getattr:100\nfileset_files_per_ops = 0.1\nfile_size = 8K\n")
	state := filepath.Join(dir, "drain.json")
	if err := probe.SaveIdle(state, "127.0.0.1:"+port, "/export", probe.ProbeRead, 200); err != nil {
		t.Fatal(err)
	}
	run := func(probeKind string) (int, string) {
		code, _, stderr := runCLI("run", "--server", "127.0.0.1:"+port, "--mount-port", port, "--export", "/export",
			"--workload", wl, "--rate", "50", "--duration", "0.2", "--warmup", "0", "--json", filepath.Join(dir, probeKind+".json"),
			"--drain-state", state, "--drain-timeout", "1", "--drain-probe", probeKind, "--lag-bound", "100ms")
		return code, stderr
	}
	code, stderr := run("read")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := lines[len(lines)-1]; code != exitNotDrained || !strings.Contains(last, "not drained after 1.0 s") ||
		!strings.Contains(last, "READ round trips") {
		t.Fatalf("exit %d, stderr %q; want 4 and a last line naming the READ stage", code, stderr)
	}
	slowReads.Store(false) // (the nullserver's manifest is 512 READs)
	if code, stderr := run("null"); code != 0 {
		t.Fatalf("--drain-probe null: exit %d, %s", code, stderr)
	}
	if d := readDrain(t, filepath.Join(dir, "null.json")); d.Probe != "null" || d.Null != nil {
		t.Errorf("--drain-probe null: drain %+v, want the NULL stage alone", d)
	}
	// empty files: nothing to READ, the NULL stage alone
	wl = write(t, dir, "r.wl", "name = r0\nmix = getattr:100\nfileset_files_per_ops = 0.1\nfile_size = 0\n")
	if code, stderr := run("read"); code != 0 {
		t.Fatalf("empty files: exit %d, %s", code, stderr)
	}
	if d := readDrain(t, filepath.Join(dir, "read.json")); d.Probe != "null" || d.Null != nil {
		t.Errorf("empty files: drain %+v, want the NULL stage alone", d)
	}
}

func TestWorkloadsAndUsage(t *testing.T) {
	code, out, _ := runCLI("workloads")
	if code != 0 {
		t.Fatal("workloads failed")
	}
	for _, n := range []string{"specsfs97", "web_server", "web_proxy", "db_tp", "p2p", "mail", "news"} {
		if !strings.Contains(out, n) {
			t.Errorf("workloads lacks %s", n)
		}
	}
	if code, _, stderr := runCLI("frobnicate"); code == 0 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("unknown command: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("run", "--bogus"); code == 0 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("bad flag: exit %d, %q", code, stderr)
	}
}
