// Package workload is the fstress workload model: the twelve Fstress
// parameters of seed 003 §3, a plain-text workload file format, the seven
// canned workloads of seed 003 Tables 1–2 and an eighth after SPECstorage
// 2020 GENOMICS (embedded), the op scheduler and the self-scaling rule.
//
// # The twelve parameters (seed 003 §3.1–3.2)
//
// Creation phase (the file set, built before the run):
//
//	files_per_dir       distribution  files created in each new directory
//	dirs_per_dir        distribution  subdirectories created in each new directory
//	symlinks_per_dir    distribution  symlinks created in each new directory
//	max_depth           integer       bound on the directory tree depth (0 = base dir only)
//	file_popularity     popularity    access weight given to each new file
//	dir_popularity      popularity    access weight given to each new directory
//	symlink_popularity  popularity    access weight given to each new symlink
//	file_size           distribution  bytes per file
//
// Measurement phase:
//
//	mix                 op:weight list  operation mix (any NFSv3 procedure, incl. null)
//	read_size           distribution    bytes per READ
//	write_size          distribution    bytes per WRITE
//	rate                number          load level in ops/s (optional default; the CLI --rate wins)
//
// Further knobs (sequential I/O series, §3.3 "Request dependencies", and
// Table 1's "I/O accesses" column; file-set scaling):
//
//	seq_run             distribution | whole   READs per sequential run (whole = to end of file)
//	write_seq_run       distribution | whole   WRITEs per sequential run (default: seq_run)
//	read_access         random | sequential    where a read run starts (random offset / offset 0)
//	write_access        random | sequential | append
//	fileset_files_per_ops  number   self-scaling constant k: files per op/s of offered load (default 2)
//	fileset_min_files      integer  lower bound on the file count (default 16)
//	mix_share           op:percent list  set these operations' shares of the mix (percent); the
//	                                     other operations keep their relative weights and share
//	                                     the rest (applied after mix and base, so a file can say
//	                                     "base = web_server" and "mix_share = read:40")
//	compress_ratio      number ≥ 1 | zeros   what WRITEs carry: a unit's size over its compressed
//	                                     size (1: incompressible), or all zeros (package content)
//	dedupe_pct          percent  share of units that repeat another unit (0–100)
//	data_unit           size     unit of compression and deduplication (power of two, 512–1M)
//
// # Workload file format
//
// UTF-8 text, one "key = value" per line; '#' starts a comment; blank lines
// are ignored; keys are case-insensitive; each key at most once. An optional
// first key "base = NAME|PATH" starts from another workload (canned name or
// file) and the following lines override it. Unset keys take the defaults
// below. Example (a NULL-only generator capacity test needs just one line):
//
//	# my workload
//	name = my_web
//	base = web_server
//	file_popularity = zipf:0.9
//	mix = getattr:50, lookup:20, read:30
//
// Value syntax:
//
//	distribution:  "8192" or "8K"                 a constant
//	               "1K:33, 2K:21, 4K:13"          inline value:weight list (',' or ';' separated)
//	               "@sizes.dist"                  a value:weight file (package dist), relative to
//	                                              the workload file; "@canned:web_sizes.dist" names
//	                                              a file shipped with the canned workloads
//	               "pareto:1.2,1073,1M"           Pareto(α, x_min[, x_max]) (bounded if x_max given)
//	popularity:    "uniform"                      every new object weight 1
//	               "zipf:0.75"                    the i-th created object gets weight 1/i^α
//	               any distribution               each new object draws its weight from it
//	                                              ("1:10, 0:90" = 10% of objects are ever accessed)
//	mix:           "lookup:27, read:18, ..."      procedure names as in RFC 1813, lower case;
//	               or "@file.mix"                 weights are normalised to 1; zero weights dropped
//
// Values take binary suffixes K, M, G (×1024ⁿ). Errors are one line naming
// file:line and the problem, e.g. "my.wl:7: mix: unknown procedure \"reed\"".
//
// Defaults: files_per_dir 32, dirs_per_dir 0, symlinks_per_dir 0,
// max_depth 1, popularities uniform, file_size 8K, read_size 8K,
// write_size 8K, seq_run 1, read_access random, write_access random,
// fileset_files_per_ops 2, fileset_min_files 16, compress_ratio 1,
// dedupe_pct 0, data_unit 4K. There is no default mix.
//
// # Self-scaling rule (FilesetSize)
//
// SPECsfs97 (and Fstress after it, seed 003 §2, §6.6) grows the file set
// with the requested load: SPECsfs97 creates 10 MB of data per op/s
// (≈ 375 files per op/s at its 26.7 KB mean file size) and accesses 10% of
// it. fstress keeps the rule's shape — file count proportional to offered
// load — with a scale constant k sized for a loopback test box:
//
//	files = max(fileset_min_files, ⌈k · rate⌉)
//	dirs  = max(1, ⌈files / E[files_per_dir]⌉)
//
// The default k = 2 files per op/s makes the 1000 ops/s file set 2000 files
// (web_server: ≈ 21 MB, SPECsfs97: ≈ 53 MB), i.e. roughly 10k creation RPCs
// — seconds over loopback NFS, not minutes. The canned data-heavy workloads
// lower k so the data volume stays in the same range (p2p: k = 0.05,
// db_tp: k = 0.004 with 4 files minimum). For a SPECsfs97-faithful data
// set on a real testbed set fileset_files_per_ops = 375 (10 MB per op/s).
//
// # Op scheduling
//
// See Scheduler: smooth weighted round-robin blocks, shuffled with a seeded
// permutation; at every block boundary each op's count is within one op of
// its target, so the mix error is < 100/n percentage points after n ops.
package workload

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/dist"
	"workbench/loadgen/internal/nfs3"
)

//go:embed canned/*.wl canned/*.dist
var cannedFS embed.FS

// cannedNames in presentation order (seed 003 Table 2 column order).
// genomics is not from seed 003: it approximates SPECstorage 2020 GENOMICS (canned/genomics.wl).
var cannedNames = []string{"specsfs97", "web_server", "web_proxy", "db_tp", "p2p", "mail", "news", "genomics"}

// Canned lists the canned workload names.
func Canned() []string { return append([]string(nil), cannedNames...) }

// CannedFile returns the text of a canned workload file (for `fstress workloads --show`).
func CannedFile(name string) ([]byte, error) {
	return fs.ReadFile(cannedFS, "canned/"+name+".wl")
}

// PopKind is the kind of a popularity parameter.
type PopKind int

const (
	PopUniform PopKind = iota // every object weight 1
	PopZipf                   // i-th object weight 1/i^α
	PopDist                   // weight drawn from Dist
)

// Popularity is how access weights are given to newly created objects
// (seed 003 §3.1 "File, directory, and symlink popularity").
type Popularity struct {
	Kind  PopKind
	Alpha float64   // PopZipf
	Dist  dist.Dist // PopDist
	Spec  string    // the text it was parsed from
}

// Weight of the object created rank-th (1-based) in its set: 1 (uniform),
// 1/rank^α (zipf), or a draw from Dist (r is only used by PopDist).
func (p Popularity) Weight(rank int, r *rand.Rand) float64 {
	switch p.Kind {
	case PopZipf:
		return dist.ZipfWeight(rank, p.Alpha)
	case PopDist:
		return p.Dist.Sample(r)
	}
	return 1
}

// Weights returns the weights of n objects. Zipf ranks are 1..n in order
// (the caller may shuffle); PopDist weights are stratified — value v gets
// exactly round(n·P(v)) objects (largest remainder), in a random order — and
// at least one weight is positive whenever the distribution has a positive
// value, so a small set is never entirely unpickable.
func (p Popularity) Weights(n int, r *rand.Rand) []float64 {
	w := make([]float64, n)
	switch p.Kind {
	case PopZipf:
		return dist.Zipf(n, p.Alpha)
	case PopDist:
		emp, ok := p.Dist.(*dist.Empirical)
		if !ok {
			for i := range w {
				w[i] = p.Dist.Sample(r)
			}
			return w
		}
		ents := emp.Entries()
		counts := apportion(ents, n)
		i := 0
		for j, c := range counts {
			for ; c > 0; c-- {
				w[i] = ents[j].Value
				i++
			}
		}
		r.Shuffle(n, func(a, b int) { w[a], w[b] = w[b], w[a] })
		if n > 0 && emp.Max() > 0 {
			pos := false
			for _, x := range w {
				if x > 0 {
					pos = true
					break
				}
			}
			if !pos {
				w[0] = emp.Max()
			}
		}
		return w
	}
	for i := range w {
		w[i] = 1
	}
	return w
}

// apportion splits n by the largest-remainder (Hamilton) method: c_j = ⌊n p_j⌋ plus one for the largest remainders.
func apportion(ents []dist.Entry, n int) []int {
	c := make([]int, len(ents))
	rem := make([]int, len(ents))
	left := n
	for j, e := range ents {
		x := e.Weight * float64(n)
		c[j] = int(math.Floor(x))
		left -= c[j]
		rem[j] = j
	}
	sort.SliceStable(rem, func(a, b int) bool {
		fa := ents[rem[a]].Weight*float64(n) - float64(c[rem[a]])
		fb := ents[rem[b]].Weight*float64(n) - float64(c[rem[b]])
		return fa > fb
	})
	for k := 0; left > 0 && k < len(rem); k++ {
		c[rem[k]]++
		left--
	}
	return c
}

func (p Popularity) String() string { return p.Spec }

// Access is where I/O runs start.
type Access string

const (
	AccessRandom     Access = "random"     // runs start at a random (block-aligned) offset
	AccessSequential Access = "sequential" // runs start at offset 0
	AccessAppend     Access = "append"     // writes extend the file at its end
)

// MixEntry is one operation of the mix.
type MixEntry struct {
	Proc   nfs3.Proc
	Weight float64 // normalised: the entries of a mix sum to 1
}

// Workload is a parsed, validated workload.
type Workload struct {
	Name, Description string
	Source            string // "canned:NAME" or the file path

	// creation phase (seed 003 §3.1)
	FilesPerDir, DirsPerDir, SymlinksPerDir          dist.Dist
	MaxDepth                                         int
	FilePopularity, DirPopularity, SymlinkPopularity Popularity
	FileSize                                         dist.Dist

	// measurement phase (seed 003 §3.2)
	ReadSize, WriteSize dist.Dist
	// SeqRunOps: READs per sequential run; a sample ≤ 0 means "to the end of
	// the file" (keyword "whole"). WriteSeqRunOps: the same for WRITEs.
	SeqRunOps, WriteSeqRunOps dist.Dist
	ReadAccess, WriteAccess   Access
	Mix                       []MixEntry // normalised to 1, positive weights only, in RFC 1813 procedure order
	Rate                      float64    // optional default load level (ops/s); 0 = none

	// self-scaling (see package doc)
	FilesetPerOps   float64 // k: files per op/s
	FilesetMinFiles int

	Data content.Spec // what WRITEs carry (data.go)
}

// MixTarget returns the mix as {procedure name: fraction}.
func (w *Workload) MixTarget() map[string]float64 {
	m := make(map[string]float64, len(w.Mix))
	for _, e := range w.Mix {
		m[e.Proc.String()] = e.Weight
	}
	return m
}

// FilesetSize is the self-scaling rule: files = max(min, ⌈k·rate⌉), dirs = max(1, ⌈files/E[files_per_dir]⌉).
func (w *Workload) FilesetSize(rateOpsS float64) (files, dirs int) {
	k := w.FilesetPerOps
	if !(k >= 0) {
		k = DefaultFilesPerOps
	}
	if !(rateOpsS > 0) {
		rateOpsS = 0
	}
	files = int(math.Ceil(k*rateOpsS - 1e-9))
	if files < w.FilesetMinFiles {
		files = w.FilesetMinFiles
	}
	if files < 1 {
		files = 1
	}
	dirs = 1
	if w.FilesPerDir != nil {
		if m := w.FilesPerDir.Mean(); m >= 1 && !math.IsInf(m, 0) {
			dirs = int(math.Ceil(float64(files) / m))
		}
	}
	if dirs < 1 {
		dirs = 1
	}
	return files, dirs
}

// Defaults of the scaling rule.
const (
	DefaultFilesPerOps = 2.0
	DefaultMinFiles    = 16
)

// Load returns a canned workload by name, or parses the workload file at
// nameOrPath. An unknown name gives a one-line error listing the canned ones.
func Load(nameOrPath string) (*Workload, error) {
	return load(nameOrPath, 0)
}

func load(nameOrPath string, depth int) (*Workload, error) {
	if depth > 8 {
		return nil, fmt.Errorf("workload %q: base chain too deep (cycle?)", nameOrPath)
	}
	if nameOrPath == "" {
		return nil, fmt.Errorf("no workload given (canned: %s; or a path to a workload file)", strings.Join(cannedNames, ", "))
	}
	for _, n := range cannedNames {
		if nameOrPath == n {
			data, err := fs.ReadFile(cannedFS, "canned/"+n+".wl")
			if err != nil {
				return nil, err
			}
			w, err := parse(data, n+".wl", embedResolver, depth)
			if err != nil {
				return nil, err
			}
			w.Source = "canned:" + n
			return w, nil
		}
	}
	if _, err := os.Stat(nameOrPath); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("unknown workload %q: not a canned workload (%s) nor an existing file", nameOrPath, strings.Join(cannedNames, ", "))
	}
	data, err := ReadInput(nameOrPath)
	if err != nil {
		return nil, fmt.Errorf("workload file %v", err)
	}
	dir := filepath.Dir(nameOrPath)
	res := func(ref string) ([]byte, string, error) {
		if strings.HasPrefix(ref, "canned:") {
			return embedResolver(strings.TrimPrefix(ref, "canned:"))
		}
		p := ref
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		b, err := ReadInput(p)
		return b, p, err
	}
	w, err := parse(data, nameOrPath, res, depth)
	if err != nil {
		return nil, err
	}
	w.Source = nameOrPath
	return w, nil
}

// Parse parses workload text (name is used in errors and as the default
// workload name). "@file" references are resolved relative to the current
// directory; "@canned:NAME" to the shipped distribution files.
func Parse(data []byte, name string) (*Workload, error) {
	res := func(ref string) ([]byte, string, error) {
		if strings.HasPrefix(ref, "canned:") {
			return embedResolver(strings.TrimPrefix(ref, "canned:"))
		}
		b, err := ReadInput(ref)
		return b, ref, err
	}
	return parse(data, name, res, 0)
}

type resolver func(ref string) (data []byte, display string, err error)

func embedResolver(ref string) ([]byte, string, error) {
	p := path.Join("canned", path.Clean("/" + ref)[1:])
	b, err := fs.ReadFile(cannedFS, p)
	if err != nil {
		return nil, ref, fmt.Errorf("no canned file %q", ref)
	}
	return b, ref, nil
}

// lineErr is a "file:line: problem" error.
func lineErr(file string, line int, format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", file, line, fmt.Sprintf(format, a...))
}

func defaults(name string) *Workload {
	return &Workload{
		Name:              name,
		FilesPerDir:       dist.Const(32),
		DirsPerDir:        dist.Const(0),
		SymlinksPerDir:    dist.Const(0),
		MaxDepth:          1,
		FilePopularity:    Popularity{Kind: PopUniform, Spec: "uniform"},
		DirPopularity:     Popularity{Kind: PopUniform, Spec: "uniform"},
		SymlinkPopularity: Popularity{Kind: PopUniform, Spec: "uniform"},
		FileSize:          dist.Const(8192),
		ReadSize:          dist.Const(8192),
		WriteSize:         dist.Const(8192),
		SeqRunOps:         dist.Const(1),
		ReadAccess:        AccessRandom,
		WriteAccess:       AccessRandom,
		FilesetPerOps:     DefaultFilesPerOps,
		FilesetMinFiles:   DefaultMinFiles,
		Data:              content.Default(),
	}
}

// fileParser is the state of parsing one workload file.
type fileParser struct {
	w            *Workload
	file         string // name for errors
	res          resolver
	depth        int            // base-chain depth
	seen         map[string]int // key → line it was set on
	haveMix      bool           // a mix was set (by "mix" or inherited from a base)
	haveWriteSeq bool           // write_seq_run was set (or inherited from a base)
	shares       []MixEntry     // mix_share: fractions (0..1) applied by finish
}

// keySetters parses the value of each key but "base" (see setBase) into
// the workload; an error names the problem, and the caller prefixes it with
// "file:line: key: ".
var keySetters = map[string]func(p *fileParser, val string) error{
	"name":                  setName,
	"description":           setDescription,
	"files_per_dir":         setFilesPerDir,
	"dirs_per_dir":          setDirsPerDir,
	"symlinks_per_dir":      setSymlinksPerDir,
	"max_depth":             setMaxDepth,
	"file_popularity":       setFilePopularity,
	"dir_popularity":        setDirPopularity,
	"symlink_popularity":    setSymlinkPopularity,
	"file_size":             setFileSize,
	"mix":                   setMix,
	"read_size":             setReadSize,
	"write_size":            setWriteSize,
	"rate":                  setRate,
	"seq_run":               setSeqRun,
	"write_seq_run":         setWriteSeqRun,
	"read_access":           setReadAccess,
	"write_access":          setWriteAccess,
	"fileset_files_per_ops": setFilesetFilesPerOps,
	"fileset_min_files":     setFilesetMinFiles,
	"mix_share":             setMixShare,
	// and the data keys (data.go)
}

func parse(data []byte, file string, res resolver, depth int) (*Workload, error) {
	defName := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	p := &fileParser{w: defaults(defName), file: file, res: res, depth: depth, seen: map[string]int{}}
	var scanErr error
	for line, text := range dist.Lines(bytes.NewReader(data), &scanErr) {
		if err := p.parseLine(line, text); err != nil {
			return nil, err
		}
	}
	if scanErr != nil {
		return nil, fmt.Errorf("%s: %v", file, scanErr)
	}
	return p.finish()
}

// parseLine applies one "key = value" line: the key must be known and new,
// the value non-empty (but for description), base the first key.
func (p *fileParser) parseLine(line int, text string) error {
	eq := strings.IndexByte(text, '=')
	if eq < 0 {
		return lineErr(p.file, line, "expected key = value, got %q", text)
	}
	key := strings.ToLower(strings.TrimSpace(text[:eq]))
	val := strings.TrimSpace(text[eq+1:])
	set, known := keySetters[key]
	if !known && key != "base" {
		return lineErr(p.file, line, "unknown key %q", key)
	}
	if prev, ok := p.seen[key]; ok {
		return lineErr(p.file, line, "%s set twice (first on line %d)", key, prev)
	}
	p.seen[key] = line
	if val == "" && key != "description" {
		return lineErr(p.file, line, "%s: empty value", key)
	}
	var err error
	if key == "base" {
		if len(p.seen) != 1 {
			return lineErr(p.file, line, "base must be the first key")
		}
		err = p.setBase(val)
	} else {
		err = set(p, val)
	}
	if err != nil {
		return lineErr(p.file, line, "%s: %v", key, err)
	}
	return nil
}

// finish checks that there is a mix and defaults write_seq_run to seq_run.
func (p *fileParser) finish() (*Workload, error) {
	w := p.w
	if !p.haveMix || len(w.Mix) == 0 {
		return nil, fmt.Errorf("%s: no mix (add a line like \"mix = getattr:60, read:40\")", p.file)
	}
	if p.shares != nil {
		mix, err := applyShares(w.Mix, p.shares)
		if err != nil {
			return nil, lineErr(p.file, p.seen["mix_share"], "mix_share: %v", err)
		}
		w.Mix = mix
	}
	if !p.haveWriteSeq || w.WriteSeqRunOps == nil {
		w.WriteSeqRunOps = w.SeqRunOps
	}
	if err := w.Data.Check(); err != nil {
		var se *content.SpecError
		if errors.As(err, &se) && p.seen[se.Key] > 0 {
			return nil, lineErr(p.file, p.seen[se.Key], "%v", err)
		}
		return nil, fmt.Errorf("%s: %v", p.file, err)
	}
	return w, nil
}

// setBase starts from the workload val (canned name or file), keeping the
// name this file gives by default.
func (p *fileParser) setBase(val string) error {
	b, err := load(val, p.depth+1)
	if err != nil {
		return err
	}
	keepName := p.w.Name
	*p.w = *b
	p.w.Name = keepName
	p.haveMix = len(p.w.Mix) > 0
	p.haveWriteSeq = true
	return nil
}

func setName(p *fileParser, val string) error {
	if strings.ContainsAny(val, " \t/") {
		return fmt.Errorf("%q must not contain blanks or '/'", val)
	}
	p.w.Name = val
	return nil
}

func setDescription(p *fileParser, val string) error { p.w.Description = val; return nil }

// boundedDist parses a distribution whose values may not exceed limit (size: bytes).
func boundedDist(val string, res resolver, zeroOK bool, limit float64, size bool) (dist.Dist, error) {
	d, err := parseDist(val, res, zeroOK)
	if err == nil {
		err = atMost(d, limit, size)
	}
	return d, err
}

func setFilesPerDir(p *fileParser, val string) (err error) {
	if p.w.FilesPerDir, err = boundedDist(val, p.res, true, MaxPerDir, false); err != nil {
		return err
	}
	// directories are added until the file set has its files: each must bring some
	if m := p.w.FilesPerDir.Mean(); !(m >= 1) {
		return fmt.Errorf("must be ≥ 1 on average, got %g", m)
	}
	return nil
}

func setDirsPerDir(p *fileParser, val string) (err error) {
	p.w.DirsPerDir, err = boundedDist(val, p.res, true, MaxPerDir, false)
	return err
}

func setSymlinksPerDir(p *fileParser, val string) (err error) {
	p.w.SymlinksPerDir, err = boundedDist(val, p.res, true, MaxPerDir, false)
	return err
}

func setMaxDepth(p *fileParser, val string) error {
	n, err := strconv.Atoi(val)
	if err != nil || n < 0 || n > MaxTreeDepth {
		return fmt.Errorf("%q is not an integer in [0, %d]", val, MaxTreeDepth)
	}
	p.w.MaxDepth = n
	return nil
}

func setFilePopularity(p *fileParser, val string) (err error) {
	p.w.FilePopularity, err = parsePop(val, p.res)
	return err
}

func setDirPopularity(p *fileParser, val string) (err error) {
	p.w.DirPopularity, err = parsePop(val, p.res)
	return err
}

func setSymlinkPopularity(p *fileParser, val string) (err error) {
	p.w.SymlinkPopularity, err = parsePop(val, p.res)
	return err
}

func setFileSize(p *fileParser, val string) (err error) {
	p.w.FileSize, err = boundedDist(val, p.res, true, MaxFileSize, true)
	return err
}

func setReadSize(p *fileParser, val string) (err error) {
	p.w.ReadSize, err = boundedDist(val, p.res, false, MaxIOSize, true)
	return err
}

func setWriteSize(p *fileParser, val string) (err error) {
	p.w.WriteSize, err = boundedDist(val, p.res, false, MaxIOSize, true)
	return err
}

func setSeqRun(p *fileParser, val string) (err error) {
	p.w.SeqRunOps, err = parseRun(val, p.res)
	return err
}

func setWriteSeqRun(p *fileParser, val string) (err error) {
	p.w.WriteSeqRunOps, err = parseRun(val, p.res)
	p.haveWriteSeq = true
	return err
}

func setReadAccess(p *fileParser, val string) error {
	switch Access(val) {
	case AccessRandom, AccessSequential:
		p.w.ReadAccess = Access(val)
		return nil
	}
	return fmt.Errorf("%q is not random or sequential", val)
}

func setWriteAccess(p *fileParser, val string) error {
	switch Access(val) {
	case AccessRandom, AccessSequential, AccessAppend:
		p.w.WriteAccess = Access(val)
		return nil
	}
	return fmt.Errorf("%q is not random, sequential or append", val)
}

func setMix(p *fileParser, val string) (err error) {
	p.w.Mix, err = parseMix(val, p.res)
	p.haveMix = true
	return err
}

// setMixShare parses "op:percent, ..." (each in [0, 100], together ≤ 100).
func setMixShare(p *fileParser, val string) error {
	seen := map[nfs3.Proc]bool{}
	total := 0.0
	p.shares = []MixEntry{}
	for _, it := range strings.FieldsFunc(val, func(r rune) bool { return r == ',' || r == ';' }) {
		pn, ps, ok := strings.Cut(strings.TrimSpace(it), ":")
		if !ok {
			return fmt.Errorf("%q: want procedure:percent", strings.TrimSpace(it))
		}
		pn = strings.ToLower(strings.TrimSpace(pn))
		proc, known := nfs3.ProcByName(pn)
		if !known {
			return fmt.Errorf("unknown procedure %q", pn)
		}
		if seen[proc] {
			return fmt.Errorf("%s given twice", pn)
		}
		seen[proc] = true
		pct, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(ps), "%"), 64)
		if err != nil || !(pct >= 0 && pct <= 100) {
			return fmt.Errorf("share %q of %s is not a percentage in [0, 100]", strings.TrimSpace(ps), pn)
		}
		total += pct
		p.shares = append(p.shares, MixEntry{Proc: proc, Weight: pct / 100})
	}
	if len(p.shares) == 0 {
		return errors.New("no entries")
	}
	if total > 100+1e-9 {
		return fmt.Errorf("the shares sum to %g %%; at most 100", total)
	}
	return nil
}

// applyShares gives the shared operations their fractions and scales the
// others' weights to fill the rest: w_i' = w_i · (1 − Σ shares) / Σ_{j not shared} w_j.
func applyShares(mix, shares []MixEntry) ([]MixEntry, error) {
	set := map[nfs3.Proc]float64{}
	fixed := 0.0
	for _, s := range shares {
		set[s.Proc] = s.Weight
		fixed += s.Weight
	}
	restW := 0.0
	for _, e := range mix {
		if _, ok := set[e.Proc]; !ok {
			restW += e.Weight
		}
	}
	left := 1 - fixed
	if left < 1e-12 {
		left = 0
	}
	if left > 0 && restW == 0 {
		return nil, fmt.Errorf("the shares sum to %g %% and the mix has no other operation to take the rest", 100*fixed)
	}
	var out []MixEntry
	for _, e := range mix {
		if _, ok := set[e.Proc]; !ok && left > 0 {
			out = append(out, MixEntry{Proc: e.Proc, Weight: e.Weight * left / restW})
		}
	}
	for _, s := range shares {
		if s.Weight > 0 {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Proc < out[b].Proc })
	return out, nil
}

func setRate(p *fileParser, val string) error {
	rate, err := strconv.ParseFloat(val, 64)
	if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("%q is not a positive number", val)
	}
	if rate > MaxRate {
		return fmt.Errorf("%q is too large; at most %g ops/s", val, float64(MaxRate))
	}
	p.w.Rate = rate
	return nil
}

func setFilesetFilesPerOps(p *fileParser, val string) error {
	k, err := strconv.ParseFloat(val, 64)
	if err != nil || !(k >= 0) || math.IsInf(k, 0) {
		return fmt.Errorf("%q is not a non-negative number", val)
	}
	if k > MaxFilesPerOps {
		return fmt.Errorf("%q is too large; at most %g files per op/s", val, float64(MaxFilesPerOps))
	}
	p.w.FilesetPerOps = k
	return nil
}

func setFilesetMinFiles(p *fileParser, val string) error {
	n, err := strconv.Atoi(val)
	if err != nil || n < 1 || n > MaxFiles {
		return fmt.Errorf("%q is not an integer in [1, %d]", val, MaxFiles)
	}
	p.w.FilesetMinFiles = n
	return nil
}

// parseDist parses a distribution value; sizes/counts must be ≥ 0 (zeroOK)
// or > 0 (I/O sizes).
func parseDist(val string, res resolver, zeroOK bool) (dist.Dist, error) {
	var d dist.Dist
	switch {
	case strings.HasPrefix(val, "@"):
		ref := strings.TrimSpace(val[1:])
		data, disp, err := res(ref)
		if err != nil {
			return nil, err
		}
		e, err := dist.Parse(bytes.NewReader(data), disp)
		if err != nil {
			return nil, err
		}
		d = e
	case strings.HasPrefix(strings.ToLower(val), "pareto:"):
		p, err := dist.ParseParetoArgs(val[len("pareto:"):])
		if err != nil {
			return nil, err
		}
		return p, nil
	case strings.ContainsAny(val, ":"):
		e, err := dist.ParseInline(val, "inline")
		if err != nil {
			return nil, err
		}
		d = e
	default:
		v, err := dist.ParseValue(val)
		if err != nil {
			return nil, err
		}
		d = dist.Const(v)
	}
	min := minValue(d)
	if zeroOK && min < 0 {
		return nil, fmt.Errorf("negative value %g", min)
	}
	if !zeroOK && !(min > 0) {
		return nil, fmt.Errorf("values must be positive (got %g)", min)
	}
	return d, nil
}

func minValue(d dist.Dist) float64 {
	switch x := d.(type) {
	case dist.Const:
		return float64(x)
	case *dist.Empirical:
		m := math.Inf(1)
		for _, e := range x.Entries() {
			if e.Weight > 0 && e.Value < m {
				m = e.Value
			}
		}
		return m
	}
	return 0
}

func parseRun(val string, res resolver) (dist.Dist, error) {
	switch strings.ToLower(val) {
	case "whole", "eof", "file":
		return dist.Const(0), nil
	}
	return boundedDist(val, res, true, MaxRunOps, false)
}

func parsePop(val string, res resolver) (Popularity, error) {
	low := strings.ToLower(val)
	switch {
	case low == "uniform":
		return Popularity{Kind: PopUniform, Spec: "uniform"}, nil
	case strings.HasPrefix(low, "zipf:"):
		a, err := strconv.ParseFloat(strings.TrimSpace(val[5:]), 64)
		if err != nil || a < 0 || math.IsInf(a, 0) {
			return Popularity{}, fmt.Errorf("zipf alpha %q is not a non-negative number", val[5:])
		}
		return Popularity{Kind: PopZipf, Alpha: a, Spec: val}, nil
	}
	d, err := parseDist(val, res, true)
	if err != nil {
		return Popularity{}, err
	}
	if e, ok := d.(*dist.Empirical); ok && e.Max() <= 0 {
		return Popularity{}, errors.New("all popularity weights are zero")
	}
	if c, ok := d.(dist.Const); ok && c <= 0 {
		return Popularity{}, errors.New("popularity weight must be positive")
	}
	return Popularity{Kind: PopDist, Dist: d, Spec: val}, nil
}

func parseMix(val string, res resolver) ([]MixEntry, error) {
	src := val
	name := "mix"
	if strings.HasPrefix(val, "@") {
		data, disp, err := res(strings.TrimSpace(val[1:]))
		if err != nil {
			return nil, err
		}
		return parseMixLines(data, disp)
	}
	return parseMixList(strings.FieldsFunc(src, func(r rune) bool { return r == ',' || r == ';' }), name)
}

func parseMixLines(data []byte, disp string) ([]MixEntry, error) {
	var items []string
	var lines []int
	for i, l := range strings.Split(string(data), "\n") {
		if j := strings.IndexByte(l, '#'); j >= 0 {
			l = l[:j]
		}
		if l = strings.TrimSpace(l); l != "" {
			items = append(items, l)
			lines = append(lines, i+1)
		}
	}
	m, err := parseMixList(items, disp)
	if err != nil {
		var ie *itemErr
		if errors.As(err, &ie) {
			return nil, fmt.Errorf("%s:%d: %s", disp, lines[ie.i], ie.msg)
		}
	}
	return m, err
}

type itemErr struct {
	i   int
	msg string
}

func (e *itemErr) Error() string { return e.msg }

func parseMixList(items []string, name string) ([]MixEntry, error) {
	acc := map[nfs3.Proc]float64{}
	total := 0.0
	n := 0
	for i, it := range items {
		it = strings.TrimSpace(it)
		if it == "" {
			continue
		}
		n++
		c := strings.IndexByte(it, ':')
		if c < 0 {
			return nil, &itemErr{i, fmt.Sprintf("%q: want procedure:weight", it)}
		}
		pn := strings.ToLower(strings.TrimSpace(it[:c]))
		ws := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(it[c+1:]), "%"))
		p, ok := nfs3.ProcByName(pn)
		if !ok {
			return nil, &itemErr{i, fmt.Sprintf("unknown procedure %q", pn)}
		}
		wt, err := strconv.ParseFloat(ws, 64)
		if err != nil || math.IsNaN(wt) || math.IsInf(wt, 0) {
			return nil, &itemErr{i, fmt.Sprintf("weight %q of %s is not a number", ws, pn)}
		}
		if wt < 0 {
			return nil, &itemErr{i, fmt.Sprintf("negative weight %s for %s", ws, pn)}
		}
		acc[p] += wt
		total += wt
	}
	if n == 0 {
		return nil, errors.New("no entries")
	}
	if !(total > 0) {
		return nil, errors.New("total weight is zero")
	}
	if math.IsInf(total, 0) {
		return nil, errors.New("weights too large: their sum is not finite")
	}
	var out []MixEntry
	for p, wt := range acc {
		if wt > 0 {
			out = append(out, MixEntry{Proc: p, Weight: wt / total})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Proc < out[b].Proc })
	return out, nil
}
