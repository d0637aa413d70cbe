//go:build !linux

package engine

import "errors"

// PinProcess is Linux-only.
func PinProcess(cpus []int) error { return errors.New("--cpus is Linux-only") }

func pinThread(int) {}
