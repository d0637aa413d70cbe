package rpc_test

import (
	"context"
	"encoding/hex"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/xdr"
)

func hexBytes(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Join(parts, ""), " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// PMAPPROC_DUMP results (RFC 1833 §3.1 pmaplist), hand-built: each entry is
// TRUE then prog, vers, prot, port; the list ends with FALSE.
func TestDecodeMappings(t *testing.T) {
	const (
		more = "00000001 "
		end  = "00000000"
	)
	rpcinfo := hexBytes(t,
		more, "000186a0 00000002 00000006 0000006f", // portmapper 2 tcp 111
		more, "000186a0 00000002 00000011 0000006f", // portmapper 2 udp 111
		more, "000186a3 00000003 00000006 00000801", // nfs 3 tcp 2049
		more, "000186a5 00000003 00000006 00004e45", // mountd 3 tcp 20037
		more, "000186b5 00000004 00000011 00008a3f", // nlockmgr 4 udp 35391
		end)
	m := func(prog, vers, prot, port uint32) rpc.Mapping {
		return rpc.Mapping{Prog: prog, Vers: vers, Prot: prot, Port: port}
	}
	want := []rpc.Mapping{
		m(100000, 2, rpc.IPProtoTCP, 111), m(100000, 2, rpc.IPProtoUDP, 111), m(100003, 3, rpc.IPProtoTCP, 2049),
		m(100005, 3, rpc.IPProtoTCP, 20037), m(100021, 4, rpc.IPProtoUDP, 35391),
	}
	got, err := rpc.DecodeMappings(rpcinfo)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v, want %v", got, err, want)
	}
	if got, err := rpc.DecodeMappings(hexBytes(t, end)); err != nil || got == nil || len(got) != 0 {
		t.Errorf("empty list: %#v %v", got, err)
	}
	// The inverse gives the same bytes.
	var e xdr.Encoder
	rpc.EncodeMappings(&e, want)
	if string(e.Bytes()) != string(rpcinfo) {
		t.Errorf("EncodeMappings:\n got %x\nwant %x", e.Bytes(), rpcinfo)
	}
	// Every strict prefix (no terminating FALSE, a cut mapping), trailing
	// data and a "value follows" that is not a boolean are malformed.
	for n := 0; n < len(rpcinfo); n++ {
		if _, err := rpc.DecodeMappings(rpcinfo[:n]); err == nil {
			t.Errorf("prefix %d/%d decoded without error", n, len(rpcinfo))
			break
		}
	}
	bad := [][]byte{
		append(append([]byte{}, rpcinfo...), 0, 0, 0, 0),
		hexBytes(t, "00000002 000186a0 00000002 00000006 0000006f", end),
		nil,
	}
	for _, b := range bad {
		if _, err := rpc.DecodeMappings(b); err == nil {
			t.Errorf("%x decoded without error", b)
		}
	}
}

func TestDump(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	_, portStr, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portStr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := rpc.Dump(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	if want := nullserver.Mappings(uint32(port)); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	if _, err := rpc.Dump(ctx, dead); err == nil || !strings.HasPrefix(err.Error(), "portmapper "+dead+": ") {
		t.Errorf("dead portmapper: %v", err)
	}
}
