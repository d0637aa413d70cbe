package results

// Drain is what the probe before a run saw while it waited for the server
// to be back at its idle round-trip time (package probe, DrainRule); it is
// recorded only when the server drained (a server that does not drain ends
// the run before its load). Times in µs, DrainS in s.
type Drain struct {
	DrainS    float64   `json:"drain_s"`     // from the probe's connect until the rule held (or the bound)
	Drained   bool      `json:"drained"`     // the rule held within the bound
	IdleRTTUs float64   `json:"idle_rtt_us"` // the idle level's reference RTT
	IdleFrom  string    `json:"idle_from"`   // "given" (flag), "state" (an earlier drain), "measured" (this one)
	LimitUs   float64   `json:"limit_us"`    // max(idle × factor, idle + margin)
	Probes    int       `json:"probes"`      // NULL calls made
	MaxRTTUs  float64   `json:"max_rtt_us"`  // the slowest of them
	FirstUs   []float64 `json:"first_rtts_us"`
	LastUs    []float64 `json:"last_rtts_us"` // the final window, whose median decided
}

// mergeDrain keeps the drain of the host that waited longest (the trial
// started when the last host had drained) and is drained only if all were.
// Results without a drain (the probe turned off) are skipped.
func mergeDrain(rs []*Result) *Drain {
	var out *Drain
	all := true
	for _, r := range rs {
		d := r.Drain
		if d == nil {
			continue
		}
		all = all && d.Drained
		if out == nil || d.DrainS > out.DrainS {
			c := *d
			out = &c
		}
	}
	if out != nil {
		out.Drained = all
	}
	return out
}
