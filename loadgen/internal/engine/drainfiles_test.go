package engine

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/workload"
)

// DrainFiles finds a file's handle as the file-set lookup does (the null
// server's handles are a function of directory and name), with one LOOKUP
// per file once its directories are known, and the layout's sizes.
func TestDrainFilesLooksUpOnDemand(t *testing.T) {
	var lookups atomic.Int64
	addr := startNull(t, &nullserver.Server{Delay: func(prog, _, proc, _ uint32) time.Duration {
		if prog == nfs3.Program && proc == uint32(nfs3.ProcLookup) {
			lookups.Add(1)
		}
		return 0
	}})
	s := connect(t, addr, 2*time.Second, 1)
	w, _ := workload.Load("web_server")
	fs, err := PrepareFileset(context.Background(), s, w, 50, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rpc.Dial(addr, rpc.Options{Timeout: 2 * time.Second, Auth: rpc.HostAuthSys()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := NewDrainFiles(w, 50, s.Root)
	if d.Files() != len(fs.FileFH) || d.Files() != 100 {
		t.Fatalf("%d files, want the file set's %d (web_server at 50 ops/s: 100)", d.Files(), len(fs.FileFH))
	}
	want := func(i int) int64 { return int64(fs.Layout.Dirs[fs.Layout.Files[i].Dir].Depth) + 2 } // dirs from the base, the file
	lookups.Store(0)
	for _, i := range []int{len(fs.FileFH) - 1, 0} {
		fh, err := d.Handle(context.Background(), c, i)
		if err != nil || !bytes.Equal(fh, fs.FileFH[i]) || d.Size(i) != fs.Layout.Files[i].Size {
			t.Fatalf("file %d: handle %x, %v, size %d; want %x, size %d", i, fh, err, d.Size(i), fs.FileFH[i], fs.Layout.Files[i].Size)
		}
		if n := lookups.Swap(0); i == 0 && n != 1 || i != 0 && n != want(i) {
			t.Errorf("file %d (depth %d): %d LOOKUPs", i, fs.Layout.Dirs[fs.Layout.Files[i].Dir].Depth, n)
		}
	}
}
