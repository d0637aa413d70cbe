package results

// Drain is what the probe before a run saw while it waited for the server
// to be back at its idle round-trip time (package probe, the drain rule);
// it is recorded only when the server drained (a server that does not
// drain ends the run before its load). Times in µs, DrainS in s. A drain
// has one or two stages: NULL calls, then (when the run has a file set)
// READs of it; the record is the last stage's, with the NULL stage's in
// Null and DrainS the sum of both.
type Drain struct {
	DrainS    float64   `json:"drain_s"`     // from each stage's connect until its rule held (or the bound), summed
	Drained   bool      `json:"drained"`     // the rule held within the bound
	Probe     string    `json:"probe"`       // "null" or "read": the calls of this stage
	IdleRTTUs float64   `json:"idle_rtt_us"` // the idle level's reference RTT
	IdleFrom  string    `json:"idle_from"`   // "given" (flag), "state" (an earlier drain), "measured" (this one)
	LimitUs   float64   `json:"limit_us"`    // max(idle × factor, idle + margin)
	Probes    int       `json:"probes"`      // calls made
	MaxRTTUs  float64   `json:"max_rtt_us"`  // the slowest of them
	FirstUs   []float64 `json:"first_rtts_us"`
	LastUs    []float64 `json:"last_rtts_us"`   // the final window, whose statistic decided
	Null      *Drain    `json:"null,omitempty"` // the NULL stage before a READ stage
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
