package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"workbench/loadgen/internal/engine"
	"workbench/loadgen/internal/results"
)

var engineParseCPUs, engineFormatCPUs = engine.ParseCPUs, engine.FormatCPUs

// --shards, --cpus and --quantum: bad values are one-line errors; a run on
// 2 shards writes shards 2, at least 2 connections and the quantum.
func TestFleetFlags(t *testing.T) {
	_, port := startNull(t)
	p := strconv.Itoa(port)
	js := filepath.Join(t.TempDir(), "r.json")
	base := []string{"run", "--server", "127.0.0.1:" + p, "--mount-port", p, "--export", "/export", "--workload", "web_server",
		"--rate", "400", "--duration", "0.5", "--warmup", "0.1", "--drain-timeout", "0", "--json", js}
	for _, bad := range [][]string{{"--shards", "-1"}, {"--shards", "100000"}, {"--cpus", "x"}, {"--cpus", "3-1"},
		{"--quantum", "5ms"}, {"--quantum", "-1ms"}} {
		code, _, stderr := runCLI(append(base, bad...)...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, strings.TrimPrefix(bad[0], "--")) {
			t.Errorf("%v: exit %d, %q", bad, code, stderr)
		}
	}
	if code, _, stderr := runCLI("check", "--workload", "web_server", "--rate", "100", "--nfs-version", "4.1", "--shards", "2"); code != exitUsage ||
		!strings.Contains(stderr, "NFSv3 only") {
		t.Errorf("check --nfs-version 4.1 --shards 2: exit %d: %s", code, stderr)
	}
	code, _, stderr := runCLI(append(base, "--shards", "2", "--quantum", "200us")...)
	if code != exitOK && code != exitSaturated {
		t.Fatalf("2 shards: exit %d: %s", code, stderr)
	}
	r, err := results.ReadJSONFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if r.Shards != 2 || r.Conns < 2 || r.QuantumUs != 200 || r.OpsTotal != 200 {
		t.Errorf("shards %d conns %d quantum %g ops %d", r.Shards, r.Conns, r.QuantumUs, r.OpsTotal)
	}
}

func TestParseCPUs(t *testing.T) {
	for in, want := range map[string]string{"0": "0", "0-3": "0,1,2,3", "1,3-4,1": "1,3,4"} {
		cpus, err := parseCPUsForTest(in)
		if err != nil || cpus != want {
			t.Errorf("%q: %q %v, want %q", in, cpus, err, want)
		}
	}
}

func parseCPUsForTest(s string) (string, error) {
	cpus, err := engineParseCPUs(s)
	if err != nil {
		return "", err
	}
	return engineFormatCPUs(cpus), nil
}
