package probe

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/rpc"
)

// ReadProbeBytes is the size of one READ of the drain's READ stage.
const ReadProbeBytes = 4096

// ErrNoData is a file set without a byte to READ: no READ stage.
var ErrNoData = errors.New("drain: no file of the file set has data to READ")

// DefaultReadMargin is the READ stage's margin: one random read of a
// disk at 100 IOPS (the quick profile's throttle; a 7200 rpm disk's seek
// and half a turn ≈ 8.5 + 4.2 ms), so that a READ that misses the cache of
// an idle server stays under the limit.
const DefaultReadMargin = 10 * time.Millisecond

// DefaultReadRank is the READ stage's statistic: the 2nd largest of the
// window. During a backlog cache hits return at once while misses wait
// behind the disk queue, so the stage ends only when at most one READ of
// the window still waits: with a fraction h of hits a backlog's window
// passes with the binomial probability h⁵ + 5h⁴(1−h) (0.19 at h = ½;
// the median: 0.5), an idle one, whose READs exceed the limit with
// probability s, fails with 1 − (1−s)⁵ − 5s(1−s)⁴ (7e-5 at the measured
// s = 4/1492; Feller vol. 1 §VI.2; loadgen/README.md).
const DefaultReadRank = 2

// DefaultReadDrain is the READ stage's rule with IdleRTT unknown: the NULL
// stage's window (5), factor (3) and gap (10 ms), with the margin of a
// cache miss and the window's 2nd largest RTT instead of its median.
func DefaultReadDrain() DrainConfig {
	c := DefaultDrain()
	c.Margin, c.Rank = DefaultReadMargin, DefaultReadRank
	return c
}

// ReadFiles is the file set the READ stage reads: Files() files, file i
// of Size(i) bytes, its handle from Handle — which may LOOKUP it on the
// drain's connection (the time counts as part of the probe).
type ReadFiles interface {
	Files() int
	Size(i int) uint64
	Handle(ctx context.Context, c *rpc.Client, i int) (nfs3.FH, error)
}

// Handles is a file set whose handles are known.
type Handles struct {
	FH    []nfs3.FH
	Sizes []uint64
}

func (h Handles) Files() int        { return min(len(h.FH), len(h.Sizes)) }
func (h Handles) Size(i int) uint64 { return h.Sizes[i] }
func (h Handles) Handle(_ context.Context, _ *rpc.Client, i int) (nfs3.FH, error) {
	return h.FH[i], nil
}

// readPicker picks the READs of the READ stage: a file uniformly among
// those with data, then a block of ReadProbeBytes uniformly among its
// blocks (the last one may be partial).
type readPicker struct {
	files ReadFiles
	data  []int // indices of the files with data
	rng   *rand.Rand
}

func newReadPicker(files ReadFiles, seed int64) (*readPicker, error) {
	p := &readPicker{files: files, rng: rand.New(rand.NewSource(seed))}
	for i := range files.Files() {
		if files.Size(i) > 0 {
			p.data = append(p.data, i)
		}
	}
	if len(p.data) == 0 {
		return nil, ErrNoData
	}
	return p, nil
}

// next is the next READ's file and offset.
func (p *readPicker) next() (file int, off uint64) {
	file = p.data[p.rng.Intn(len(p.data))]
	blocks := (p.files.Size(file) + ReadProbeBytes - 1) / ReadProbeBytes
	return file, uint64(p.rng.Int63n(int64(blocks))) * ReadProbeBytes
}

// readCall is the READ stage's call: the next READ of a readPicker, after
// the handle of its file (a LOOKUP, as the workload's cache-miss path:
// "a miss does a lookup and reads the file") — calls that wait behind the
// server's disk queue when their blocks are not cached.
func readCall(files ReadFiles, seed int64) (call, error) {
	p, err := newReadPicker(files, seed)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, c *rpc.Client) error {
		i, off := p.next()
		fh, err := files.Handle(ctx, c, i)
		if err != nil {
			return err
		}
		req := nfs3.Request{Proc: nfs3.ProcRead, FH: fh, Offset: off, Count: ReadProbeBytes}
		body, err := c.CallContext(ctx, nfs3.Program, nfs3.Version, uint32(nfs3.ProcRead), req.Encode)
		if err != nil {
			return err
		}
		rep, err := nfs3.DecodeReply(nfs3.ProcRead, body)
		if err == nil && rep.Status != 0 {
			err = fmt.Errorf("file %d offset %d: %s", i, off, nfs3.StatusString(rep.Status))
		}
		return err
	}, nil
}

// DrainRead is the READ stage of a drain: the drain rule with readCall's
// READs of files (seeded by seed) as its probe calls, cfg a ReadDrain rule.
func DrainRead(ctx context.Context, addr string, cfg DrainConfig, idleFrom string, files ReadFiles, seed int64) (*results.Drain, error) {
	probeCall, err := readCall(files, seed)
	if err != nil {
		return nil, err
	}
	return drain(ctx, addr, cfg, idleFrom, ProbeRead, probeCall)
}
