//go:build !linux

package engine

import "time"

type sleeper struct{ ch chan struct{} }

func newSleeper() *sleeper { return &sleeper{ch: make(chan struct{}, 1)} }
func (s *sleeper) notify() {
	select {
	case s.ch <- struct{}{}:
	default:
	}
}
func (s *sleeper) arm(now int64, d time.Duration) { go func() { time.Sleep(d); s.notify() }() }
func (s *sleeper) wait(done <-chan struct{}) {
	select {
	case <-s.ch:
	case <-done:
	}
}
func (s *sleeper) close() {}
