package workload

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"

	"workbench/loadgen/internal/dist"
)

// Bounds on what a workload may ask for. Every workload (canned or file) is held to them when it
// is loaded, and its file set when it is sized for a rate (CheckFileset), so that a bad workload
// fails in one line before any server is contacted: without them `files_per_dir = 0` grows the
// directory tree forever, `@/dev/zero` is read without end and `1e308K` becomes +Inf.
// `fstress check` runs exactly these checks, without a server.
const (
	MaxFileSize    = 1 << 40  // bytes per file (1 TiB)
	MaxIOSize      = 16 << 20 // bytes per READ / WRITE
	MaxPerDir      = 100000   // files, subdirectories or symlinks one directory draws
	MaxTreeDepth   = 64       // max_depth
	MaxRunOps      = 1000000  // READs / WRITEs of one sequential run
	MaxRate        = 1e7      // ops/s (rate, and the rate a file set is sized for)
	MaxFilesPerOps = 1e4      // fileset_files_per_ops
	MaxFiles       = 10000000 // files of a file set
	MaxDirs        = 10000000 // directories of a file set
	MaxSymlinks    = 10000000 // symlinks of a file set
	// MaxSymlinksPerFile bounds symlinks by the files the set is sized for: the self-scaling rule
	// sizes a file set by its files (fileset_files_per_ops), and links beyond a few per file make
	// it a different, far larger set (10⁷ links beside 100 files passed MaxSymlinks).
	MaxSymlinksPerFile = 16
	MaxFilesetBytes    = 1 << 40  // data of a file set (1 TiB)
	MaxInputBytes      = 16 << 20 // a workload, distribution or mix file
)

// sizeText renders a byte count with a binary suffix ("16M", "1T").
func sizeText(b float64) string {
	for _, u := range []struct {
		s string
		v float64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}} {
		if b >= u.v {
			return fmt.Sprintf("%.4g%s", b/u.v, u.s)
		}
	}
	return fmt.Sprintf("%.4g", b)
}

// ReadInput reads a workload, distribution or mix file: a regular file (not a directory, device
// or FIFO) of at most MaxInputBytes, opened without blocking and read with that limit.
func ReadInput(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read %s: %v", path, err)
	}
	if err := regularInput(path, st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read %s: %v", path, err)
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil { // the file opened, not the one stat'ed before
		return nil, fmt.Errorf("cannot read %s: %v", path, err)
	}
	if err := regularInput(path, st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %v", path, err)
	}
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("%s is larger than %s; at most %s", path, sizeText(MaxInputBytes), sizeText(MaxInputBytes))
	}
	return data, nil
}

func regularInput(path string, st os.FileInfo) error {
	switch {
	case st.IsDir():
		return fmt.Errorf("%s is a directory; want a regular file of at most %s", path, sizeText(MaxInputBytes))
	case !st.Mode().IsRegular():
		kind := "not a regular file"
		switch t := st.Mode().Type(); {
		case t&fs.ModeNamedPipe != 0:
			kind = "a FIFO"
		case t&fs.ModeSocket != 0:
			kind = "a socket"
		case t&fs.ModeDevice != 0:
			kind = "a device"
		}
		return fmt.Errorf("%s is %s; want a regular file of at most %s", path, kind, sizeText(MaxInputBytes))
	case st.Size() > MaxInputBytes:
		return fmt.Errorf("%s is %d bytes; at most %s", path, st.Size(), sizeText(MaxInputBytes))
	}
	return nil
}

// maxValue is the largest value d can yield (+Inf for an unbounded Pareto).
func maxValue(d dist.Dist) float64 {
	switch x := d.(type) {
	case dist.Const:
		return float64(x)
	case *dist.Empirical:
		return x.Max()
	case *dist.ParetoDist:
		if x.Xmax > 0 && !math.IsInf(x.Xmax, 1) {
			return x.Xmax
		}
		return math.Inf(1)
	}
	return math.Inf(1)
}

// atMost refuses a distribution that can yield more than limit (what: "bytes", "files", ...).
func atMost(d dist.Dist, limit float64, size bool) error {
	m := maxValue(d)
	text := func(x float64) string {
		if size {
			return sizeText(x)
		}
		return fmt.Sprintf("%g", x)
	}
	if math.IsInf(m, 1) {
		return fmt.Errorf("unbounded (a Pareto without xmax); give pareto:alpha,xmin,xmax with xmax ≤ %s", text(limit))
	}
	if m > limit {
		return fmt.Errorf("value %s is too large; at most %s", text(m), text(limit))
	}
	if mean := d.Mean(); math.IsNaN(mean) || math.IsInf(mean, 0) {
		return fmt.Errorf("mean %g is not finite", mean)
	}
	return nil
}

// FilesetEstimate is the file set of a workload at a rate: its counts and data volume. From
// CheckFileset it is the expectation (E[files_per_dir], E[file_size], ...); the caller may
// replace it by the exact layout (engine.GenLayout).
type FilesetEstimate struct {
	Rate     float64 `json:"fileset_rate"`
	Files    int64   `json:"files"`
	Dirs     int64   `json:"dirs"`
	Symlinks int64   `json:"symlinks"`
	Bytes    float64 `json:"fileset_bytes"`
	MaxFile  float64 `json:"max_file_bytes"`
	Exact    bool    `json:"exact"`
}

// CheckFileset sizes the file set for rate (the self-scaling rule, FilesetSize) and refuses one
// beyond MaxFiles, MaxDirs, MaxSymlinks or MaxFilesetBytes, naming the knobs that set it.
func (w *Workload) CheckFileset(rate float64) (FilesetEstimate, error) {
	e := FilesetEstimate{Rate: rate}
	if math.IsNaN(rate) || rate < 0 || rate > MaxRate {
		return e, fmt.Errorf("file set rate %g ops/s: must be in [0, %g]", rate, float64(MaxRate))
	}
	files := math.Max(math.Max(float64(w.FilesetMinFiles), math.Ceil(w.FilesetPerOps*rate-1e-9)), 1)
	why := fmt.Sprintf("at %g ops/s (fileset_files_per_ops %g, fileset_min_files %d)", rate, w.FilesetPerOps, w.FilesetMinFiles)
	if files > MaxFiles {
		return e, fmt.Errorf("file set: %.0f files %s; at most %d: lower the rate the file set is sized for or fileset_files_per_ops",
			files, why, MaxFiles)
	}
	fpd := w.FilesPerDir.Mean()
	if !(fpd >= 1) || math.IsInf(fpd, 0) {
		return e, fmt.Errorf("files_per_dir: must be ≥ 1 on average, got %g", fpd)
	}
	processed := math.Ceil(files / fpd) // directories that draw files before the set has them all
	dirs, links := 1.0, w.SymlinksPerDir.Mean()
	if w.MaxDepth > 0 {
		// directories above max_depth draw subdirectories (breadth first, so the shallow ones
		// come first); every directory drawn is created, processed or not
		dpd, shallow, level := w.DirsPerDir.Mean(), 0.0, 1.0
		for d := 0; d < w.MaxDepth && shallow < processed; d++ {
			shallow += level
			level *= dpd
		}
		dirs = math.Max(processed, 1+math.Min(shallow, processed)*dpd)
		links = processed * w.SymlinksPerDir.Mean()
	}
	bytes := files * w.FileSize.Mean()
	e.Files, e.Dirs, e.Symlinks, e.Bytes, e.MaxFile = int64(files), int64(math.Ceil(dirs)), int64(math.Ceil(links)), bytes, maxValue(w.FileSize)
	switch {
	case dirs > MaxDirs:
		return e, fmt.Errorf("file set: about %.0f directories %s (files_per_dir mean %g, dirs_per_dir mean %g); at most %d",
			dirs, why, fpd, w.DirsPerDir.Mean(), MaxDirs)
	case links > MaxSymlinks:
		return e, fmt.Errorf("file set: about %.0f symlinks %s (symlinks_per_dir mean %g); at most %d",
			links, why, w.SymlinksPerDir.Mean(), MaxSymlinks)
	case links > MaxSymlinksPerFile*files:
		return e, fmt.Errorf("file set: about %.0f symlinks for %.0f files %s (symlinks_per_dir mean %g); at most %d per file",
			links, files, why, w.SymlinksPerDir.Mean(), MaxSymlinksPerFile)
	case !(bytes <= MaxFilesetBytes):
		return e, fmt.Errorf("file set: about %s of data %s (file_size mean %s); at most %s",
			sizeText(bytes), why, sizeText(w.FileSize.Mean()), sizeText(MaxFilesetBytes))
	}
	return e, nil
}
