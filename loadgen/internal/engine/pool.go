package engine

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"syscall"

	"workbench/loadgen/internal/nfs3"
)

// The scratch pool keeps the file set stable over a run. Name-space
// operations (CREATE, SYMLINK, LINK, MKDIR create a name; REMOVE, RMDIR
// delete one; RENAME moves one) work on a fixed pool of scratch names
// x<client>_<j> (files) and y<client>_<j> (directories), spread over the
// file set's directories. A creating op takes the oldest ABSENT name, a
// deleting op the oldest PRESENT one, so every name is created and removed
// in turn and the population stays near half the pool: the file set does
// not drift however long the run. Scratch objects are not read or written
// by the data ops (those use the file set proper), so a REMOVE never pulls
// a file out from under an in-flight READ. The pool is initialised before
// the measured interval (LOOKUP of every name, CREATE/MKDIR until half are
// present). If a creating op finds no absent name (more creates than
// removes in flight) it re-creates the oldest present one (CREATE UNCHECKED
// is idempotent); a deleting op with no present name is skipped.

type pool struct {
	dir   []int32
	name  []string
	state []uint8 // 0 absent, 1 present, 2 in flight
	abs   ring
	pres  ring
}

type ring struct {
	b    []int32
	h, n int
}

func (q *ring) push(x int32) {
	if q.n == len(q.b) {
		nb := make([]int32, max(16, 2*len(q.b)))
		for i := 0; i < q.n; i++ {
			nb[i] = q.b[(q.h+i)%len(q.b)]
		}
		q.b, q.h = nb, 0
	}
	q.b[(q.h+q.n)%len(q.b)] = x
	q.n++
}

func (q *ring) pop() int32 {
	if q.n == 0 {
		return -1
	}
	x := q.b[q.h]
	q.h = (q.h + 1) % len(q.b)
	q.n--
	return x
}

// take returns a name to create (present=false) or delete (present=true).
func (p *pool) take(present bool) int32 {
	if p == nil || len(p.name) == 0 {
		return -1
	}
	var e int32
	if present {
		e = p.pres.pop()
	} else {
		e = p.abs.pop()
		if e < 0 && len(p.dir) > 0 {
			// no absent name: re-create the oldest present one (idempotent)
			e = p.pres.pop()
		}
	}
	if e >= 0 {
		p.state[e] = 2
	}
	return e
}

// finish records the outcome of an op on entry e: on success the entry is
// present (created) or absent (deleted); on failure it goes back to where
// it came from.
func (p *pool) finish(e int32, ok, created bool) {
	if p == nil || e < 0 {
		return
	}
	nowPresent := created == ok // created&ok → present; deleted&ok → absent; failures revert
	if nowPresent {
		p.state[e] = 1
		p.pres.push(e)
	} else {
		p.state[e] = 0
		p.abs.push(e)
	}
}

// poolTag names the scratch names of this client and shard: the client id,
// then "s" and the shard for shards after the first (x<client>_<j>,
// x<client>s<k>_<j>).
func (r *runner) poolTag() string {
	t := strconv.Itoa(r.cfg.ClientID)
	if r.shard > 0 {
		t += "s" + strconv.Itoa(r.shard)
	}
	return t
}

func newPool(prefix string, tag string, n int, dirs int) *pool {
	p := &pool{dir: make([]int32, n), name: make([]string, n), state: make([]uint8, n)}
	pre := prefix + tag + "_"
	for j := 0; j < n; j++ {
		p.dir[j] = int32((uint64(j) * 7919) % uint64(dirs))
		p.name[j] = pre + strconv.Itoa(j)
	}
	return p
}

// setupPools sizes the scratch pools from the mix and the rate and
// initialises them over NFS (outside the measured interval).
func (r *runner) setupPools(ctx context.Context) error {
	var fileShare, dirShare float64
	for _, m := range r.w.Mix {
		switch m.Proc {
		case nfs3.ProcCreate, nfs3.ProcRemove, nfs3.ProcSymlink, nfs3.ProcLink, nfs3.ProcRename:
			fileShare += m.Weight
		case nfs3.ProcMkdir, nfs3.ProcRmdir:
			dirShare += m.Weight
		}
	}
	// pool: 64 names + two seconds' worth of name-space ops (bounded)
	size := func(share float64) int {
		if share <= 0 {
			return 0
		}
		return int(math.Min(64+2*r.cfg.Rate/float64(max(r.nshards, 1))*share, 1<<17))
	}
	nd := len(r.fs.DirFH)
	r.files2 = newPool("x", r.poolTag(), size(fileShare), nd)
	r.dirs2 = newPool("y", r.poolTag(), size(dirShare), nd)
	for _, pp := range []struct {
		p  *pool
		mk nfs3.Proc
	}{{r.files2, nfs3.ProcCreate}, {r.dirs2, nfs3.ProcMkdir}} {
		if err := r.initPool(pp.p, pp.mk); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) initPool(p *pool, mk nfs3.Proc) error {
	if len(p.name) == 0 {
		return nil
	}
	pi := newPipe(r.s, 256)
	for j := range p.name {
		j := j
		pi.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: r.fs.DirFH[p.dir[j]], Name: p.name[j]}, func(rep *nfs3.Reply) {
			if rep.Status == nfsOK {
				p.state[j] = 1
			}
		})
	}
	if err := pi.wait(); err != nil {
		return fmt.Errorf("scratch pool: %v", err)
	}
	present := 0
	for j := range p.state {
		if p.state[j] == 1 {
			present++
		}
	}
	for j := range p.name {
		if present >= len(p.name)/2 {
			break
		}
		if p.state[j] == 1 {
			continue
		}
		j := j
		present++
		req := nfs3.Request{Proc: mk, FH: r.fs.DirFH[p.dir[j]], Name: p.name[j], Mode: 0o644}
		if mk == nfs3.ProcMkdir {
			req.Mode = 0o755
		}
		pi.call(req, func(rep *nfs3.Reply) {
			if rep.Status == nfsOK || rep.Status == nfsExist {
				p.state[j] = 1
			} else {
				pi.fail(fmt.Errorf("%s %s: %s", mk, p.name[j], r.s.statusString(rep.Status)))
			}
		})
	}
	if err := pi.wait(); err != nil {
		return fmt.Errorf("scratch pool: %v", err)
	}
	for j := range p.state {
		if p.state[j] == 1 {
			p.pres.push(int32(j))
		} else {
			p.abs.push(int32(j))
		}
	}
	return nil
}

func processCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
