package workload

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLimitsRefuse: every bound of limits.go refuses in one line naming the key (file:line: key:).
func TestLimitsRefuse(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "big.dist", "1K:1\n"+strings.Repeat("#", MaxInputBytes)+"\n")
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.dist"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "huge.dist", "1e308:1\n1e308:1\n")
	cases := []struct{ name, text, want string }{
		{"files_per_dir 0 (loops forever)", "files_per_dir = 0", "files_per_dir: must be ≥ 1 on average, got 0"},
		{"files_per_dir mean below 1", "files_per_dir = 0:9, 1:1", "files_per_dir: must be ≥ 1 on average, got 0.1"},
		{"files_per_dir too many", "files_per_dir = 200000", "files_per_dir: value 200000 is too large; at most 100000"},
		{"files_per_dir unbounded pareto", "files_per_dir = pareto:1.5,2", "files_per_dir: unbounded"},
		{"dirs_per_dir too many", "dirs_per_dir = 1:1, 1e6:1", "dirs_per_dir: value 1e+06 is too large"},
		{"symlinks_per_dir too many", "symlinks_per_dir = 1M", "symlinks_per_dir: value"},
		{"max_depth too deep", "max_depth = 65", "max_depth: \"65\" is not an integer in [0, 64]"},
		{"file_size 2T", "file_size = 2T", "file_size: value 2T is too large; at most 1T"},
		{"file_size 1e308K (+Inf)", "file_size = 1e308K", "file_size: value \"1e308K\" is not a finite number"},
		{"file_size unbounded pareto", "file_size = pareto:1.5,1K", "file_size: unbounded (a Pareto without xmax)"},
		{"file_size pareto xmax inf", "file_size = pareto:1.5,1K,1e308T", "file_size: pareto: value \"1e308T\" is not a finite number"},
		{"read_size 32M", "read_size = 32M", "read_size: value 32M is too large; at most 16M"},
		{"write_size inline too big", "write_size = 8K:1, 1G:1", "write_size: value 1G is too large"},
		{"seq_run too long", "seq_run = 2000000", "seq_run: value 2e+06 is too large"},
		{"rate 1e8", "rate = 1e8", "rate: \"1e8\" is too large"},
		{"fileset_files_per_ops 1e5", "fileset_files_per_ops = 1e5", "fileset_files_per_ops: \"1e5\" is too large"},
		{"fileset_min_files 2e7", "fileset_min_files = 20000000", "fileset_min_files: \"20000000\" is not an integer in [1, 10000000]"},
		{"@/dev/zero (read without end)", "file_size = @/dev/zero", "file_size: /dev/zero is a device; want a regular file"},
		{"@directory", "file_size = @adir", "file_size: " + filepath.Join(dir, "adir") + " is a directory"},
		{"@FIFO (blocks)", "file_size = @fifo.dist", "file_size: " + filepath.Join(dir, "fifo.dist") + " is a FIFO"},
		{"@file over 16 MiB", "file_size = @big.dist", "file_size: " + filepath.Join(dir, "big.dist") + " is 16777222 bytes; at most 16M"},
		{"@missing", "file_size = @missing.dist", "file_size: cannot read " + filepath.Join(dir, "missing.dist")},
		{"@mix FIFO", "mix = @fifo.dist", "mix: " + filepath.Join(dir, "fifo.dist") + " is a FIFO"},
		{"distribution sum overflows", "file_size = @huge.dist", "huge.dist: weights or values too large"},
		{"mix weights overflow", "mix = read:1e308, write:1e308", "mix: weights too large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := c.text + "\n"
			if !strings.HasPrefix(c.text, "mix") {
				text = "mix = read:1\n" + text
			}
			p := writeFile(t, dir, "bad.wl", text)
			_, err := Load(p)
			if err == nil {
				t.Fatalf("%q loaded", c.text)
			}
			if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q, want one line containing %q", err, c.want)
			}
		})
	}
}

func TestWorkloadFileItselfMustBeRegular(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "w.wl"), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"/dev/zero": "workload file /dev/zero is a device", dir: "is a directory",
		filepath.Join(dir, "w.wl"): "is a FIFO"} {
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load(%s) = %v, want %q", p, err, want)
		}
	}
	b := writeFile(t, dir, "base.wl", "base = /dev/zero\nmix = read:1\n")
	if _, err := Load(b); err == nil || !strings.Contains(err.Error(), "base: workload file /dev/zero is a device") {
		t.Errorf("base = /dev/zero: %v", err)
	}
}

func TestCheckFilesetBounds(t *testing.T) {
	dir := t.TempDir()
	load := func(text string) *Workload {
		t.Helper()
		w, err := Load(writeFile(t, dir, "w.wl", "mix = read:1\n"+text))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	cases := []struct {
		w    *Workload
		rate float64
		want string
	}{
		{load("fileset_files_per_ops = 10000\n"), 8000, "file set: 80000000 files at 8000 ops/s"},
		{load("files_per_dir = 1\ndirs_per_dir = 100\nmax_depth = 8\nfileset_files_per_ops = 1000\n"), 10000, "directories"},
		{load("files_per_dir = 1\nsymlinks_per_dir = 10000\nfileset_files_per_ops = 100\n"), 10000, "symlinks"},
		{load("file_size = 1T\nfileset_min_files = 2\n"), 0, "of data"},
		// 10⁷ symlinks (within MaxSymlinks) beside a 100-file set
		{load("files_per_dir = 1\nsymlinks_per_dir = 100000\nfileset_min_files = 100\nfileset_files_per_ops = 0.01\n"),
			8000, "about 10000000 symlinks for 100 files"},
		{load("max_depth = 0\nsymlinks_per_dir = 1000\nfileset_min_files = 16\nfileset_files_per_ops = 0.001\n"),
			8000, "at most 16 per file"},
		{load(""), -1, "file set rate -1 ops/s: must be in [0, 1e+07]"},
		{load(""), 2e7, "must be in [0, 1e+07]"},
	}
	for _, c := range cases {
		if _, err := c.w.CheckFileset(c.rate); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckFileset(%g) = %v, want %q", c.rate, err, c.want)
		}
	}
	for _, name := range Canned() {
		w, _ := Load(name)
		e, err := w.CheckFileset(8000)
		if err != nil || e.Files < 1 || e.Bytes <= 0 {
			t.Errorf("%s at 8000 ops/s: %+v %v", name, e, err)
		}
	}
}
