package main

import (
	"io"

	"workbench/loadgen/internal/probe"
)

// cmdProbe describes a server (package probe) as JSON on stdout or in the
// --json file, written only when the probe succeeded.
func cmdProbe(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("probe")
	cfg := probe.Config{Pings: probe.DefaultPings, Timeout: probe.DefaultTimeout}
	var jsonPath string
	fs.StringVar(&cfg.Server, "server", "", "NFS server HOST[:PORT] (no port: ask the portmapper)")
	fs.StringVar(&cfg.Export, "export", "", "export path")
	fs.IntVar(&cfg.MountPort, "mount-port", 0, "MOUNT v3 port (0: ask the portmapper on the server host)")
	fs.IntVar(&cfg.PortmapPort, "portmap-port", 111, "portmapper port on the server host")
	fs.IntVar(&cfg.Pings, "pings", cfg.Pings, "NULL calls timed for the round-trip time (1..1000)")
	fs.Var(durationValue{&cfg.Timeout}, "timeout", "per connect or call (seconds or duration)")
	fs.StringVar(&jsonPath, "json", "", "write the JSON here instead of stdout")
	fs.StringVar(&cfg.NFSVersion, "nfs-version", "3", "NFS version: 3, or 4.1 (no portmapper, no MOUNT; port 2049 unless given; --export is the pseudo path)")
	if !parseFlags(fs, args, stderr) {
		return exitUsage
	}
	err := cfg.Check()
	if err == nil && jsonPath != "" {
		err = checkJSONPath(jsonPath)
	}
	if err != nil { // a refusal of the input: one line, exit 2
		errLine(stderr, "probe: %v", err)
		return exitUsage
	}
	ctx, cancel := signalContext()
	defer cancel()
	res, err := probe.Run(ctx, cfg)
	if err != nil {
		errLine(stderr, "probe: %v", err)
		return exitError
	}
	if jsonPath == "" {
		err = res.WriteJSON(stdout)
	} else {
		err = res.WriteJSONFile(jsonPath)
	}
	if err != nil {
		errLine(stderr, "probe: %v", err)
		return exitError
	}
	return exitOK
}
