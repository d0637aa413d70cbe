// Package hoststat reads the host's CPU accounting from /proc/stat so that a
// result can say whether the hypervisor took the CPUs away while fstress ran.
//
// A send-lag breach has two causes that the lag alone cannot tell apart: the
// generator could not keep up, or the host (a VM) was not running at all.
// Steal time is the second one's trace. The first line of /proc/stat is
//
//	cpu  user nice system idle iowait irq softirq steal guest guest_nice
//
// in USER_HZ ticks summed over all CPUs (proc(5)). guest and guest_nice are
// already counted inside user and nice, so, as top(1) does for %st,
//
//	total = user + nice + system + idle + iowait + irq + softirq + steal
//	steal share over [a, b] = 100 · (steal_b − steal_a) / (total_b − total_a)  [%]
//
// i.e. the percentage of all the host's CPU time in the interval that was
// stolen. It is a ratio of ticks, so USER_HZ cancels out.
package hoststat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CPU is one reading of the aggregate "cpu" line, in USER_HZ ticks.
type CPU struct {
	Steal, Total uint64
	Idle         uint64 // idle + iowait: no task ran
}

// TicksPerSecond is USER_HZ, the unit of /proc/stat: 100 on Linux for
// every architecture user space sees (the kernel scales its own HZ to it).
const TicksPerSecond = 100

// Read reads /proc/stat.
func Read() (CPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPU{}, err
	}
	return Parse(string(b))
}

// Parse reads the aggregate "cpu" line of a /proc/stat text.
func Parse(text string) (CPU, error) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 9 { // kernels before 2.6.11 have no steal column
			return CPU{}, fmt.Errorf("/proc/stat: cpu line has %d fields, want >= 9 (with steal)", len(f))
		}
		var c CPU
		for i := 1; i <= 8; i++ { // user .. steal
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return CPU{}, fmt.Errorf("/proc/stat: cpu field %d: %v", i, err)
			}
			c.Total += v
			switch i {
			case 4, 5: // idle, iowait
				c.Idle += v
			case 8:
				c.Steal = v
			}
		}
		return c, nil
	}
	return CPU{}, fmt.Errorf("/proc/stat: no aggregate cpu line")
}

// StealPct is the share of the host's CPU time stolen between a and b, in %
// (formula in the package doc); ok is false when no tick passed or the
// counters went backwards.
func StealPct(a, b CPU) (pct float64, ok bool) {
	if b.Total <= a.Total || b.Steal < a.Steal {
		return 0, false
	}
	return 100 * float64(b.Steal-a.Steal) / float64(b.Total-a.Total), true
}
