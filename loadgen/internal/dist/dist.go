// Package dist holds the probability distributions of an fstress workload
// (seed 003 §5: "Distributions are histograms contained in text files
// following a simple value:weight syntax").
//
// # Distribution files
//
// A distribution file is UTF-8 text, one entry per line:
//
//	# web server file sizes (bytes)   ← '#' starts a comment (whole line or trailing)
//	1024:33                           ← value:weight
//	8K : 10                           ← blanks around ':' are fine
//	1M:1                              ← values take binary suffixes K, M, G, T (×1024^n)
//
// Blank lines and comments are ignored. A value is a decimal number
// (integer or float, optionally with a K/M/G/T suffix, case-insensitive,
// an optional trailing "B" or "iB" is accepted: "8KiB", "8KB", "8k" are all
// 8192). A weight is a non-negative decimal number; weights need not sum to
// 1 or 100, they are normalised. The same value may appear on several lines;
// its weights add.
//
// Errors name the file and line and the problem, e.g.
//
//	sizes.dist:3: negative weight -2
//	sizes.dist:4: weight "ten" is not a number
//	sizes.dist:5: missing ':' (want value:weight)
//	sizes.dist: no entries
//	sizes.dist: total weight is zero
//
// The same syntax is accepted inline (ParseInline) with entries separated by
// commas or semicolons: "1024:33, 2048:21".
//
// # Sampling
//
// Empirical samples by inversion of the cumulative weights with a binary
// search: O(log n) per sample, O(n) memory (sort.Search over the prefix sums).
package dist

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Dist is a one-dimensional distribution of non-negative values.
type Dist interface {
	// Sample draws one value using r.
	Sample(r *rand.Rand) float64
	// Mean is the expected value (+Inf if it does not exist).
	Mean() float64
}

// Empirical is a weighted discrete distribution (a histogram).
type Empirical struct {
	name    string
	values  []float64 // sorted ascending, distinct
	weights []float64 // raw weights, same order
	cum     []float64 // cum[i] = Σ_{j≤i} weights[j]
	total   float64
	mean    float64
}

// Entry is one value:weight pair.
type Entry struct {
	Value, Weight float64
}

// ParseError is the error returned by Parse and ParseFile.
type ParseError struct {
	Name string // file name (or the name given to Parse)
	Line int    // 1-based; 0 when the problem is the whole file
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Name, e.Msg)
}

// ParseFile reads a value:weight distribution file.
func ParseFile(path string) (*Empirical, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("distribution file %s: %v", path, pe.Err)
		}
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads a value:weight distribution from r; name is used in errors.
func Parse(r io.Reader, name string) (*Empirical, error) {
	var entries []Entry
	var scanErr error
	last := 0
	for line, text := range Lines(r, &scanErr) {
		e, err := parseEntry(text)
		if err != nil {
			return nil, &ParseError{Name: name, Line: line, Msg: err.Error()}
		}
		entries = append(entries, e)
		last = line
	}
	if scanErr != nil {
		return nil, &ParseError{Name: name, Line: last + 1, Msg: scanErr.Error()}
	}
	return build(name, entries)
}

// Lines yields the 1-based number and the text of every line of r that has content once a
// '#' comment and surrounding blanks are removed (the syntax of distribution and workload
// files). Lines up to 1 MiB; a read error or longer line ends the sequence and lands in *errp.
func Lines(r io.Reader, errp *error) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for line := 1; sc.Scan(); line++ {
			text := sc.Text()
			if i := strings.IndexByte(text, '#'); i >= 0 {
				text = text[:i]
			}
			if text = strings.TrimSpace(text); text != "" && !yield(line, text) {
				return
			}
		}
		*errp = sc.Err()
	}
}

// ParseInline parses "v:w, v:w; v:w" (entries separated by ',' or ';').
// Errors are "name: entry N: problem".
func ParseInline(s, name string) (*Empirical, error) {
	var entries []Entry
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' })
	for i, f := range fields {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		e, err := parseEntry(f)
		if err != nil {
			return nil, &ParseError{Name: name, Msg: fmt.Sprintf("entry %d (%q): %v", i+1, f, err)}
		}
		entries = append(entries, e)
	}
	return build(name, entries)
}

// New builds an Empirical from entries (same checks as Parse).
func New(name string, entries []Entry) (*Empirical, error) { return build(name, entries) }

func parseEntry(text string) (Entry, error) {
	i := strings.IndexByte(text, ':')
	if i < 0 {
		return Entry{}, errors.New("missing ':' (want value:weight)")
	}
	vs, ws := strings.TrimSpace(text[:i]), strings.TrimSpace(text[i+1:])
	if vs == "" {
		return Entry{}, errors.New("missing value before ':'")
	}
	if ws == "" {
		return Entry{}, errors.New("missing weight after ':'")
	}
	v, err := ParseValue(vs)
	if err != nil {
		return Entry{}, err
	}
	w, err := strconv.ParseFloat(ws, 64)
	if err != nil || math.IsNaN(w) || math.IsInf(w, 0) {
		return Entry{}, fmt.Errorf("weight %q is not a number", ws)
	}
	if w < 0 {
		return Entry{}, fmt.Errorf("negative weight %s", ws)
	}
	return Entry{Value: v, Weight: w}, nil
}

// ParseValue parses a number with an optional binary size suffix
// (K, M, G, T = 1024^1..4; optional trailing "B" or "iB"; case-insensitive).
func ParseValue(s string) (float64, error) {
	orig := s
	u := strings.ToUpper(strings.TrimSpace(s))
	u = strings.TrimSuffix(u, "IB")
	if strings.HasSuffix(u, "B") && len(u) > 1 && strings.ContainsAny(u[len(u)-2:len(u)-1], "KMGT") {
		u = u[:len(u)-1]
	}
	mult := 1.0
	if n := len(u); n > 0 {
		switch u[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			u = u[:n-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(u), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("value %q is not a number", orig)
	}
	if math.IsInf(v*mult, 0) { // 1e308K
		return 0, fmt.Errorf("value %q is not a finite number", orig)
	}
	return v * mult, nil
}

func build(name string, entries []Entry) (*Empirical, error) {
	if len(entries) == 0 {
		return nil, &ParseError{Name: name, Msg: "no entries"}
	}
	merged := map[float64]float64{}
	for _, e := range entries {
		if e.Weight < 0 || math.IsNaN(e.Weight) || math.IsInf(e.Weight, 0) {
			return nil, &ParseError{Name: name, Msg: fmt.Sprintf("bad weight %v for value %v", e.Weight, e.Value)}
		}
		merged[e.Value] += e.Weight
	}
	d := &Empirical{name: name}
	for v := range merged {
		d.values = append(d.values, v)
	}
	sort.Float64s(d.values)
	var sum, wsum float64
	for _, v := range d.values {
		w := merged[v]
		d.weights = append(d.weights, w)
		sum += w
		wsum += w * v
		d.cum = append(d.cum, sum)
	}
	if sum <= 0 {
		return nil, &ParseError{Name: name, Msg: "total weight is zero"}
	}
	if math.IsInf(sum, 0) || math.IsInf(wsum, 0) || math.IsNaN(wsum) {
		return nil, &ParseError{Name: name, Msg: "weights or values too large: their sum is not finite"}
	}
	d.total = sum
	d.mean = wsum / sum // E[X] = Σ w_i v_i / Σ w_i
	return d, nil
}

// Sample draws a value: u ~ U[0,total), return the first value whose
// cumulative weight exceeds u (inverse-CDF, binary search, O(log n)).
func (d *Empirical) Sample(r *rand.Rand) float64 {
	return d.At(r.Float64())
}

// At returns the value at quantile position u in [0,1) (inverse CDF).
func (d *Empirical) At(u float64) float64 {
	x := u * d.total
	i := sort.Search(len(d.cum), func(i int) bool { return d.cum[i] > x })
	if i >= len(d.values) {
		i = len(d.values) - 1
	}
	for d.weights[i] == 0 && i+1 < len(d.values) { // never return a zero-weight value
		i++
	}
	return d.values[i]
}

// Mean is Σ w_i v_i / Σ w_i.
func (d *Empirical) Mean() float64 { return d.mean }

// Name is the file name (or inline name) the distribution came from.
func (d *Empirical) Name() string { return d.name }

// Entries returns the distinct values (ascending) with their normalised
// probabilities (summing to 1).
func (d *Empirical) Entries() []Entry {
	out := make([]Entry, len(d.values))
	for i, v := range d.values {
		out[i] = Entry{Value: v, Weight: d.weights[i] / d.total}
	}
	return out
}

// Max is the largest value with a non-zero weight.
func (d *Empirical) Max() float64 {
	for i := len(d.values) - 1; i >= 0; i-- {
		if d.weights[i] > 0 {
			return d.values[i]
		}
	}
	return d.values[len(d.values)-1]
}

// Median is the value at cumulative probability 1/2.
func (d *Empirical) Median() float64 { return d.At(0.5) }

// String renders the distribution inline ("v:w, v:w"), probabilities as weights.
func (d *Empirical) String() string {
	var b strings.Builder
	for i, e := range d.Entries() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s:%s", strconv.FormatFloat(e.Value, 'g', -1, 64), strconv.FormatFloat(e.Weight, 'g', 6, 64))
	}
	return b.String()
}

// Const is a degenerate distribution that always yields its value.
type Const float64

// Sample returns the constant.
func (c Const) Sample(*rand.Rand) float64 { return float64(c) }

// Mean returns the constant.
func (c Const) Mean() float64 { return float64(c) }

// String renders the constant.
func (c Const) String() string { return strconv.FormatFloat(float64(c), 'g', -1, 64) }

// Zipf returns the n Zipf popularity weights w_i = 1/i^α, i = 1..n
// (seed 003 §5.2: "object i has a probability of access proportional to 1/i^α").
// alpha = 0 gives uniform weights.
func Zipf(n int, alpha float64) []float64 {
	if n <= 0 {
		return nil
	}
	w := make([]float64, n)
	for i := range w {
		w[i] = math.Pow(float64(i+1), -alpha) // w_i = i^(−α)
	}
	return w
}

// ZipfWeight is the weight of rank i (1-based): 1/i^α.
func ZipfWeight(rank int, alpha float64) float64 {
	if rank < 1 {
		rank = 1
	}
	return math.Pow(float64(rank), -alpha)
}

// ParetoDist is a (optionally upper-bounded) Pareto distribution of sizes.
type ParetoDist struct {
	Alpha, Xmin, Xmax float64 // Xmax = 0 or +Inf: unbounded
}

// Pareto returns the Pareto(α, x_min) distribution: P(X > x) = (x_min/x)^α for x ≥ x_min.
func Pareto(alpha, xmin float64) Dist {
	return &ParetoDist{Alpha: alpha, Xmin: xmin, Xmax: math.Inf(1)}
}

// BoundedPareto returns the Pareto distribution truncated to [xmin, xmax]
// (the "long tail out to 1 MB" of seed 003 §5.2, mail server).
func BoundedPareto(alpha, xmin, xmax float64) Dist {
	return &ParetoDist{Alpha: alpha, Xmin: xmin, Xmax: xmax}
}

func (p *ParetoDist) bounded() bool { return p.Xmax > 0 && !math.IsInf(p.Xmax, 1) }

// Sample draws by inversion.
func (p *ParetoDist) Sample(r *rand.Rand) float64 {
	u := r.Float64() // [0,1)
	if !p.bounded() {
		return p.Xmin / math.Pow(1-u, 1/p.Alpha) // X = x_min · (1−U)^(−1/α), 1−U ∈ (0,1]
	}
	ratio := math.Pow(p.Xmin/p.Xmax, p.Alpha)          // (L/H)^α
	return p.Xmin / math.Pow(1-u*(1-ratio), 1/p.Alpha) // bounded Pareto inverse CDF: X = L·(1 − U(1 − (L/H)^α))^(−1/α)
}

// Mean: α·x_min/(α−1) for α > 1 (unbounded, +Inf otherwise); bounded:
// E[X] = L^α/(1−(L/H)^α) · α/(α−1) · (L^(1−α) − H^(1−α)), and for α = 1:
// E[X] = L·H/(H−L) · ln(H/L).
func (p *ParetoDist) Mean() float64 {
	a, L, H := p.Alpha, p.Xmin, p.Xmax
	if !p.bounded() {
		if a <= 1 {
			return math.Inf(1)
		}
		return a * L / (a - 1) // E[X] = α x_min / (α − 1)
	}
	if a == 1 {
		return L * H / (H - L) * math.Log(H/L)
	}
	return math.Pow(L, a) / (1 - math.Pow(L/H, a)) * a / (a - 1) * (math.Pow(L, 1-a) - math.Pow(H, 1-a))
}

// String renders "pareto:α,xmin[,xmax]".
func (p *ParetoDist) String() string {
	if p.bounded() {
		return fmt.Sprintf("pareto:%g,%g,%g", p.Alpha, p.Xmin, p.Xmax)
	}
	return fmt.Sprintf("pareto:%g,%g", p.Alpha, p.Xmin)
}

// ParseParetoArgs parses "α,xmin[,xmax]" (values take size suffixes).
func ParseParetoArgs(s string) (Dist, error) {
	parts := strings.Split(s, ",")
	if len(parts) < 2 || len(parts) > 3 {
		return nil, fmt.Errorf("pareto wants alpha,xmin[,xmax], got %q", s)
	}
	var v [3]float64
	for i, p := range parts {
		x, err := ParseValue(p)
		if err != nil {
			return nil, fmt.Errorf("pareto: %v", err)
		}
		v[i] = x
	}
	if v[0] <= 0 {
		return nil, fmt.Errorf("pareto: alpha must be > 0, got %g", v[0])
	}
	if v[1] <= 0 {
		return nil, fmt.Errorf("pareto: xmin must be > 0, got %g", v[1])
	}
	if len(parts) == 3 {
		if v[2] <= v[1] {
			return nil, fmt.Errorf("pareto: xmax %g must exceed xmin %g", v[2], v[1])
		}
		return BoundedPareto(v[0], v[1], v[2]), nil
	}
	if v[0] <= 1 {
		return nil, fmt.Errorf("pareto: unbounded Pareto needs alpha > 1 for a finite mean (got %g); give xmax", v[0])
	}
	return Pareto(v[0], v[1]), nil
}
