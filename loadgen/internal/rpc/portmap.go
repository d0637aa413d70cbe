package rpc

import (
	"context"
	"fmt"
	"net"
	"time"

	"workbench/loadgen/internal/xdr"
)

// Portmapper (RFC 1833, version 2) constants.
const (
	PmapProgram     = 100000
	PmapVersion     = 2
	PmapProcNull    = 0
	PmapProcGetport = 3
	IPProtoTCP      = 6
	IPProtoUDP      = 17
)

// GetPort asks the portmapper at addr (host or host:port; port 111 when
// omitted) over TCP for the TCP port of program prog version vers. A port of
// 0 (program not registered) is reported as an error. ctx bounds the whole
// exchange (without a deadline, DefaultTimeout does).
func GetPort(ctx context.Context, addr string, prog, vers uint32) (uint16, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "111")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	timeout := DefaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	c, err := DialContext(ctx, addr, Options{Timeout: timeout})
	if err != nil {
		return 0, fmt.Errorf("portmapper %s: %w", addr, err)
	}
	defer c.Close()
	body, err := c.CallContext(ctx, PmapProgram, PmapVersion, PmapProcGetport, func(e *xdr.Encoder) {
		e.Uint32(prog)
		e.Uint32(vers)
		e.Uint32(IPProtoTCP)
		e.Uint32(0)
	})
	if err != nil {
		return 0, fmt.Errorf("portmapper %s: GETPORT(%d, %d): %w", addr, prog, vers, err)
	}
	d := xdr.NewDecoder(body)
	port := d.Uint32()
	if d.Err() != nil {
		return 0, fmt.Errorf("portmapper %s: GETPORT reply: %w", addr, d.Err())
	}
	if port == 0 || port > 65535 {
		return 0, fmt.Errorf("portmapper %s: program %d version %d is not registered for TCP", addr, prog, vers)
	}
	return uint16(port), nil
}
