package rpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"workbench/loadgen/internal/xdr"
)

// Portmapper (RFC 1833 §3, version 2) constants.
const (
	PmapProgram     = 100000
	PmapVersion     = 2
	PmapPort        = 111
	PmapProcNull    = 0
	PmapProcGetport = 3
	PmapProcDump    = 4
	IPProtoTCP      = 6
	IPProtoUDP      = 17
)

// Mapping is one portmapper registration (RFC 1833 §3.1 struct mapping):
// program prog version vers is served over protocol prot (IPProtoTCP or
// IPProtoUDP) on port port.
type Mapping struct {
	Prog, Vers, Prot, Port uint32
}

// GetPort asks the portmapper at addr (host or host:port; port 111 when
// omitted) over TCP for the TCP port of program prog version vers. A port of
// 0 (program not registered) is reported as an error. ctx bounds the whole
// exchange (without a deadline, DefaultTimeout does).
func GetPort(ctx context.Context, addr string, prog, vers uint32) (uint16, error) {
	addr = pmapAddr(addr)
	// PMAPPROC_GETPORT(mapping) returns unsigned int (RFC 1833 §3.1); the
	// mapping's port field is ignored (§3.2).
	what := fmt.Sprintf("GETPORT(%d, %d)", prog, vers)
	body, err := pmapCall(ctx, addr, PmapProcGetport, what, func(e *xdr.Encoder) {
		e.Uint32(prog)
		e.Uint32(vers)
		e.Uint32(IPProtoTCP)
		e.Uint32(0)
	})
	if err != nil {
		return 0, err
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

// Dump asks the portmapper at addr (host or host:port; port 111 when
// omitted) over TCP for every registration (PMAPPROC_DUMP), in the order it
// sends them. ctx bounds the whole exchange (without a deadline,
// DefaultTimeout does).
func Dump(ctx context.Context, addr string) ([]Mapping, error) {
	addr = pmapAddr(addr)
	body, err := pmapCall(ctx, addr, PmapProcDump, "DUMP", nil)
	if err != nil {
		return nil, err
	}
	ms, err := DecodeMappings(body)
	if err != nil {
		return nil, fmt.Errorf("portmapper %s: DUMP reply: %w", addr, err)
	}
	return ms, nil
}

// DecodeMappings decodes the result of PMAPPROC_DUMP, a pmaplist (RFC 1833
// §3.1: struct *pmaplist { mapping map; pmaplist next; }). In XDR that is
// optional-data (RFC 4506 §4.19): a boolean "value follows", then a mapping
// (prog, vers, prot, port) and the rest of the list, ending with FALSE.
// Trailing bytes are an error. The result is never nil.
func DecodeMappings(body []byte) ([]Mapping, error) {
	d := xdr.NewDecoder(body)
	ms := []Mapping{}
	for d.Bool() {
		if d.Remaining() < 16 {
			return nil, errors.New("truncated mapping")
		}
		ms = append(ms, Mapping{Prog: d.Uint32(), Vers: d.Uint32(), Prot: d.Uint32(), Port: d.Uint32()})
	}
	if d.Err() != nil {
		return nil, d.Err()
	}
	if d.Remaining() != 0 {
		return nil, fmt.Errorf("%d trailing bytes", d.Remaining())
	}
	return ms, nil
}

// EncodeMappings appends ms as a pmaplist, the inverse of DecodeMappings
// (for servers and tests).
func EncodeMappings(e *xdr.Encoder, ms []Mapping) {
	for _, m := range ms {
		e.Bool(true)
		e.Uint32(m.Prog)
		e.Uint32(m.Vers)
		e.Uint32(m.Prot)
		e.Uint32(m.Port)
	}
	e.Bool(false)
}

// pmapAddr adds the portmapper's port 111 to a bare host.
func pmapAddr(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return net.JoinHostPort(addr, strconv.Itoa(PmapPort))
	}
	return addr
}

// pmapCall connects to the portmapper at addr, makes one call of version 2
// procedure proc (named what in errors) and returns the result; ctx bounds
// the whole exchange (without a deadline, DefaultTimeout does). Errors
// start with "portmapper <addr>: ".
func pmapCall(ctx context.Context, addr string, proc uint32, what string, args func(*xdr.Encoder)) ([]byte, error) {
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
		return nil, fmt.Errorf("portmapper %s: %w", addr, err)
	}
	defer c.Close()
	body, err := c.CallContext(ctx, PmapProgram, PmapVersion, proc, args)
	if err != nil {
		return nil, fmt.Errorf("portmapper %s: %s: %w", addr, what, err)
	}
	return body, nil
}
