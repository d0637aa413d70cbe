// Command fstress is the NFSv3 open-loop workload generator (seed 003):
//
//	fstress run       measure one trial at a fixed offered rate, write JSON
//	fstress fileset   create / augment the file set for a workload and rate
//	fstress check     validate a workload, its files and its file set (no server)
//	fstress workloads list the canned workloads
//	fstress merge     merge the JSON results of several clients exactly
//	fstress probe     describe an NFSv3 server as a client sees it, as JSON
//	fstress nullserver answer every MOUNT/NFS call with success (capacity tests)
//	fstress agent     resident: run trials on request (JSON lines on stdin/stdout), keep connections and file set
//
// Exit codes: 0 success; 1 error (unreachable server, refused export, NFS
// failure, ...; one line on stderr, no JSON file); 2 a refusal of the input
// (unknown command or flag, a value out of range, an unknown workload, results
// that do not merge; one line naming it); 3 generator saturated (the JSON file is written, with
// generator_saturated: true); 4 server not drained before the run (no
// load sent, no JSON file).
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitSaturated  = 3
	exitNotDrained = 4
)

func main() {
	// FSTRESS_CPUPROFILE=file writes a Go CPU profile (performance work).
	if p := os.Getenv("FSTRESS_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			pprof.StartCPUProfile(f)
			code := run(os.Args[1:], os.Stdout, os.Stderr)
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: fstress <command> [flags]
  run        --server HOST:PORT --export PATH --workload NAME|FILE --rate OPS --duration S --warmup S --json FILE
             [--mount-port PORT] [--poisson] [--conns N] [--start-at T] [--timeout D] [--retransmits N] [--seed N]
             [--client-id N] [--fileset-rate OPS] [--max-outstanding N] [--lag-bound D] [--interval D]
             [--drain-timeout D] [--drain-idle-rtt D] [--drain-state FILE] [--drain-factor F]
             [--drain-margin D] [--drain-window K] [--drain-probe read|null] [--drain-read-margin D]
             [--nfs-version 3|4.1]   (4.1: no portmapper/MOUNT, --export is the pseudo path, port 0 = 2049)
             [--shards N] [--cpus LIST] [--quantum D] [--beside-null-gap D]
             [--compress-ratio R|zeros] [--dedupe-pct P] [--data-unit BYTES]   (what WRITEs carry)
  fileset    --server HOST:PORT --export PATH --workload NAME|FILE --rate OPS [--mount-port PORT]
             [--nfs-version 3|4.1] [--compress-ratio R|zeros] [--dedupe-pct P] [--data-unit BYTES]
  check      --workload NAME|FILE [--fileset-rate OPS | --rate OPS] [--json] [any other run flag]
             validate without a server: exit 0 with a one-line summary, 2 with one line naming the field
  workloads  list the canned workloads
  merge      a.json b.json ... [--json OUT]
  probe      --server HOST[:PORT] --export PATH [--mount-port PORT] [--pings N] [--timeout D] [--json FILE]
             [--portmap-port PORT] [--nfs-version 3|4.1]
  nullserver --listen HOST:PORT
  agent      [--deployment ID] [--pid-file FILE] [--metrics-addr HOST:PORT]   JSON lines on stdin/stdout:
             {"id","op":"run","args":[run flags]}, ping, cancel, reset, quit; each run's reply carries the
             JSON of fstress run (README: Agent); --metrics-addr: the live view on HOST:PORT/metrics
`

// command is a subcommand: what runs it (args are those after its name)
// and one line of help.
type command struct {
	fn   func(args []string, stdout, stderr io.Writer) int
	help string
}

// commands are the subcommands by name; the package doc, usage and the
// unknown-command line of run name them all (TestCommandsListed).
var commands = map[string]command{
	"run":        {cmdRun, "measure one trial at a fixed offered rate, write JSON"},
	"fileset":    {cmdFileset, "create / augment the file set for a workload and rate"},
	"check":      {cmdCheck, "validate a workload, its files and its file set (no server)"},
	"workloads":  {cmdWorkloads, "list the canned workloads"},
	"merge":      {cmdMerge, "merge the JSON results of several clients exactly"},
	"probe":      {cmdProbe, "describe an NFSv3 server as a client sees it, as JSON"},
	"nullserver": {cmdNullserver, "answer every MOUNT/NFS call with success (capacity tests)"},
	"agent":      {cmdAgent, "resident: run trials on request (JSON lines on stdin/stdout), keep connections and file set"},
}

// run is main without os.Exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	if cmd, ok := commands[args[0]]; ok {
		return cmd.fn(args[1:], stdout, stderr)
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	errLine(stderr, "unknown command %q (want run, fileset, check, workloads, merge, probe, nullserver or agent)", args[0])
	return exitUsage
}
