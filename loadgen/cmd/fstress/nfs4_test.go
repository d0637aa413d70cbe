package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/results"
)

func readResult(t *testing.T, path string) *results.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := results.ReadJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run41 runs `fstress run --nfs-version 4.1` against the null server on port.
// These tests are about NFSv4.1, not pacing: a loaded box may delay sends
// by a few ms, which the default 2 ms lag bound would rightly flag as
// generator saturation, so the bound is 1 s unless a test gives one.
func run41(t *testing.T, port int, out string, extra ...string) (int, string) {
	t.Helper()
	args := []string{"run", "--nfs-version", "4.1", "--server", "127.0.0.1:" + strconv.Itoa(port),
		"--export", "/export", "--json", out}
	if !slices.Contains(extra, "--lag-bound") {
		args = append(args, "--lag-bound", "1s")
	}
	args = append(args, extra...)
	code, _, stderr := runCLI(args...)
	return code, stderr
}

func TestNFS4RunFilesetCheckMerge(t *testing.T) {
	srv := &nullserver.Server{}
	port := startServer(t, srv)
	dir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if code, _, stderr := runCLI("fileset", "--nfs-version", "4.1", "--server", addr, "--export", "/export",
		"--workload", "web_proxy", "--rate", "100"); code != 0 {
		t.Fatalf("fileset: exit %d: %s", code, stderr)
	}
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	for i, out := range []string{a, b} {
		code, stderr := run41(t, port, out, "--workload", "web_proxy", "--rate", "400", "--duration", "1",
			"--warmup", "0.2", "--client-id", strconv.Itoa(i), "--conns", "2")
		if code != 0 {
			t.Fatalf("run: exit %d: %s", code, stderr)
		}
	}
	r := readResult(t, a)
	if r.NFSVersion != "4.1" || r.Errors != 0 || r.Timeouts != 0 || r.NFS4 == nil || r.NFS4.Slots != nullserver.DefaultSlots4 {
		t.Fatalf("result: version %q errors %d timeouts %d nfs4 %+v", r.NFSVersion, r.Errors, r.Timeouts, r.NFS4)
	}
	if b := r.NullRTTMs; b == nil || b.N < 1 || b.N > 11 || !(b.Mean > 0) || b.Timeouts != 0 {
		t.Errorf("null_rtt_ms %+v: want NFSv4 NULLs beside the 1 s run, 1..11", b)
	}
	for _, op := range []string{"open_create", "remove", "write", "commit", "getattr", "lookup", "read"} {
		if r.Ops[op] == nil || r.Ops[op].Count == 0 || r.MixTarget[op] == 0 {
			t.Errorf("op %s missing from ops or mix_target: %v", op, r.MixActual)
		}
	}
	if _, ok := r.Ops["create"]; ok {
		t.Errorf("v3 name create in a v4.1 result")
	}
	m := filepath.Join(dir, "m.json")
	if code, _, stderr := runCLI("merge", a, b, "--json", m); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	if mr := readResult(t, m); mr.NFSVersion != "4.1" || mr.OpsTotal != r.OpsTotal+readResult(t, b).OpsTotal || mr.NFS4 == nil {
		t.Fatalf("merged: version %q ops %d nfs4 %+v", mr.NFSVersion, mr.OpsTotal, mr.NFS4)
	}
	checkV3V4Merge(t, port, dir, a)
}

// checkV3V4Merge: an NFSv3 result does not merge with an NFSv4.1 one.
func checkV3V4Merge(t *testing.T, port int, dir, v4 string) {
	t.Helper()
	p := strconv.Itoa(port)
	v3 := filepath.Join(dir, "v3.json")
	code, _, stderr := runCLI("run", "--server", "127.0.0.1:"+p, "--mount-port", p, "--export", "/",
		"--workload", "web_proxy", "--rate", "200", "--duration", "0.5", "--warmup", "0", "--json", v3, "--lag-bound", "100ms",
		"--beside-null-gap", "0")
	if code != 0 {
		t.Fatalf("v3 run: exit %d: %s", code, stderr)
	}
	if raw, _ := os.ReadFile(v3); strings.Contains(string(raw), "null_rtt_ms") {
		t.Error("--beside-null-gap 0: null_rtt_ms in the result")
	}
	if r := readResult(t, v3); r.NFSVersion != "" || r.NFS4 != nil || r.Ops["create"] == nil {
		t.Fatalf("v3 result changed: version %q nfs4 %v ops %v", r.NFSVersion, r.NFS4, r.MixActual)
	}
	code, _, stderr = runCLI("merge", v3, v4)
	if code != exitUsage || !strings.Contains(stderr, "NFS version") {
		t.Fatalf("v3+v4.1 merge: exit %d: %s", code, stderr)
	}
}

func TestNFS4CheckAndProbe(t *testing.T) {
	code, stdout, stderr := runCLI("check", "--nfs-version", "4.1", "--workload", "web_server", "--rate", "100", "--json")
	var rep map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || rep["nfs_version"] != "4.1" {
		t.Fatalf("check: exit %d: %s %s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI("check", "--nfs-version", "4", "--workload", "web_server"); code != 2 || !strings.Contains(stderr, "--nfs-version") {
		t.Fatalf("check --nfs-version 4: exit %d: %s", code, stderr)
	}
	port := startServer(t, &nullserver.Server{Slots4: 8})
	code, stdout, stderr = runCLI("probe", "--nfs-version", "4.1", "--server", "127.0.0.1:"+strconv.Itoa(port),
		"--export", "/export", "--pings", "3")
	if code != 0 {
		t.Fatalf("probe: exit %d: %s", code, stderr)
	}
	m := decodeJSON(t, []byte(stdout))
	n4, _ := m["nfs4"].(map[string]any)
	if m["nfs_version"] != "4.1" || n4 == nil || n4["max_slots"] != json.Number("8") || n4["lease_time_s"] == json.Number("0") ||
		n4["max_request_size"] == json.Number("0") || m["mount_port_from"] != "none" {
		t.Fatalf("probe JSON: %s", stdout)
	}
	if code, _, stderr := runCLI("probe", "--nfs-version", "4.1", "--server", "127.0.0.1:"+strconv.Itoa(deadPort(t)),
		"--export", "/export", "--timeout", "1"); code != 1 || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("probe of a dead port: exit %d: %q", code, stderr)
	}
}

// forgetDuringRun calls forget once the run has had a session for after.
func forgetDuringRun(srv *nullserver.Server, after time.Duration, forget func()) {
	go func() {
		for i := 0; i < 2000; i++ {
			if _, n := srv.State4(); n > 0 {
				time.Sleep(after)
				forget()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
}

func TestNFS4SessionLostMidRun(t *testing.T) {
	for _, tc := range []struct {
		name    string
		forget  func(*nullserver.Server)
		reopens bool
	}{{"sessions", (*nullserver.Server).ForgetSessions, false}, {"clients", (*nullserver.Server).ForgetClients, true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &nullserver.Server{}
			port := startServer(t, srv)
			out := filepath.Join(t.TempDir(), "r.json")
			// 1.5 s after the first session: past the file set (which re-creates a lost
			// session by itself, leaving nothing to re-open) even when it is slow (a loaded
			// machine took > 0.7 s), and still 1 s before the end of the run
			forgetDuringRun(srv, 1500*time.Millisecond, func() { tc.forget(srv) })
			code, stderr := run41(t, port, out, "--workload", "web_server", "--rate", "500", "--duration", "2.5",
				"--warmup", "0.3", "--fileset-rate", "50", "--drain-timeout", "0")
			if code != 0 {
				t.Fatalf("run: exit %d: %s", code, stderr)
			}
			r := readResult(t, out)
			if r.NFS4 == nil || r.NFS4.SessionsRecreated != 1 || r.Timeouts != 0 {
				t.Fatalf("nfs4 %+v timeouts %d: %s", r.NFS4, r.Timeouts, stderr)
			}
			if tc.reopens && r.NFS4.Reopened == 0 {
				t.Errorf("client id lost but no file re-opened: %+v", r.NFS4)
			}
			for name := range r.ErrorStatuses { // the calls in flight when the session went
				if name != "NFS4ERR_BADSESSION" {
					t.Errorf("error status %s (%v)", name, r.ErrorStatuses)
				}
			}
			if !strings.Contains(stderr, "sessions re-created 1") {
				t.Errorf("summary does not name the re-creation: %s", stderr)
			}
		})
	}
}

func TestNFS4SlotWaits(t *testing.T) {
	srv := &nullserver.Server{Slots4: 1}
	port := startServer(t, srv)
	out := filepath.Join(t.TempDir(), "r.json")
	code, stderr := run41(t, port, out, "--workload", "web_server", "--rate", "3000", "--duration", "0.5",
		"--warmup", "0.1", "--fileset-rate", "50", "--drain-timeout", "0", "--lag-bound", "1s")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	r := readResult(t, out)
	if r.NFS4 == nil || r.NFS4.Slots != 1 || r.Errors != 0 || r.Timeouts != 0 || r.OpsTotal != 1500 {
		t.Fatalf("nfs4 %+v errors %d timeouts %d ops %d", r.NFS4, r.Errors, r.Timeouts, r.OpsTotal)
	}
}
