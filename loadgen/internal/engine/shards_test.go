package engine

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/pace"
	"workbench/loadgen/internal/results"
	"workbench/loadgen/internal/workload"
)

// schedCall is one call of a schedule: its index, intended time and procedure.
type schedCall struct {
	t  time.Duration
	op nfs3.Proc
}

// shardSchedule lists the first m calls that shard k of n sends.
func shardSchedule(t *testing.T, w *workload.Workload, poisson bool, k, n, m int) []schedCall {
	p, err := pace.New(1000, poisson, 8)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{pacer: p, sched: workload.NewScheduler(w.Mix, 7), shard: k, nshards: n}
	if n > 1 {
		r.pacer = shardPacer{p: p, k: int64(k), n: int64(n)}
	}
	var out []schedCall
	for j := int64(0); j < int64(m); j++ {
		out = append(out, schedCall{r.pacer.Next(j), r.nextOp()})
	}
	return out
}

// The calls of 2 (and 3) shards, put back in schedule order (call j·n+k is
// shard k's j-th), are the single schedule: same times, same procedures,
// none twice, none skipped.
func TestShardsSplitOneSchedule(t *testing.T) {
	w := loadWL(t, "name = t_sh\nmix = getattr:50, lookup:20, read:20, write:5, readdir:3, fsstat:2\n")
	for _, poisson := range []bool{false, true} {
		one := shardSchedule(t, w, poisson, 0, 1, 6000)
		for _, n := range []int{2, 3} {
			merged := make([]schedCall, 6000)
			for k := 0; k < n; k++ {
				for j, c := range shardSchedule(t, w, poisson, k, n, 6000/n) {
					merged[j*n+k] = c
				}
			}
			if !reflect.DeepEqual(one, merged) {
				t.Errorf("poisson=%v: %d shards' calls differ from the single schedule", poisson, n)
			}
			byTime := append([]schedCall(nil), merged...)
			sort.SliceStable(byTime, func(a, b int) bool { return byTime[a].t < byTime[b].t })
			if !reflect.DeepEqual(byTime, one) {
				t.Errorf("poisson=%v: %d shards merged by time are not the single schedule", poisson, n)
			}
		}
	}
}

// A run on 2 shards against the null server intends, sends and finishes
// exactly the calls of the same run on one shard, procedure by procedure;
// its histograms and series merge exactly.
func TestTwoShardsMergeExactly(t *testing.T) {
	addr := startNull(t, &nullserver.Server{})
	w := loadWL(t, "name = t_sh2\nmix = getattr:50, lookup:20, read:20, write:5, create:3, remove:2\nfileset_files_per_ops = 0.02\nfile_size = 16K\n")
	run := func(shards int) *Outcome {
		return prepareAndRun(t, connect2(t, addr, 2), RunConfig{Workload: w, Rate: 4000, Duration: 2 * time.Second,
			Warmup: 300 * time.Millisecond, Seed: 5, Shards: shards})
	}
	one, two := run(1), run(2)
	a, b := one.Result, two.Result
	t.Logf("1 shard: intended %d sent %d; 2 shards: intended %d sent %d lag p99 %.3f ms", one.Intended, one.Sent, two.Intended, two.Sent, b.SendLagMs.P99)
	if one.Intended != 8000 || two.Intended != one.Intended || two.Sent != one.Sent || a.OpsTotal != b.OpsTotal {
		t.Fatalf("intended %d/%d sent %d/%d ops %d/%d", one.Intended, two.Intended, one.Sent, two.Sent, a.OpsTotal, b.OpsTotal)
	}
	for op, o := range a.Ops {
		if b.Ops[op] == nil || b.Ops[op].Count != o.Count {
			t.Errorf("%s: %d calls on 1 shard, %v on 2", op, o.Count, b.Ops[op])
		}
	}
	if b.Errors != 0 || b.Timeouts != 0 || b.Shards != 2 || a.Shards != 1 {
		t.Errorf("errors %d timeouts %d shards %d/%d", b.Errors, b.Timeouts, a.Shards, b.Shards)
	}
	if two.Saturated && !strings.HasPrefix(two.Reason, "send-lag") {
		t.Errorf("2 shards saturated: %s", two.Reason)
	}
	checkMergedCounts(t, b)
}

// checkMergedCounts: the whole-run histogram and the measured intervals
// hold every finished call exactly once.
func checkMergedCounts(t *testing.T, r *results.Result) {
	t.Helper()
	var sum uint64
	for _, iv := range r.Series.Intervals {
		if !iv.Warmup {
			sum += iv.Count
		}
	}
	if sum != r.OpsTotal || r.Exact.N != r.OpsTotal-r.Errors-r.Timeouts {
		t.Errorf("series count %d, exact n %d, ops_total %d", sum, r.Exact.N, r.OpsTotal)
	}
}

func connect2(t *testing.T, addr string, conns int) *Session {
	t.Helper()
	s := connect(t, addr, 2*time.Second, 1)
	s.Close()
	_, port, _ := strings.Cut(addr, ":")
	mp := 0
	for _, c := range port {
		mp = mp*10 + int(c-'0')
	}
	s2, err := Connect(context.Background(), ConnConfig{Server: addr, MountPort: mp, Export: "/export", Timeout: 2 * time.Second, Retransmits: 1, Conns: conns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s2.Close)
	return s2
}
