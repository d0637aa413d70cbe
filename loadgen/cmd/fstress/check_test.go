package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"workbench/loadgen/internal/engine"
	"workbench/loadgen/internal/workload"
)

func TestCheckAcceptsCannedAndFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "sizes.dist", "4K:3\n64K:1\n")
	wl := write(t, dir, "mine.wl", "name = mine\nmix = read:1\nfile_size = @sizes.dist\nfiles_per_dir = 10\n")
	code, out, stderr := runCLI("check", "--workload", "web_server", "--fileset-rate", "8000")
	if code != 0 || !strings.HasPrefix(out, "fstress: workload web_server (canned:web_server) OK; file set at 8000 ops/s: 16000 files") ||
		strings.Count(out, "\n") != 1 || stderr != "" {
		t.Fatalf("exit %d, %q %q", code, out, stderr)
	}
	code, out, stderr = runCLI("check", "--workload", wl, "--rate", "100", "--json", "--lag-bound", "10ms", "--conns", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// 200 files (k = 2), 10 per directory (the base and 20 below it): the layout `run` creates
	if !rep.OK || rep.Workload != "mine" || rep.Source != wl || rep.Files != 200 || rep.Dirs != 21 || !rep.Exact || rep.Rate != 100 {
		t.Errorf("%+v", rep)
	}
	if code, out, _ := runCLI("check", "--workload", write(t, dir, "null.wl", "mix = null:1\n"), "--json"); code != 0 ||
		!strings.Contains(out, `"needs_fileset":false`) || !strings.Contains(out, `"fileset_bytes":0`) {
		t.Errorf("null workload: %d %s", code, out)
	}
}

// The expectation (large sets) stays near the exact layout (small ones) for every canned workload.
func TestCheckEstimateNearExact(t *testing.T) {
	for _, name := range workload.Canned() {
		w, _ := workload.Load(name)
		est, err := w.CheckFileset(8000)
		if err != nil {
			t.Fatal(err)
		}
		files, dirs := w.FilesetSize(8000)
		l := engine.GenLayout(w, engine.LayoutSeed, files, dirs)
		bytes := 0.0
		for _, f := range l.Files {
			bytes += float64(f.Size)
		}
		if est.Files != int64(len(l.Files)) || math.Abs(est.Bytes/bytes-1) > 0.25 || est.Dirs < int64(len(l.Dirs))/2 {
			t.Errorf("%s: estimate %+v, layout %d files %d dirs %.0f bytes", name, est, len(l.Files), len(l.Dirs), bytes)
		}
	}
}

func TestCheckRefusesInOneLine(t *testing.T) {
	dir := t.TempDir()
	bad := func(name, text string) string { return write(t, dir, name, "mix = read:1\n"+text+"\n") }
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"files_per_dir 0", []string{"--workload", bad("fpd.wl", "files_per_dir = 0")}, "fpd.wl:2: files_per_dir: must be ≥ 1 on average, got 0"},
		{"@/dev/zero", []string{"--workload", bad("zero.wl", "file_size = @/dev/zero")}, "file_size: /dev/zero is a device"},
		{"1e308K", []string{"--workload", bad("inf.wl", "file_size = 1e308K")}, "file_size: value \"1e308K\" is not a finite number"},
		{"huge file set", []string{"--workload", bad("huge.wl", "fileset_files_per_ops = 10000"), "--fileset-rate", "8000"}, "file set: 80000000 files"},
		{"1 TiB of data", []string{"--workload", bad("data.wl", "file_size = 1T"), "--fileset-rate", "1000"}, "of data"},
		{"workload /dev/zero", []string{"--workload", "/dev/zero"}, "workload file /dev/zero is a device"},
		{"workload a directory", []string{"--workload", dir}, "is a directory"},
		{"unknown workload", []string{"--workload", "nosuch"}, `unknown workload "nosuch"`},
		{"no workload", []string{}, "--workload NAME|FILE is required"},
		{"lag bound not a duration", []string{"--workload", "web_server", "--lag-bound", "abc"}, "lag-bound"},
		{"lag bound 0", []string{"--workload", "web_server", "--lag-bound", "0"}, "--lag-bound must be > 0"},
		{"duration overflow", []string{"--workload", "web_server", "--duration", "1e300"}, "out of range"},
		{"duration inf", []string{"--workload", "web_server", "--duration", "inf"}, "not a finite number"},
		{"fileset rate negative", []string{"--workload", "web_server", "--fileset-rate", "-1"}, "--fileset-rate must be in [0, 1e+07]"},
		{"fileset rate 1e8", []string{"--workload", "web_server", "--fileset-rate", "1e8"}, "--fileset-rate must be in"},
		{"rate inf", []string{"--workload", "web_server", "--rate", "+Inf"}, "--rate must be in (0, 1e+07]"},
		{"conns 0", []string{"--workload", "web_server", "--conns", "0"}, "--conns must be 1..1024"},
		{"bad server", []string{"--workload", "web_server", "--server", "nohostport"}, "bad --server"},
		{"start-at NaN", []string{"--workload", "web_server", "--start-at", "NaN"}, "start-at"},
		{"stray argument", []string{"--workload", "web_server", "extra"}, `unexpected argument "extra"`},
		{"compress ratio below 1", []string{"--workload", "web_server", "--compress-ratio", "0.5"}, "--compress-ratio: 0.5 is not zeros or in [1, 64]"},
		{"compress ratio word", []string{"--workload", "web_server", "--compress-ratio", "lots"}, `--compress-ratio: "lots" is not a number or zeros`},
		{"data unit not a power of two", []string{"--workload", "web_server", "--data-unit", "1000"}, "--data-unit: 1000 is not a power of two"},
		{"dedupe over 100", []string{"--workload", "web_server", "--dedupe-pct", "101"}, "--dedupe-pct: 101 is not a percentage in [0, 100]"},
		{"compress key", []string{"--workload", bad("cr.wl", "data_unit = 1K\ncompress_ratio = 32")}, "cr.wl:3: compress_ratio: 32 is not zeros or in [1, 16]"},
		{"dedupe key", []string{"--workload", bad("dd.wl", "dedupe_pct = ten")}, `dd.wl:2: dedupe_pct: "ten" is not a percentage`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, stderr := runCLI(append([]string{"check"}, c.args...)...)
			if code != exitUsage || out != "" {
				t.Fatalf("exit %d (want 2), stdout %q", code, out)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "fstress: ") || !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q, want one line containing %q", stderr, c.want)
			}
		})
	}
}

// run and fileset refuse the same workloads before connecting to any server.
func TestRunRefusesWhatCheckRefuses(t *testing.T) {
	dir := t.TempDir()
	fpd := write(t, dir, "fpd.wl", "mix = read:1\nfiles_per_dir = 0\n")
	huge := write(t, dir, "huge.wl", "mix = read:1\nfileset_files_per_ops = 10000\n")
	js := filepath.Join(dir, "out.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--workload", fpd, "--rate", "10", "--json", js}, "files_per_dir"},
		{[]string{"run", "--workload", huge, "--rate", "10", "--fileset-rate", "8000", "--json", js}, "file set: 80000000 files"},
		{[]string{"run", "--workload", "web_server", "--rate", "10", "--fileset-rate", "1e9", "--json", js}, "--fileset-rate"},
		{[]string{"fileset", "--workload", huge, "--rate", "8000"}, "file set: 80000000 files"},
	} {
		// a server that would never answer: the refusal must come first
		code, _, stderr := runCLI(append(c.args, "--server", "127.0.0.1:1", "--mount-port", "1", "--export", "/x")...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, %q (want %q)", c.args, code, stderr, c.want)
		}
		if _, err := os.Stat(js); err == nil {
			t.Errorf("%v: JSON written", c.args)
		}
	}
}
