// Package content makes the bytes fstress writes, so that a filer that
// compresses, deduplicates or skips zero blocks inline sees data of a chosen
// compressibility and duplicate share rather than zeros (vdbench's compratio,
// dedupratio and dedupunit; fio's buffer_compress_percentage and
// dedupe_percentage).
//
// # The unit
//
// A file is cut into units of Spec.UnitBytes at multiples of that size (the
// block a filer compresses or deduplicates). Each unit written is one of:
//
//   - unique (the default): a 32-byte header, then random bytes up to
//     RandomBytes(), then zeros to the end of the unit. The header names the
//     file, the unit's offset and the write's generation, so no two units
//     written are alike; zstd and its kind store the zero tail in a few bytes,
//     so a unit compresses to about UnitBytes/CompressRatio.
//   - a duplicate (a share DedupePct of the units, decided per unit and
//     write from its key): one of Templates fixed units, the same bytes
//     wherever they land — what a deduplicating filer stores once.
//
// With Spec.Zeros every byte is zero (the old behaviour, kept to show what a
// zero-detecting filer does with it).
//
// # The random bytes
//
// Word i of a unit with key k is splitmix64(k + (i+1)·γ) (Steele, Lea and
// Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014): a
// counter-based stream, so any unit can be made again from its header alone
// (the verifier's expected bytes) and no state is shared between writers.
// The key mixes the seed, the file, the unit's offset and the generation.
// Cost: about one multiply-xorshift per 8 bytes, no allocation.
package content

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Bounds and defaults of a Spec.
const (
	HeaderBytes     = 32
	DefaultUnit     = 4096
	MinUnit         = 512
	MaxUnit         = 1 << 20
	Templates       = 16         // distinct duplicate units
	magic           = 0x31745366 // "fSt1" little-endian
	templateFile    = math.MaxUint32
	golden          = 0x9e3779b97f4a7c15
	dupSalt         = 0xd1b54a32d192ed03
	dedupeScale     = 10000            // DedupePct is decided in steps of 0.01 %
	defaultSeedBase = 0x66737472657373 // "fstress"
)

// Spec is what the written bytes look like.
type Spec struct {
	Zeros         bool    // every byte zero (CompressRatio and DedupePct are then unused)
	CompressRatio float64 // ≥ 1: a unit's size over its compressed size (1: incompressible)
	DedupePct     float64 // 0..100: share of units that repeat one of Templates units
	UnitBytes     int     // the unit of compression and deduplication
}

// Default is incompressible, unique data in 4 KiB units.
func Default() Spec { return Spec{CompressRatio: 1, UnitBytes: DefaultUnit} }

// SpecError is what is wrong with a Spec, and the workload key to blame.
type SpecError struct{ Key, Problem string }

func (e *SpecError) Error() string { return e.Key + ": " + e.Problem }

// Check says what is wrong with s (a *SpecError), or nil.
func (s Spec) Check() error {
	u := s.UnitBytes
	if u < MinUnit || u > MaxUnit || u&(u-1) != 0 {
		return &SpecError{"data_unit", fmt.Sprintf("%d is not a power of two in [%d, %d] bytes", u, MinUnit, MaxUnit)}
	}
	if s.Zeros {
		return nil
	}
	maxRatio := float64(u) / (2 * HeaderBytes)
	if !(s.CompressRatio >= 1 && s.CompressRatio <= maxRatio) {
		return &SpecError{"compress_ratio", fmt.Sprintf(
			"%v is not zeros or in [1, %g] (data_unit %d over twice the %d-byte header)",
			s.CompressRatio, maxRatio, u, HeaderBytes)}
	}
	if !(s.DedupePct >= 0 && s.DedupePct <= 100) {
		return &SpecError{"dedupe_pct", fmt.Sprintf("%v is not a percentage in [0, 100]", s.DedupePct)}
	}
	return nil
}

// RandomBytes is how many bytes of each unit are random (header included,
// a multiple of 8); the rest are zeros.
func (s Spec) RandomBytes() int {
	n := int(math.Ceil(float64(s.UnitBytes)/s.CompressRatio/8)) * 8
	return min(max(n, HeaderBytes), s.UnitBytes)
}

// String is the spec as the workload keys write it ("zeros" or
// "compress_ratio=2 dedupe_pct=30 data_unit=4096").
func (s Spec) String() string {
	if s.Zeros {
		return "zeros"
	}
	return fmt.Sprintf("compress_ratio=%g dedupe_pct=%g data_unit=%d", s.CompressRatio, s.DedupePct, s.UnitBytes)
}

// Source makes the bytes of writes. It holds no mutable state: writers on
// any goroutine may share one.
type Source struct {
	spec   Spec
	seed   uint64
	random int    // RandomBytes()
	dupCut uint64 // a unit is a duplicate when its draw mod dedupeScale < dupCut
}

// NewSource returns a source of s (checked by the caller) whose bytes
// depend on seed.
func NewSource(s Spec, seed uint64) *Source {
	return &Source{spec: s, seed: Mix(seed ^ defaultSeedBase), random: s.RandomBytes(),
		dupCut: uint64(math.Round(s.DedupePct / 100 * dedupeScale))}
}

// Ref is a write's bytes made at encode time (xdr.Encoder.OpaqueSpace): the
// bytes of file's range from the request's offset at generation Gen. A zero
// Ref (Src nil) makes none.
type Ref struct {
	Src  *Source
	File uint32
	Gen  uint64
}

// Fill writes into dst the bytes of file's range [off, off+len(dst)) at
// generation gen.
func (s *Source) Fill(dst []byte, file uint32, off, gen uint64) {
	if s.spec.Zeros {
		clear(dst)
		return
	}
	u := uint64(s.spec.UnitBytes)
	for len(dst) > 0 {
		start := off - off%u
		n := min(u-(off-start), uint64(len(dst)))
		s.unitRange(dst[:n], file, start, gen, int(off-start))
		dst, off = dst[n:], off+n
	}
}

// unitRange writes bytes [from, from+len(dst)) of the unit of file at offset
// start, generation gen: header, random words (the word at byte i is
// Mix(key + ((i−HeaderBytes)/8 + 1)·γ)), zeros.
func (s *Source) unitRange(dst []byte, file uint32, start, gen uint64, from int) {
	h, key := s.header(file, start, gen)
	var hb [HeaderBytes]byte
	h.put(hb[:])
	to, i := from+len(dst), from
	for ; i < to && i < HeaderBytes; i++ {
		dst[i-from] = hb[i]
	}
	var w [8]byte
	for i < to && i < s.random {
		k := key + uint64((i-HeaderBytes)/8+1)*golden
		if i%8 == 0 { // whole words (s.random is a multiple of 8)
			words := dst[i-from : i-from+(min(to, s.random)-i)&^7]
			for j := 0; j+8 <= len(words); j += 8 {
				binary.LittleEndian.PutUint64(words[j:j+8], Mix(k))
				k += golden
			}
			if i += len(words); i == to || i == s.random {
				break
			}
			k = key + uint64((i-HeaderBytes)/8+1)*golden
		}
		binary.LittleEndian.PutUint64(w[:], Mix(k)) // a word cut by the range's start or end
		for end := i - i%8 + 8; i < to && i < end; i++ {
			dst[i-from] = w[i%8]
		}
	}
	clear(dst[i-from:])
}

// header is the header of the unit of file at offset start, generation gen,
// and the key of its random words: the unit's own, or a template's when
// the unit's draw makes it a duplicate.
func (s *Source) header(file uint32, start, gen uint64) (Header, uint64) {
	key := Mix(Mix(Mix(s.seed^uint64(file))^start) ^ gen)
	if Mix(key^dupSalt)%dedupeScale < s.dupCut {
		t := Mix(key) % Templates
		key = Mix(s.seed ^ (t+1)*golden)
		return Header{File: templateFile, Offset: t, Tag: Mix(key)}, key
	}
	return Header{File: file, Offset: start, Gen: gen, Tag: Mix(key)}, key
}

// Header is what the first HeaderBytes of a unit say.
type Header struct {
	File   uint32 // the file's index in the file set (templateFile: a duplicate)
	Offset uint64 // the unit's offset in the file (a duplicate: its template)
	Gen    uint64 // the write's generation (a duplicate: 0)
	Tag    uint64 // a hash of the unit's key: tells a header from other bytes
}

func (h Header) put(dst []byte) {
	binary.LittleEndian.PutUint32(dst[0:], magic)
	binary.LittleEndian.PutUint32(dst[4:], h.File)
	binary.LittleEndian.PutUint64(dst[8:], h.Offset)
	binary.LittleEndian.PutUint64(dst[16:], h.Gen)
	binary.LittleEndian.PutUint64(dst[24:], h.Tag)
}

// ReadHeader returns the header at the start of unit b; false when b holds
// none (zeros, or bytes fstress did not write).
func ReadHeader(b []byte) (Header, bool) {
	if len(b) < HeaderBytes || binary.LittleEndian.Uint32(b) != magic {
		return Header{}, false
	}
	return Header{File: binary.LittleEndian.Uint32(b[4:]), Offset: binary.LittleEndian.Uint64(b[8:]),
		Gen: binary.LittleEndian.Uint64(b[16:]), Tag: binary.LittleEndian.Uint64(b[24:])}, true
}

// Mix is splitmix64's output function (Steele et al. 2014, Fig. 1: mix64
// with the variant-13 constants of Stafford's "Better bit mixing").
func Mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
