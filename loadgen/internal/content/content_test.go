package content

import (
	"bytes"
	"compress/flate"
	"errors"
	"math"
	"testing"
)

func TestCheckNamesTheKey(t *testing.T) {
	cases := []struct {
		spec Spec
		key  string
	}{
		{Spec{CompressRatio: 1, UnitBytes: 1000}, "data_unit"},
		{Spec{CompressRatio: 1, UnitBytes: 256}, "data_unit"},
		{Spec{CompressRatio: 1, UnitBytes: 2 << 20}, "data_unit"},
		{Spec{CompressRatio: 0.5, UnitBytes: 4096}, "compress_ratio"},
		{Spec{CompressRatio: math.NaN(), UnitBytes: 4096}, "compress_ratio"},
		{Spec{CompressRatio: 65, UnitBytes: 4096}, "compress_ratio"}, // > 4096/64
		{Spec{CompressRatio: 2, DedupePct: 101, UnitBytes: 4096}, "dedupe_pct"},
		{Spec{CompressRatio: 2, DedupePct: -1, UnitBytes: 4096}, "dedupe_pct"},
	}
	for _, c := range cases {
		var se *SpecError
		if err := c.spec.Check(); !errors.As(err, &se) || se.Key != c.key {
			t.Errorf("%+v: got %v, want a %s error", c.spec, err, c.key)
		}
	}
	for _, ok := range []Spec{Default(), {Zeros: true, UnitBytes: 512}, {CompressRatio: 64, DedupePct: 100, UnitBytes: 4096}} {
		if err := ok.Check(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

// fill is Fill of n bytes of file 7 from off at generation gen.
func fill(s *Source, off uint64, n int, gen uint64) []byte {
	b := make([]byte, n)
	s.Fill(b, 7, off, gen)
	return b
}

func TestPiecesOfAWriteAgreeWithTheWhole(t *testing.T) {
	s := NewSource(Spec{CompressRatio: 3, DedupePct: 20, UnitBytes: 4096}, 1)
	whole := fill(s, 1000, 40000, 5)
	for _, cut := range [][2]int{{0, 1}, {3, 29}, {31, 9}, {100, 3000}, {3096, 4096}, {7, 39993}, {39990, 10}} {
		part := fill(s, uint64(1000+cut[0]), cut[1], 5)
		if !bytes.Equal(part, whole[cut[0]:cut[0]+cut[1]]) {
			t.Fatalf("bytes [%d, +%d) differ from the whole write's", cut[0], cut[1])
		}
	}
	if bytes.Equal(fill(s, 1000, 40000, 6), whole) {
		t.Fatal("another generation wrote the same bytes")
	}
}

// naiveUnit is the unit as the package doc states it, byte by byte: the
// header, then byte i of the word Mix(key + ((i−32)/8 + 1)·γ), then zeros.
func naiveUnit(s *Source, file uint32, start, gen uint64) []byte {
	h, key := s.header(file, start, gen)
	b := make([]byte, s.spec.UnitBytes)
	h.put(b)
	for i := HeaderBytes; i < s.random; i++ {
		w := Mix(key + uint64((i-HeaderBytes)/8+1)*golden)
		b[i] = byte(w >> (8 * (i % 8)))
	}
	return b
}

func TestFillMakesTheUnitsThePackageDocStates(t *testing.T) {
	s := NewSource(Spec{CompressRatio: 1.7, DedupePct: 40, UnitBytes: 1024}, 8)
	var want []byte
	for start := uint64(0); start < 20*1024; start += 1024 {
		want = append(want, naiveUnit(s, 7, start, 3)...)
	}
	for _, cut := range [][2]int{{0, 20 * 1024}, {1, 1023}, {5, 2050}, {32, 8}, {33, 7}, {600, 9000}, {1023, 2}} {
		if got := fill(s, uint64(cut[0]), cut[1], 3); !bytes.Equal(got, want[cut[0]:cut[0]+cut[1]]) {
			t.Fatalf("bytes [%d, +%d) differ from the stated units", cut[0], cut[1])
		}
	}
}

// flateRatio is len(b) over its DEFLATE size (a stand-in for zstd: both
// store a run of zeros in a few bytes and random bytes as they are).
func flateRatio(t *testing.T, b []byte) float64 {
	var out bytes.Buffer
	w, err := flate.NewWriter(&out, flate.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	w.Close()
	return float64(len(b)) / float64(out.Len())
}

func TestUnitsCompressToTheRatio(t *testing.T) {
	for _, ratio := range []float64{1, 1.5, 2, 4, 8} {
		s := NewSource(Spec{CompressRatio: ratio, UnitBytes: 4096}, 2)
		got := flateRatio(t, fill(s, 0, 4<<20, 1))
		if math.Abs(got/ratio-1) > 0.05 {
			t.Errorf("compress_ratio %g: the data compressed %.3f:1", ratio, got)
		}
	}
	if got := flateRatio(t, fill(NewSource(Default(), 3), 0, 4<<20, 1)); got > 1.01 {
		t.Errorf("the default data compressed %.3f:1; want incompressible", got)
	}
}

// dupShare is 1 − distinct units / units of b.
func dupShare(b []byte, unit int) float64 {
	seen := map[string]bool{}
	for i := 0; i+unit <= len(b); i += unit {
		seen[string(b[i:i+unit])] = true
	}
	return 1 - float64(len(seen))/float64(len(b)/unit)
}

func TestADedupeShareOfTheUnitsRepeat(t *testing.T) {
	for _, pct := range []float64{0, 10, 30, 75} {
		for _, unit := range []int{512, 4096, 16384} {
			const units = 2048
			s := NewSource(Spec{CompressRatio: 2, DedupePct: pct, UnitBytes: unit}, 4)
			got := 100 * dupShare(fill(s, 0, units*unit, 1), unit)
			// the duplicates repeat Templates units, each stored once
			want := pct - 100*float64(Templates)/units*float64(min(1, pct))
			if math.Abs(got-want) > 3 {
				t.Errorf("dedupe_pct %g, unit %d: %.2f %% of the units repeat another; want %.2f", pct, unit, got, want)
			}
		}
	}
}

func TestHeadersNameTheUnit(t *testing.T) {
	s := NewSource(Spec{CompressRatio: 2, DedupePct: 50, UnitBytes: 1024}, 5)
	b := fill(s, 8192, 64*1024, 9)
	dups := 0
	for i := 0; i < len(b); i += 1024 {
		h, ok := ReadHeader(b[i:])
		switch {
		case !ok:
			t.Fatalf("unit at %d has no header", 8192+i)
		case h.File == templateFile:
			dups++
		case h.File != 7 || h.Offset != uint64(8192+i) || h.Gen != 9:
			t.Fatalf("unit at %d: header %+v", 8192+i, h)
		}
	}
	if dups == 0 || dups == 64 {
		t.Fatalf("%d of 64 units are duplicates at dedupe_pct 50", dups)
	}
	if _, ok := ReadHeader(make([]byte, 64)); ok {
		t.Fatal("zeros read as a header")
	}
}

func TestZerosAreZeros(t *testing.T) {
	b := bytes.Repeat([]byte{1}, 10000)
	NewSource(Spec{Zeros: true, UnitBytes: 4096}, 6).Fill(b, 1, 3, 1)
	if !bytes.Equal(b, make([]byte, 10000)) {
		t.Fatal("zeros mode wrote non-zero bytes")
	}
}

func BenchmarkFill8K(b *testing.B) {
	for _, spec := range []Spec{Default(), {CompressRatio: 2, DedupePct: 30, UnitBytes: 4096}} {
		s := NewSource(spec, 7)
		buf := make([]byte, 8192)
		b.Run(spec.String(), func(b *testing.B) {
			b.SetBytes(8192)
			for i := 0; b.Loop(); i++ {
				s.Fill(buf, 3, uint64(i)*8192, uint64(i))
			}
		})
	}
}
