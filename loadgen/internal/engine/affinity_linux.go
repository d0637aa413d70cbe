//go:build linux

package engine

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
)

type cpuMask [maxCPU / 64]uint64

func maskOf(cpus []int) *cpuMask {
	var m cpuMask
	for _, c := range cpus {
		m[c/64] |= 1 << (uint(c) % 64)
	}
	return &m
}

func setAffinity(tid int, m *cpuMask) error {
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), unsafe.Sizeof(*m), uintptr(unsafe.Pointer(m)))
	if e != 0 {
		return e
	}
	return nil
}

// PinProcess restricts every thread of the process to cpus (threads
// created later inherit it from their creators) — taskset -c from within.
func PinProcess(cpus []int) error {
	m := maskOf(cpus)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := setAffinity(tid, m); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("pinning to CPUs %s: %v", FormatCPUs(cpus), err)
		}
	}
	return nil
}

// pinThread locks the calling goroutine to its thread and the thread to
// cpu; the thread exits with the goroutine (it stays locked).
func pinThread(cpu int) {
	runtime.LockOSThread()
	setAffinity(0, maskOf([]int{cpu})) // best effort: a CPU outside the process's set fails
}
