package engine

import (
	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/dist"
	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/workload"
)

// requestBuilder fills the arguments q (= &s.req, already reset to
// Request{Proc: s.op}) of one procedure and notes in s what the call's
// completion will change; false when the procedure has no possible target
// (an empty object set or scratch pool), so the call is not sent.
type requestBuilder func(r *runner, s *slot, q *nfs3.Request) bool

// requestBuilders is the request table, indexed by procedure. MKNOD has no
// entry: fstress generates no device nodes, so a MKNOD in the mix counts as
// a call without a target.
var requestBuilders = [nfs3.NumProcs]requestBuilder{
	nfs3.ProcNull:        buildNull,
	nfs3.ProcGetattr:     buildGetattr,
	nfs3.ProcSetattr:     buildSetattr,
	nfs3.ProcLookup:      buildLookup,
	nfs3.ProcAccess:      buildAccess,
	nfs3.ProcReadlink:    buildReadlink,
	nfs3.ProcRead:        buildRead,
	nfs3.ProcWrite:       buildWrite,
	nfs3.ProcCreate:      buildCreate,
	nfs3.ProcMkdir:       buildMkdir,
	nfs3.ProcSymlink:     buildSymlink,
	nfs3.ProcRemove:      buildRemove,
	nfs3.ProcRmdir:       buildRmdir,
	nfs3.ProcRename:      buildRename,
	nfs3.ProcLink:        buildLink,
	nfs3.ProcReaddir:     buildReaddir,
	nfs3.ProcReaddirplus: buildReaddirplus,
	nfs3.ProcFsstat:      buildFsstat,
	nfs3.ProcFsinfo:      buildFsinfo,
	nfs3.ProcPathconf:    buildPathconf,
	nfs3.ProcCommit:      buildCommit,
}

// build fills s.req for s.op from the request table; false when the op has
// no possible target.
func (r *runner) build(s *slot) bool {
	s.req = nfs3.Request{Proc: s.op}
	if int(s.op) >= len(requestBuilders) || requestBuilders[s.op] == nil {
		return false
	}
	return requestBuilders[s.op](r, s, &s.req)
}

// Arguments the generator sends.
const (
	accessAllBits     = 0x3f    // ACCESS: read, lookup, modify, extend, delete, execute
	readdirCountBytes = 4096    // READDIR count, READDIRPLUS dircount (bytes)
	readdirMaxBytes   = 8192    // READDIRPLUS maxcount (bytes)
	maxIOSizeBytes    = 1 << 20 // READ / WRITE size cap
)

// buildNull: NULL has no arguments.
func buildNull(r *runner, s *slot, q *nfs3.Request) bool { return true }

// buildGetattr: a file by popularity.
func buildGetattr(r *runner, s *slot, q *nfs3.Request) bool { return r.targetFile(q) }

// buildSetattr: chmod a file to the mode it has — a metadata update, no
// data change.
func buildSetattr(r *runner, s *slot, q *nfs3.Request) bool {
	if !r.targetFile(q) {
		return false
	}
	q.Mode = 0o644
	return true
}

// buildAccess: every access bit of a file by popularity.
func buildAccess(r *runner, s *slot, q *nfs3.Request) bool {
	if !r.targetFile(q) {
		return false
	}
	q.Access = accessAllBits
	return true
}

// buildLookup: the name of a file by popularity in its directory.
func buildLookup(r *runner, s *slot, q *nfs3.Request) bool {
	f := r.pickFile()
	if f < 0 {
		return false
	}
	lf := &r.fs.Layout.Files[f]
	q.FH, q.Name = r.fs.DirFH[lf.Dir], lf.Name
	return true
}

// buildReadlink: a symlink by popularity.
func buildReadlink(r *runner, s *slot, q *nfs3.Request) bool {
	if len(r.fs.LinkFH) == 0 {
		return false
	}
	id, ok := r.links.Pick(r.rng.Float64())
	if !ok {
		return false
	}
	q.FH = r.fs.LinkFH[r.linkOf[id]]
	return true
}

// buildRead: the next READ of the current read run (a new run when it is
// used up or reached the end of its file); size from read_size, clamped to
// [1, 1 MiB].
func buildRead(r *runner, s *slot, q *nfs3.Request) bool {
	rd := &r.rd
	if rd.left == 0 || rd.file < 0 || rd.off >= r.fs.FileSize[rd.file] {
		r.startSeqRun(rd, r.w.SeqRunOps, r.w.ReadAccess, r.w.ReadSize)
		if rd.file < 0 {
			return false
		}
	}
	n := clampSize(r.w.ReadSize.Sample(r.rng), 1, maxIOSizeBytes)
	q.FH, q.Offset, q.Count = r.fs.FileFH[rd.file], rd.off, n
	s.file = rd.file
	rd.off += uint64(n)
	if rd.left > 0 {
		rd.left--
	}
	return true
}

// buildWrite: the next UNSTABLE WRITE of zeros of the current write run (a
// new run when it is used up, or a "whole" run reached the size its file had
// when it began); size from write_size, clamped to [1, 1 MiB]. s.end is the
// offset the file grows to if the write succeeds.
func buildWrite(r *runner, s *slot, q *nfs3.Request) bool {
	wr := &r.wr
	if wr.left == 0 || wr.file < 0 || (wr.left < 0 && wr.off >= wr.stop) {
		r.startSeqRun(wr, r.w.WriteSeqRunOps, r.w.WriteAccess, r.w.WriteSize)
		if wr.file < 0 {
			return false
		}
	}
	n := clampSize(r.w.WriteSize.Sample(r.rng), 1, maxIOSizeBytes)
	q.FH, q.Offset, q.Count, q.Stable = r.fs.FileFH[wr.file], wr.off, uint32(n), nfs3.Unstable
	r.gen++
	q.Content = content.Ref{Src: r.data, File: uint32(wr.file), Gen: r.gen}
	s.file = wr.file
	s.end = wr.off + uint64(n)
	wr.off += uint64(n)
	if wr.left > 0 {
		wr.left--
	}
	return true
}

// buildCommit: the file of the current (or last) write run, else a file by
// popularity.
func buildCommit(r *runner, s *slot, q *nfs3.Request) bool {
	f := r.wr.file
	if f < 0 {
		f = r.pickFile()
	}
	if f < 0 {
		return false
	}
	q.FH = r.fs.FileFH[f]
	return true
}

// buildReaddir: a directory by popularity, from its first entry.
func buildReaddir(r *runner, s *slot, q *nfs3.Request) bool {
	q.FH, q.Count, q.MaxCount = r.fs.DirFH[r.pickDir()], readdirCountBytes, readdirMaxBytes
	return true
}

// buildReaddirplus: READDIR's arguments (count is the dircount).
func buildReaddirplus(r *runner, s *slot, q *nfs3.Request) bool { return buildReaddir(r, s, q) }

// buildFsstat, buildFsinfo, buildPathconf: the export root.
func buildFsstat(r *runner, s *slot, q *nfs3.Request) bool   { q.FH = r.fs.Root; return true }
func buildFsinfo(r *runner, s *slot, q *nfs3.Request) bool   { q.FH = r.fs.Root; return true }
func buildPathconf(r *runner, s *slot, q *nfs3.Request) bool { q.FH = r.fs.Root; return true }

// buildCreate: an absent scratch file name, UNCHECKED, mode 0644, size 0.
func buildCreate(r *runner, s *slot, q *nfs3.Request) bool {
	if !r.takeScratch(s, q, false) {
		return false
	}
	q.Mode, q.SetSize, q.Size = 0o644, true, 0
	return true
}

// buildSymlink: an absent scratch file name, pointing at "f0".
func buildSymlink(r *runner, s *slot, q *nfs3.Request) bool {
	if !r.takeScratch(s, q, false) {
		return false
	}
	q.Mode, q.Target = 0o777, "f0"
	return true
}

// buildMkdir: an absent scratch directory name, mode 0755.
func buildMkdir(r *runner, s *slot, q *nfs3.Request) bool {
	if !r.takeScratch(s, q, false) {
		return false
	}
	q.Mode = 0o755
	return true
}

// buildRemove: a present scratch file name.
func buildRemove(r *runner, s *slot, q *nfs3.Request) bool { return r.takeScratch(s, q, true) }

// buildRmdir: a present scratch directory name.
func buildRmdir(r *runner, s *slot, q *nfs3.Request) bool { return r.takeScratch(s, q, true) }

// buildLink: a new link, at an absent scratch file name, to a file by
// popularity.
func buildLink(r *runner, s *slot, q *nfs3.Request) bool {
	f := r.pickFile()
	e := r.files2.take(false)
	if f < 0 || e < 0 {
		if e >= 0 {
			r.files2.finish(e, false, false)
		}
		return false
	}
	s.pool = e
	q.FH, q.ToFH, q.ToName = r.fs.FileFH[f], r.fs.DirFH[r.files2.dir[e]], r.files2.name[e]
	return true
}

// buildRename: a present scratch file name to an absent one.
func buildRename(r *runner, s *slot, q *nfs3.Request) bool {
	p := r.files2
	a := p.take(true)
	if a < 0 {
		return false
	}
	b := p.take(false)
	if b < 0 {
		p.finish(a, false, true)
		return false
	}
	s.pool, s.pool2 = a, b
	q.FH, q.Name, q.ToFH, q.ToName = r.fs.DirFH[p.dir[a]], p.name[a], r.fs.DirFH[p.dir[b]], p.name[b]
	return true
}

// targetFile sets q.FH to a file by popularity; false when there is none.
func (r *runner) targetFile(q *nfs3.Request) bool {
	f := r.pickFile()
	if f < 0 {
		return false
	}
	q.FH = r.fs.FileFH[f]
	return true
}

// takeScratch takes a scratch name for s.op from the directory pool (MKDIR, RMDIR) or the file
// pool (everything else): present=false for a name to create, true for one to remove. It sets the
// request's directory handle and name and records the entry in the slot; false if none is free.
func (r *runner) takeScratch(s *slot, q *nfs3.Request, present bool) bool {
	p := r.files2
	if s.op == nfs3.ProcMkdir || s.op == nfs3.ProcRmdir {
		p = r.dirs2
	}
	e := p.take(present)
	if e < 0 {
		return false
	}
	s.pool = e
	q.FH, q.Name = r.fs.DirFH[p.dir[e]], p.name[e]
	return true
}

// pickFile is a file index by popularity; -1 when the file set has none.
func (r *runner) pickFile() int32 {
	id, ok := r.files.Pick(r.rng.Float64())
	if !ok {
		return -1
	}
	return r.fileOf[id]
}

// pickDir is a directory index by popularity; 0 (the base) when none.
func (r *runner) pickDir() int32 {
	id, ok := r.dirs.Pick(r.rng.Float64())
	if !ok {
		return 0
	}
	return r.dirOf[id]
}

// clampSize is x rounded down into [lo, hi] (lo for NaN).
func clampSize(x float64, lo, hi uint32) uint32 {
	if !(x >= float64(lo)) {
		return lo
	}
	if x > float64(hi) {
		return hi
	}
	return uint32(x)
}

// startSeqRun starts a sequential I/O run (seed 003 §3.3: the only request
// dependency Fstress keeps): a file by popularity, a length in ops from the
// run-length distribution (a sample ≤ 0 means "to the end of the file"), and
// a start offset: 0 (sequential), the end of the file (append: writes
// extend it), or a random offset aligned to the mean I/O size (random).
func (r *runner) startSeqRun(run *seqRun, length dist.Dist, access workload.Access, iosize dist.Dist) {
	f := r.pickFile()
	*run = seqRun{file: f, left: -1}
	if f < 0 {
		return
	}
	if length != nil {
		if n := count(length.Sample(r.rng)); n > 0 {
			run.left = n
		}
	}
	size := r.fs.FileSize[f]
	run.stop = size
	switch access {
	case workload.AccessSequential:
	case workload.AccessAppend:
		run.off = size
		if run.left < 0 {
			run.left = 1
		}
	default:
		unit := uint64(clampSize(iosize.Mean(), 512, maxIOSizeBytes))
		if size > unit {
			run.off = uint64(r.rng.Int63n(int64(size/unit))) * unit
		}
	}
}
