package workload

import (
	"fmt"
	"strconv"
	"strings"

	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/dist"
)

// DataKey is a workload key that says what WRITEs carry (package content):
// its parser into the workload's content.Spec and its help. fstress's flags
// of the same names (--compress-ratio, ...) take the same values.
type DataKey struct {
	Key  string
	Set  func(d *content.Spec, val string) error
	Help string
}

// DataKeys are the data keys, in the order they are applied; the range of
// the whole spec is checked afterwards (content.Spec.Check).
var DataKeys = []DataKey{
	{"compress_ratio", setCompressRatio, "what WRITEs carry: a unit's size over its compressed size (1: incompressible), or zeros (default 1)"},
	{"dedupe_pct", setDedupePct, "share of written units that repeat another, percent (default 0)"},
	{"data_unit", setDataUnit, "unit of compression and deduplication, bytes, a power of two (default 4K)"},
}

func init() { // the data keys join the workload file's keys
	for _, k := range DataKeys {
		keySetters[k.Key] = func(p *fileParser, val string) error { return k.Set(&p.w.Data, val) }
	}
}

// setCompressRatio parses "zeros" or a ratio ≥ 1 into d.
func setCompressRatio(d *content.Spec, val string) error {
	if strings.EqualFold(strings.TrimSpace(val), "zeros") {
		d.Zeros = true
		return nil
	}
	x, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
	if err != nil {
		return fmt.Errorf("%q is not a number or zeros", val)
	}
	d.Zeros, d.CompressRatio = false, x
	return nil
}

// setDedupePct parses a percentage ("30" or "30%") into d.
func setDedupePct(d *content.Spec, val string) error {
	x, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(val), "%"), 64)
	if err != nil {
		return fmt.Errorf("%q is not a percentage", val)
	}
	d.DedupePct = x
	return nil
}

// setDataUnit parses a size ("4096", "4K", "4KiB") into d.
func setDataUnit(d *content.Spec, val string) error {
	x, err := dist.ParseValue(strings.TrimSpace(val))
	if err != nil || x != float64(int(x)) {
		return fmt.Errorf("%q is not a whole number of bytes", val)
	}
	d.UnitBytes = int(x)
	return nil
}
