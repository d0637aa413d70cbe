package engine

import (
	"sync"
	"time"

	"workbench/loadgen/internal/hoststat"
)

// stealWatch measures the host's steal share over the measured window: one
// /proc/stat reading when the warm-up ends (on a timer goroutine, off the
// metronome's path) and one when the sending stops.
type stealWatch struct {
	timer *time.Timer
	mu    sync.Mutex
	start hoststat.CPU
	ok    bool
}

func watchSteal(warmup time.Duration) *stealWatch {
	w := &stealWatch{}
	w.timer = time.AfterFunc(warmup, func() {
		c, err := hoststat.Read()
		w.mu.Lock()
		w.start, w.ok = c, err == nil
		w.mu.Unlock()
	})
	return w
}

// stop returns the steal share (%) since the warm-up ended; ok is false when
// the run stopped before the window began or /proc/stat is unreadable.
func (w *stealWatch) stop() (pct float64, ok bool) {
	w.timer.Stop()
	end, err := hoststat.Read()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil || !w.ok {
		return 0, false
	}
	return hoststat.StealPct(w.start, end)
}
