package workload

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"workbench/loadgen/internal/dist"
	"workbench/loadgen/internal/nfs3"
)

// tableMix is seed 003 Table 2 after the corrections documented in the
// canned files (SPECsfs97: access 7 + fsinfo 1; web_proxy: commit 11).
var tableMix = map[string]map[string]float64{
	"specsfs97":  {"lookup": 27, "read": 18, "write": 9, "getattr": 11, "readlink": 7, "readdir": 2, "create": 1, "remove": 1, "fsstat": 1, "fsinfo": 1, "setattr": 1, "readdirplus": 9, "access": 7, "commit": 5},
	"web_server": {"lookup": 14, "read": 28, "getattr": 55, "readdir": 1, "fsstat": 1, "access": 1},
	"web_proxy":  {"lookup": 14, "read": 6, "write": 23, "getattr": 18, "readdir": 1, "create": 11, "remove": 11, "fsstat": 1, "access": 4, "commit": 11},
	"db_tp":      {"read": 61, "write": 31, "getattr": 3, "access": 1, "commit": 4},
	"p2p":        {"lookup": 1, "read": 54, "write": 35, "getattr": 1, "create": 1, "remove": 1, "fsstat": 1, "access": 1, "commit": 5},
	"mail":       {"lookup": 27, "read": 14, "write": 24, "getattr": 3, "fsstat": 1, "setattr": 4, "access": 3, "commit": 24},
	"news":       {"lookup": 1, "read": 22, "write": 64, "readdir": 1, "create": 1, "remove": 1, "fsstat": 1, "access": 1, "commit": 8},
	// not seed 003: SPECstorage 2020 GENOMICS as given in issue 17 item 8 (read 70+2, write 8+1,
	// stat 12, access 4, create 1, unlink 1, chmod 1)
	"genomics": {"read": 72, "write": 9, "getattr": 12, "access": 4, "create": 1, "remove": 1, "setattr": 1},
}

func TestCannedLoad(t *testing.T) {
	if got := strings.Join(Canned(), " "); got != "specsfs97 web_server web_proxy db_tp p2p mail news genomics" {
		t.Fatalf("Canned() = %s", got)
	}
	for _, name := range Canned() {
		w, err := Load(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w.Name != name || w.Description == "" || w.Source != "canned:"+name {
			t.Errorf("%s: name %q source %q description %q", name, w.Name, w.Source, w.Description)
		}
		sum := 0.0
		for _, e := range w.Mix {
			sum += e.Weight
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("%s: mix sums to %v", name, sum)
		}
		want := tableMix[name]
		tot := 0.0
		for _, v := range want {
			tot += v
		}
		if tot != 100 {
			t.Errorf("%s: reference mix sums to %v", name, tot)
		}
		got := w.MixTarget()
		if len(got) != len(want) {
			t.Errorf("%s: mix %v, want %v", name, got, want)
		}
		for op, pct := range want {
			if math.Abs(got[op]*100-pct) > 1e-9 {
				t.Errorf("%s: %s = %.4f%%, want %v%%", name, op, got[op]*100, pct)
			}
		}
		files, dirs := w.FilesetSize(1000)
		if files < 1 || dirs < 1 {
			t.Errorf("%s: FilesetSize(1000) = %d, %d", name, files, dirs)
		}
		for _, d := range []dist.Dist{w.FilesPerDir, w.DirsPerDir, w.SymlinksPerDir, w.FileSize, w.ReadSize, w.WriteSize, w.SeqRunOps, w.WriteSeqRunOps} {
			if d == nil {
				t.Errorf("%s: nil distribution", name)
			}
		}
		t.Logf("%-10s files(1000 ops/s)=%5d dirs=%4d data≈%6.1f MB  mean file %.1f KiB", name, files, dirs,
			float64(files)*w.FileSize.Mean()/1e6, w.FileSize.Mean()/1024)
	}
}

func TestCannedSizes(t *testing.T) {
	check := func(name string, got, want, tol float64) {
		if math.Abs(got-want)/want > tol {
			t.Errorf("%s: %.0f want %.0f ±%.0f%%", name, got, want, 100*tol)
		}
	}
	ws, _ := Load("web_server")
	check("web mean file size (10.5 KB)", ws.FileSize.Mean(), 10.5*1024, 0.01)
	check("web median (1.3 KB, bucket 1.5K)", ws.FileSize.(*dist.Empirical).Median(), 1536, 0)
	sp, _ := Load("specsfs97")
	check("specsfs97 mean file size", sp.FileSize.Mean(), 26.71*1024, 0.01)
	pp, _ := Load("p2p")
	check("p2p mean file size (3.7 MB)", pp.FileSize.Mean(), 3.7e6, 0.02)
	ml, _ := Load("mail")
	check("mail mean file size (4.7 KB)", ml.FileSize.Mean(), 4.7*1024, 0.01)
	check("mail mean write size (4.7 KB)", ml.WriteSize.Mean(), 4.7*1024, 0.01)
	if ml.WriteAccess != AccessAppend || ml.FilePopularity.Kind != PopZipf || ml.FilePopularity.Alpha != 1.3 {
		t.Errorf("mail: %+v %+v", ml.WriteAccess, ml.FilePopularity)
	}
	if ws.SeqRunOps.Mean() != 0 || ws.ReadAccess != AccessSequential {
		t.Errorf("web: whole-file sequential reads expected")
	}
	db, _ := Load("db_tp")
	if f, d := db.FilesetSize(1000); f != 4 || d != 1 {
		t.Errorf("db_tp fileset %d %d", f, d)
	}
}

// seqShare is the fraction of I/O ops that belong to runs longer than one op:
// Σ_{L>1} w_L·L / Σ_L w_L·L over the run-length distribution's entries.
func seqShare(t *testing.T, d dist.Dist) float64 {
	emp, ok := d.(*dist.Empirical)
	if !ok {
		t.Fatalf("run lengths %v: want an empirical distribution", d)
	}
	seq, all := 0.0, 0.0
	for _, e := range emp.Entries() {
		all += e.Weight * e.Value
		if e.Value > 1 {
			seq += e.Weight * e.Value
		}
	}
	return seq / all
}

// TestGenomicsApproximation: the published shares of sequential and random
// I/O (70:2 reads, 8:1 writes) and the dominant I/O sizes (128 KiB, 512 KiB).
func TestGenomicsApproximation(t *testing.T) {
	w, err := Load("genomics")
	if err != nil {
		t.Fatal(err)
	}
	if got := seqShare(t, w.SeqRunOps); math.Abs(got-70.0/72) > 1e-12 {
		t.Errorf("sequential READ share %v, want 70/72", got)
	}
	if got := seqShare(t, w.WriteSeqRunOps); math.Abs(got-8.0/9) > 1e-12 {
		t.Errorf("sequential WRITE share %v, want 8/9", got)
	}
	if w.ReadAccess != AccessRandom || w.WriteAccess != AccessRandom {
		t.Errorf("runs must start at random offsets (a run of 1 is a random I/O): %v %v", w.ReadAccess, w.WriteAccess)
	}
	if m := w.ReadSize.(*dist.Empirical).Median(); m != 128<<10 {
		t.Errorf("median READ size %v, want 128 KiB", m)
	}
	if m := w.WriteSize.(*dist.Empirical).Median(); m != 512<<10 {
		t.Errorf("median WRITE size %v, want 512 KiB", m)
	}
	if files, _ := w.FilesetSize(8000); files != 40 {
		t.Errorf("file set at 8000 ops/s: %d files, want 40", files)
	}
}

func TestMixShare(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, "s.wl")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// web_server: lookup 14, read 28, getattr 55, readdir 1, fsstat 1, access 1. read → 40 %:
	// the other 72 points scale by 60/72.
	w, err := Load(write("base = web_server\nmix_share = read:40, write:0\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"read": 40, "lookup": 14 * 60.0 / 72, "getattr": 55 * 60.0 / 72,
		"readdir": 60.0 / 72, "fsstat": 60.0 / 72, "access": 60.0 / 72}
	got := w.MixTarget()
	if len(got) != len(want) {
		t.Fatalf("mix %v, want %v", got, want)
	}
	for op, pct := range want {
		if math.Abs(got[op]*100-pct) > 1e-9 {
			t.Errorf("%s = %v %%, want %v %%", op, got[op]*100, pct)
		}
	}
	// a new operation, and the order of mix and mix_share does not matter
	w, err = Load(write("mix_share = write:25\nmix = getattr:1, read:2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if g := w.MixTarget(); math.Abs(g["write"]-0.25) > 1e-12 || math.Abs(g["read"]-0.5) > 1e-12 || math.Abs(g["getattr"]-0.25) > 1e-12 {
		t.Errorf("mix %v", g)
	}
	for text, msg := range map[string]string{
		"mix = read:1\nmix_share = read:50\n":           "s.wl:2: mix_share: the shares sum to 50 % and the mix has no other operation",
		"mix = read:1\nmix_share = read:60, write:50\n": "s.wl:2: mix_share: the shares sum to 110 %; at most 100",
		"mix = read:1\nmix_share = reed:5\n":            "s.wl:2: mix_share: unknown procedure \"reed\"",
		"mix = read:1\nmix_share = read:-1\n":           "not a percentage in [0, 100]",
		"mix = read:1\nmix_share = read:1, read:2\n":    "read given twice",
	} {
		if _, err := Load(write(text)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", text, err, msg)
		}
	}
}

func TestFilesetSize(t *testing.T) {
	w, _ := Load("web_server")
	// files = max(16, ⌈2·rate⌉), dirs = ⌈files/30⌉ (E[files_per_dir] = 30)
	for _, c := range []struct {
		rate        float64
		files, dirs int
	}{{1000, 2000, 67}, {100, 200, 7}, {1, 16, 1}, {0, 16, 1}, {333.3, 667, 23}} {
		f, d := w.FilesetSize(c.rate)
		if f != c.files || d != c.dirs {
			t.Errorf("FilesetSize(%v) = %d, %d want %d, %d", c.rate, f, d, c.files, c.dirs)
		}
	}
}

func TestPopularityWeights(t *testing.T) {
	sp, _ := Load("specsfs97")
	r := rand.New(rand.NewSource(1))
	w := sp.FilePopularity.Weights(1000, r)
	ones := 0
	for _, x := range w {
		if x == 1 {
			ones++
		} else if x != 0 {
			t.Fatalf("weight %v", x)
		}
	}
	if ones != 100 {
		t.Errorf("random 10%%: %d of 1000 active", ones)
	}
	if w := sp.FilePopularity.Weights(3, r); w[0]+w[1]+w[2] <= 0 {
		t.Errorf("small set entirely unpickable: %v", w)
	}
	ws, _ := Load("web_server")
	z := ws.FilePopularity.Weights(10, r)
	if z[0] != 1 || math.Abs(z[9]-math.Pow(10, -0.75)) > 1e-12 || ws.FilePopularity.Weight(10, nil) != z[9] {
		t.Errorf("zipf weights %v", z)
	}
	u := ws.DirPopularity.Weights(5, r)
	for _, x := range u {
		if x != 1 {
			t.Fatalf("uniform %v", u)
		}
	}
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "sizes.dist", "# sizes\n4K:3\n64K:1\n")
	p := writeFile(t, dir, "my.wl", `# custom workload
name = mine
description = test workload
files_per_dir = 10:1, 20:1
file_size = @sizes.dist
read_size = @canned:web_sizes.dist
write_size = pareto:1.5,1K,64K
file_popularity = zipf:1.1
dir_popularity = 1:1, 5:1
seq_run = whole
write_access = append
rate = 250
mix = NULL:50, getattr:25%, read:25, write:0
fileset_files_per_ops = 0.5
fileset_min_files = 3
`)
	w, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "mine" || w.Source != p || w.Rate != 250 || w.FileSize.Mean() != (3*4096+65536)/4.0 {
		t.Errorf("%+v", w)
	}
	if len(w.Mix) != 3 || w.Mix[0].Proc != nfs3.ProcNull || w.Mix[0].Weight != 0.5 {
		t.Errorf("mix %+v", w.Mix)
	}
	if w.WriteSeqRunOps != w.SeqRunOps {
		t.Errorf("write_seq_run should default to seq_run")
	}
	if f, d := w.FilesetSize(10); f != 5 || d != 1 {
		t.Errorf("fileset %d %d", f, d)
	}
	// NULL-only workload (generator capacity) needs one line.
	q := writeFile(t, dir, "null.wl", "mix = null:1\n")
	w, err = Load(q)
	if err != nil || w.Name != "null" || len(w.Mix) != 1 || w.Mix[0].Proc != nfs3.ProcNull {
		t.Fatalf("null workload: %v %+v", err, w)
	}
	// base = canned workload, override one knob.
	b := writeFile(t, dir, "variant.wl", "base = web_server\nname = web_zipf09\nfile_popularity = zipf:0.9\n")
	w, err = Load(b)
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "web_zipf09" || w.FilePopularity.Alpha != 0.9 || len(w.Mix) != 6 || w.FileSize.Mean() < 10000 {
		t.Errorf("variant: %+v", w)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "neg.dist", "1K:1\n2K:-1\n")
	writeFile(t, dir, "empty.dist", "# nothing\n")
	writeFile(t, dir, "nan.dist", "1K:x\n")
	cases := []struct{ text, want string }{
		{"mix = getattr:1\nbogus = 3\n", `bad.wl:2: unknown key "bogus"`},
		{"mix = reed:1\n", `bad.wl:1: mix: unknown procedure "reed"`},
		{"mix = read:-1, write:2\n", `bad.wl:1: mix: negative weight -1 for read`},
		{"mix = read:0\n", `bad.wl:1: mix: total weight is zero`},
		{"mix = read:abc\n", `bad.wl:1: mix: weight "abc" of read is not a number`},
		{"file_size = 8K\n", `bad.wl: no mix`},
		{"mix = read:1\nfile_size = @neg.dist\n", `bad.wl:2: file_size: ` + filepath.Join(dir, "neg.dist") + `:2: negative weight -1`},
		{"mix = read:1\nfile_size = @empty.dist\n", `neg.dist`}, // replaced below
		{"mix = read:1\nfile_size = @nan.dist\n", `nan.dist:1: weight "x" is not a number`},
		{"mix = read:1\nfile_size = @missing.dist\n", `bad.wl:2: file_size: cannot read`},
		{"mix = read:1\nread_size = 0\n", `bad.wl:2: read_size: values must be positive`},
		{"mix = read:1\nmax_depth = -1\n", `bad.wl:2: max_depth`},
		{"mix = read:1\nmix = write:1\n", `bad.wl:2: mix set twice (first on line 1)`},
		{"mix = read:1\nfile_popularity = zipf:x\n", `bad.wl:2: file_popularity: zipf alpha`},
		{"mix = read:1\nfile_popularity = 0:1\n", `bad.wl:2: file_popularity: all popularity weights are zero`},
		{"mix = read:1\nrate = 0\n", `bad.wl:2: rate: "0" is not a positive number`},
		{"mix = read:1\nread_access = append\n", `bad.wl:2: read_access`},
		{"just text\n", `bad.wl:1: expected key = value`},
		{"mix = read:1\nbase = web_server\n", `bad.wl:2: base must be the first key`},
		{"base = nosuch\nmix = read:1\n", `bad.wl:1: base: unknown workload "nosuch"`},
	}
	cases[7].want = `bad.wl:2: file_size: ` + filepath.Join(dir, "empty.dist") + `: no entries`
	for _, c := range cases {
		p := writeFile(t, dir, "bad.wl", c.text)
		_, err := Load(p)
		if err == nil {
			t.Errorf("%q: no error", c.text)
			continue
		}
		msg := strings.ReplaceAll(err.Error(), p, "bad.wl")
		if !strings.Contains(msg, c.want) {
			t.Errorf("%q: error %q, want %q", c.text, msg, c.want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("multi-line error %q", err)
		}
	}
	_, err := Load("web_servr")
	if err == nil || !strings.Contains(err.Error(), `unknown workload "web_servr"`) || !strings.Contains(err.Error(), "specsfs97, web_server, web_proxy, db_tp, p2p, mail, news") {
		t.Errorf("unknown workload: %v", err)
	}
}
