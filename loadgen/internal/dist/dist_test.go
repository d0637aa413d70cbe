package dist

import (
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseGood(t *testing.T) {
	src := `# sizes
1K:33   # one kilobyte
  2048 : 21

4KiB:13
8kb:10
1M:1
1K:2    # repeated value: weights add
0.5:0
`
	d, err := Parse(strings.NewReader(src), "good.dist")
	if err != nil {
		t.Fatal(err)
	}
	ents := d.Entries()
	want := []Entry{{0.5, 0}, {1024, 35}, {2048, 21}, {4096, 13}, {8192, 10}, {1 << 20, 1}}
	if len(ents) != len(want) {
		t.Fatalf("entries %v", ents)
	}
	for i, e := range ents {
		if e.Value != want[i].Value || math.Abs(e.Weight-want[i].Weight/80) > 1e-12 {
			t.Errorf("entry %d = %+v, want value %v prob %v", i, e, want[i].Value, want[i].Weight/80)
		}
	}
	// E[X] = Σ w v / Σ w
	m := (35*1024.0 + 21*2048 + 13*4096 + 10*8192 + 1<<20) / 80
	if math.Abs(d.Mean()-m) > 1e-9 {
		t.Errorf("mean %v want %v", d.Mean(), m)
	}
	if d.Max() != 1<<20 {
		t.Errorf("max %v", d.Max())
	}
	// the zero-weight value is never sampled; frequencies follow the weights
	r := rand.New(rand.NewSource(1))
	cnt := map[float64]int{}
	const n = 200000
	for i := 0; i < n; i++ {
		cnt[d.Sample(r)]++
	}
	if cnt[0.5] != 0 {
		t.Errorf("zero-weight value sampled %d times", cnt[0.5])
	}
	for _, w := range want[1:] {
		p := w.Weight / 80
		got := float64(cnt[w.Value]) / n
		sd := math.Sqrt(p * (1 - p) / n)
		if math.Abs(got-p) > 5*sd {
			t.Errorf("value %v: frequency %.4f want %.4f (±%.4f)", w.Value, got, p, 5*sd)
		}
	}
	if d.At(0) != 1024 || d.At(0.999999) != 1<<20 {
		t.Errorf("At bounds: %v %v", d.At(0), d.At(0.999999))
	}
}

func TestParseBad(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"neg.dist", "1:1\n2:-3\n", "neg.dist:2: negative weight -3"},
		{"empty.dist", "# only a comment\n\n   \n", "empty.dist: no entries"},
		{"nan.dist", "1:1\n\n8K:ten\n", `nan.dist:3: weight "ten" is not a number`},
		{"val.dist", "abc:1\n", `val.dist:1: value "abc" is not a number`},
		{"zero.dist", "1:0\n2:0\n", "zero.dist: total weight is zero"},
		{"colon.dist", "1:1\n1024\n", "colon.dist:2: missing ':'"},
		{"noweight.dist", "1:\n", "noweight.dist:1: missing weight"},
		{"inf.dist", "1:Inf\n", `inf.dist:1: weight "Inf" is not a number`},
	}
	for _, c := range cases {
		_, err := Parse(strings.NewReader(c.src), c.name)
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %q, want prefix %q", c.name, err, c.want)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: multi-line error %q", c.name, err)
		}
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.dist")
	if err := os.WriteFile(p, []byte("5:1\n7:-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ParseFile(p)
	if err == nil || !strings.Contains(err.Error(), p+":2: negative weight") {
		t.Fatalf("got %v", err)
	}
	_, err = ParseFile(filepath.Join(dir, "missing.dist"))
	if err == nil || !strings.Contains(err.Error(), "missing.dist") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestParseInline(t *testing.T) {
	d, err := ParseInline("1K:1, 2K:1; 4K:2", "inline")
	if err != nil {
		t.Fatal(err)
	}
	if d.Mean() != (1024+2048+2*4096)/4.0 {
		t.Errorf("mean %v", d.Mean())
	}
	if _, err := ParseInline("1:1, x:2", "mix"); err == nil || !strings.Contains(err.Error(), `entry 2`) {
		t.Errorf("bad inline: %v", err)
	}
	if _, err := ParseInline(" , ", "e"); err == nil || !strings.Contains(err.Error(), "no entries") {
		t.Errorf("empty inline: %v", err)
	}
}

func TestParseValue(t *testing.T) {
	for s, want := range map[string]float64{"8192": 8192, "8K": 8192, "8k": 8192, "8KB": 8192, "8KiB": 8192, "1.5M": 1.5 * (1 << 20), "2G": 2 << 30, "0.25": 0.25} {
		v, err := ParseValue(s)
		if err != nil || v != want {
			t.Errorf("ParseValue(%q) = %v, %v; want %v", s, v, err, want)
		}
	}
	for _, s := range []string{"", "K", "1X", "NaN", "1B"} {
		if _, err := ParseValue(s); err == nil {
			t.Errorf("ParseValue(%q) accepted", s)
		}
	}
}

func TestZipf(t *testing.T) {
	w := Zipf(1000, 0.8)
	if len(w) != 1000 || w[0] != 1 {
		t.Fatalf("len %d w0 %v", len(w), w[0])
	}
	for _, i := range []int{1, 9, 99, 999} {
		want := math.Pow(float64(i+1), -0.8) // 1/i^α
		if math.Abs(w[i]-want) > 1e-15 {
			t.Errorf("w[%d] = %v want %v", i, w[i], want)
		}
	}
	// ratio law: w_i / w_2i = 2^α
	if r := w[9] / w[19]; math.Abs(r-math.Pow(2, 0.8)) > 1e-12 {
		t.Errorf("ratio %v", r)
	}
	for _, x := range Zipf(10, 0) {
		if x != 1 {
			t.Fatal("alpha 0 is not uniform")
		}
	}
	if Zipf(0, 1) != nil {
		t.Error("n = 0")
	}
	if ZipfWeight(4, 1) != 0.25 {
		t.Error("ZipfWeight")
	}
}

func TestPareto(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	// Unbounded: P(X > x) = (xmin/x)^α.
	p := Pareto(2.5, 100)
	const n = 200000
	over := 0
	sum := 0.0
	for i := 0; i < n; i++ {
		x := p.Sample(r)
		if x < 100 {
			t.Fatalf("sample %v below xmin", x)
		}
		if x > 200 {
			over++
		}
		sum += x
	}
	want := math.Pow(0.5, 2.5)
	if got := float64(over) / n; math.Abs(got-want) > 0.005 {
		t.Errorf("P(X>200) = %.4f want %.4f", got, want)
	}
	if m := p.Mean(); math.Abs(m-2.5*100/1.5) > 1e-9 || math.Abs(sum/n-m)/m > 0.02 {
		t.Errorf("mean %v sample mean %v", m, sum/n)
	}
	// Bounded (mail server: mean 4.7 KiB, out to 1 MiB).
	b := BoundedPareto(1.2, 1073, 1<<20)
	if m := b.Mean(); math.Abs(m-4.7*1024)/(4.7*1024) > 0.005 {
		t.Errorf("bounded mean %v want ≈ 4813", m)
	}
	sum = 0
	for i := 0; i < n; i++ {
		x := b.Sample(r)
		if x < 1073 || x > 1<<20 {
			t.Fatalf("sample %v out of bounds", x)
		}
		sum += x
	}
	if math.Abs(sum/n-b.Mean())/b.Mean() > 0.05 {
		t.Errorf("bounded sample mean %v vs %v", sum/n, b.Mean())
	}
	if m := BoundedPareto(1, 1, math.E).Mean(); math.Abs(m-math.E/(math.E-1)) > 1e-12 {
		t.Errorf("alpha=1 mean %v", m)
	}
	if !math.IsInf(Pareto(1, 1).Mean(), 1) {
		t.Error("alpha ≤ 1 mean should be +Inf")
	}
	for _, s := range []string{"1.2", "0,5", "1.2,0", "1.2,10,5", "0.9,5", "x,1"} {
		if _, err := ParseParetoArgs(s); err == nil {
			t.Errorf("ParseParetoArgs(%q) accepted", s)
		}
	}
	if d, err := ParseParetoArgs("1.2,1073,1M"); err != nil || d.(*ParetoDist).Xmax != 1<<20 {
		t.Errorf("ParseParetoArgs: %v %v", d, err)
	}
}
