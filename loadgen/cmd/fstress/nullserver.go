package main

import (
	"fmt"
	"io"
	"net"

	"workbench/loadgen/internal/nullserver"
)

// cmdNullserver is `fstress nullserver`: serve until interrupted.
func cmdNullserver(args []string, _, stderr io.Writer) int {
	fs := newFlagSet("nullserver")
	listen := fs.String("listen", "127.0.0.1:2049", "HOST:PORT to listen on (MOUNT, NFS and portmapper GETPORT all on it)")
	if !parseFlags(fs, args, stderr) {
		return exitUsage
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		errLine(stderr, "nullserver: %v", err)
		return exitError
	}
	fmt.Fprintf(stderr, "fstress: nullserver listening on %s\n", ln.Addr())
	ctx, cancel := signalContext()
	defer cancel()
	if err := nullserver.Serve(ctx, ln); err != nil && ctx.Err() == nil {
		errLine(stderr, "nullserver: %v", err)
		return exitError
	}
	return exitOK
}
