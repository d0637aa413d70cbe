//go:build race

package nfs4

const raceEnabled = true
