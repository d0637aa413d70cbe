//go:build !linux

package engine

import "time"

func sleepThread(d time.Duration) { time.Sleep(d) }

func exactThread() {}
