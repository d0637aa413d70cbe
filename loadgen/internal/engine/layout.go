package engine

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"
	"strconv"

	"workbench/loadgen/internal/workload"
)

// The file-set layout is a pure function of (workload creation parameters,
// seed, target counts) and is PREFIX-STABLE: the layout for larger counts
// extends the layout for smaller counts (same names, same sizes, same tree),
// so a file set built for a low rate is augmented, never rebuilt, when a
// higher rate needs more objects (self-scaling, seed 003 §3.1/§6.6).
//
// Directories are numbered in breadth-first order; directory 0 is the base
// directory "fstress-<workload>-<shape>" under the export root. Directory k
// draws, from its own generator seeded by (seed, k): its number of files
// (FilesPerDir), subdirectories (DirsPerDir; 0 at MaxDepth) and symlinks
// (SymlinksPerDir), then the size of each of its files (FileSize). Names are
// f<j>, d<j>, l<j> (j = index within the directory). Directories are
// processed in order until the file count and the directory count both reach
// their targets; every directory so far enumerated is part of the set.

// LDir is one directory of the layout.
type LDir struct {
	Parent int32 // -1 for the base directory
	Depth  int32
	Name   string
}

// LFile is one regular file.
type LFile struct {
	Dir  int32
	Name string
	Size uint64
}

// LLink is one symbolic link.
type LLink struct {
	Dir    int32
	Name   string
	Target string
}

// Layout is the file set's namespace.
type Layout struct {
	Base  string
	Shape string // fingerprint of the creation parameters
	Dirs  []LDir
	Files []LFile
	Links []LLink
}

// Path returns the path of directory d relative to the export root.
func (l *Layout) Path(d int32) string {
	if d < 0 {
		return ""
	}
	if l.Dirs[d].Parent < 0 {
		return l.Dirs[d].Name
	}
	return l.Path(l.Dirs[d].Parent) + "/" + l.Dirs[d].Name
}

// splitmix64 is a tiny rand.Source64 so each directory can have its own
// cheap, independently seeded generator.
type splitmix struct{ s uint64 }

func (m *splitmix) Uint64() uint64 {
	m.s += 0x9e3779b97f4a7c15
	z := m.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
func (m *splitmix) Int63() int64    { return int64(m.Uint64() >> 1) }
func (m *splitmix) Seed(seed int64) { m.s = uint64(seed) }

func subRand(seed int64, k uint64) *rand.Rand {
	m := &splitmix{s: uint64(seed)*0x2545f4914f6cdd1d ^ (k+1)*0x9e3779b97f4a7c15}
	m.Uint64()
	return rand.New(m)
}

func count(x float64) int {
	if x < 0 || math.IsNaN(x) {
		return 0
	}
	return int(math.Round(x))
}

func size(x float64) uint64 {
	if x < 0 || math.IsNaN(x) {
		return 0
	}
	return uint64(math.Round(x))
}

// ShapeFingerprint hashes the creation-phase parameters of w by sampling its
// distributions with a fixed generator, and its data spec: two workloads
// with the same creation parameters and data produce the same layout and
// content and may share a file set.
func ShapeFingerprint(w *workload.Workload) string {
	h := fnv.New64a()
	r := subRand(12345, 0)
	put := func(x float64) { h.Write([]byte(strconv.FormatFloat(x, 'g', 12, 64) + ",")) }
	put(float64(w.MaxDepth))
	h.Write([]byte(w.Data.String() + ","))
	for i := 0; i < 64; i++ {
		put(w.FilesPerDir.Sample(r))
		put(w.DirsPerDir.Sample(r))
		put(w.SymlinksPerDir.Sample(r))
		put(w.FileSize.Sample(r))
	}
	return fmt.Sprintf("%016x", h.Sum64())[:10]
}

// BaseName is the directory (under the export root) holding the file set.
func BaseName(w *workload.Workload, shape string) string {
	return "fstress-" + w.Name + "-" + shape
}

// GenLayout generates the layout with at least files files and dirs
// directories (both ≥ 1).
func GenLayout(w *workload.Workload, seed int64, files, dirs int) *Layout {
	if files < 1 {
		files = 1
	}
	if dirs < 1 {
		dirs = 1
	}
	shape := ShapeFingerprint(w)
	l := &Layout{Shape: shape, Base: BaseName(w, shape)}
	l.Dirs = append(l.Dirs, LDir{Parent: -1, Depth: 0, Name: l.Base})
	maxDepth := int32(w.MaxDepth)
	for k := 0; ; k++ {
		if k >= len(l.Dirs) {
			// The tree ran out of directories before reaching its targets
			// (every directory at MaxDepth or drew no subdirectory): add a
			// sibling of the last directory (a child of the base when the
			// base is the last one or MaxDepth is 0 forbids subdirectories
			// — then the base simply gets more files below).
			last := l.Dirs[k-1]
			p := last.Parent
			if p < 0 {
				p = int32(k - 1)
			}
			if maxDepth == 0 {
				// no subdirectories at all: the base gets more files
				r := subRand(seed, uint64(1<<40+len(l.Files)))
				nf := count(w.FilesPerDir.Sample(r))
				if nf < 1 {
					nf = 1
				}
				base := len(l.Files)
				for j := 0; j < nf && len(l.Files) < files; j++ {
					l.Files = append(l.Files, LFile{Dir: 0, Name: "f" + strconv.Itoa(base+j), Size: size(w.FileSize.Sample(r))})
				}
				if len(l.Files) >= files {
					return l
				}
				k--
				continue
			}
			l.Dirs = append(l.Dirs, LDir{Parent: p, Depth: l.Dirs[p].Depth + 1, Name: "e" + strconv.Itoa(k)})
		}
		if len(l.Files) >= files && k >= dirs {
			return l
		}
		d := l.Dirs[k]
		r := subRand(seed, uint64(k))
		nf := count(w.FilesPerDir.Sample(r))
		nd := count(w.DirsPerDir.Sample(r))
		if d.Depth >= maxDepth {
			nd = 0
		}
		ns := count(w.SymlinksPerDir.Sample(r))
		for j := 0; j < nf; j++ {
			sz := size(w.FileSize.Sample(r))
			if len(l.Files) < files {
				l.Files = append(l.Files, LFile{Dir: int32(k), Name: "f" + strconv.Itoa(j), Size: sz})
			}
		}
		for j := 0; j < nd; j++ {
			l.Dirs = append(l.Dirs, LDir{Parent: int32(k), Depth: d.Depth + 1, Name: "d" + strconv.Itoa(j)})
		}
		for j := 0; j < ns; j++ {
			t := "../f0"
			if nf > 0 {
				t = "f" + strconv.Itoa(r.Intn(nf))
			}
			l.Links = append(l.Links, LLink{Dir: int32(k), Name: "l" + strconv.Itoa(j), Target: t})
		}
	}
}
