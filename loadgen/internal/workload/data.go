package workload

import (
	"fmt"
	"strconv"
	"strings"

	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/dist"
)

// The data keys say what WRITEs carry (package content): compress_ratio
// ("zeros", or a unit's size over its compressed size, 1 = incompressible),
// dedupe_pct (the share of units that repeat another, 0–100) and data_unit
// (the unit of both, a power of two in bytes). Defaults: 1, 0, 4 KiB.

func setCompressRatio(p *fileParser, val string) error {
	return SetCompressRatio(&p.w.Data, val)
}

func setDedupePct(p *fileParser, val string) error {
	return SetDedupePct(&p.w.Data, val)
}

func setDataUnit(p *fileParser, val string) error {
	return SetDataUnit(&p.w.Data, val)
}

// SetCompressRatio parses "zeros" or a ratio ≥ 1 into d (the workload key
// and fstress's --compress-ratio); the range is checked by content.Spec.Check.
func SetCompressRatio(d *content.Spec, val string) error {
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

// SetDedupePct parses a percentage ("30" or "30%") into d.
func SetDedupePct(d *content.Spec, val string) error {
	x, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(val), "%"), 64)
	if err != nil {
		return fmt.Errorf("%q is not a percentage", val)
	}
	d.DedupePct = x
	return nil
}

// SetDataUnit parses a size ("4096", "4K", "4KiB") into d.
func SetDataUnit(d *content.Spec, val string) error {
	x, err := dist.ParseValue(strings.TrimSpace(val))
	if err != nil || x != float64(int(x)) {
		return fmt.Errorf("%q is not a whole number of bytes", val)
	}
	d.UnitBytes = int(x)
	return nil
}
