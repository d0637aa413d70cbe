//go:build linux

package engine

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// sleepThread sleeps d (≤ a few ms: the fine waits) on the calling thread
// with a raw nanosleep: the thread keeps its P, so the Go scheduler does
// not park it in the netpoller, where socket events would wake it too.
func sleepThread(d time.Duration) {
	if d > 0 {
		ts := syscall.NsecToTimespec(int64(d))
		syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0) // EINTR: wake early, re-plan
	}
}

// exactThread locks the goroutine to its thread (it stays locked: the
// thread ends with the goroutine) and sets the thread's timer slack to
// 1 ns, so that sleepThread wakes on time (the default slack lets a
// nanosleep end up to 50 µs late).
func exactThread() {
	runtime.LockOSThread()
	syscall.RawSyscall(syscall.SYS_PRCTL, 29 /* PR_SET_TIMERSLACK */, 1, 0)
}
