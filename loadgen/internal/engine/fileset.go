package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"workbench/loadgen/internal/content"
	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/workload"
	"workbench/loadgen/internal/xdr"
)

// File-set rule (see loadgen/README.md):
//   - size: (files, dirs) = Workload.FilesetSize(rate) — self-scaling, the
//     file set grows with the offered load;
//   - shape: GenLayout (prefix-stable tree from the workload's creation
//     parameters and a fixed layout seed);
//   - location: <export>/fstress-<workload>-<shape>/..., manifest
//     <export>/.fstress/fstress-<workload>-<shape>.json written over NFS
//     after a successful build;
//   - reuse: objects covered by the manifest are only looked up; missing
//     ones (augmentation to a higher rate, or a vanished object) are
//     created (MKDIR / CREATE + WRITE / SYMLINK). A file set is never
//     shrunk; a run uses the prefix its rate needs.

// LayoutSeed fixes the file-set layout independently of --seed so that runs
// with different seeds share one file set.
const LayoutSeed = 1997

const (
	nfsOK     = 0
	nfsNoEnt  = 2
	nfsExist  = 17
	manifestD = ".fstress"
	writeUnit = 64 * 1024
)

// Manifest is the small JSON object kept in the export.
type Manifest struct {
	Version    int    `json:"version"`
	Workload   string `json:"workload"`
	Shape      string `json:"shape"`
	Base       string `json:"base"`
	LayoutSeed int64  `json:"layout_seed"`
	Files      int    `json:"files"`
	Dirs       int    `json:"dirs"`
	Updated    string `json:"updated"`
}

// Fileset is the in-memory file set with handles.
type Fileset struct {
	Layout   *Layout
	Root     nfs3.FH
	DirFH    []nfs3.FH
	FileFH   []nfs3.FH
	FileSize []uint64
	LinkFH   []nfs3.FH
	Created  int   // objects created by this call
	Written  int64 // bytes written by this call
	Reused   int   // objects found in place
}

// NeedsFileset is false for mixes of NULL, FSSTAT, FSINFO and PATHCONF only
// (generator capacity tests): they need no file set.
func NeedsFileset(w *workload.Workload) bool {
	for _, m := range w.Mix {
		switch m.Proc {
		case nfs3.ProcNull, nfs3.ProcFsstat, nfs3.ProcFsinfo, nfs3.ProcPathconf:
		default:
			return true
		}
	}
	return false
}

// ContentSeed fixes the written bytes' seed independently of --seed, like
// LayoutSeed: a file's first content and a run's WRITEs depend only on the
// workload's data spec, the file, the offset and the generation.
const ContentSeed = 2026

// DataSource is what workload w's WRITEs carry (package content).
func DataSource(w *workload.Workload) *content.Source { return content.NewSource(w.Data, ContentSeed) }

// PrepareFileset creates, augments or reuses the file set for workload w at
// the given offered rate and returns it with handles for every object. Its
// phases: size and layout, the manifest's known prefix, directories (one
// depth level at a time), files, symlinks, then the manifest update.
func PrepareFileset(ctx context.Context, s *Session, w *workload.Workload, rate float64, log io.Writer) (*Fileset, error) {
	t0 := time.Now()
	if !NeedsFileset(w) {
		if log != nil {
			fmt.Fprintf(log, "fstress: workload %s touches no files; no file set needed\n", w.Name)
		}
		return &Fileset{Layout: &Layout{Dirs: []LDir{{Parent: -1}}}, Root: s.Root, DirFH: []nfs3.FH{s.Root}}, nil
	}
	files, dirs := w.FilesetSize(rate)
	l := GenLayout(w, LayoutSeed, files, dirs)
	man, metaFH, known := readKnownLayout(s, w, l)
	b := &filesetBuild{s: s, l: l, known: known, fs: newFileset(l, s.Root), p: newPipe(s, 256), data: DataSource(w)}
	b.p.keepOpen = true // NFSv4.1: CREATE opens; WRITE uses the open's stateid
	for _, phase := range []func() error{b.buildDirs, b.buildFiles, b.buildSymlinks} {
		if err := phase(); err != nil {
			b.p.closeAll()
			return nil, err
		}
	}
	if err := b.p.closeAll(); err != nil {
		return nil, fmt.Errorf("file set: %v", err)
	}
	if err := updateManifest(s, w, l, metaFH, man, b.fs.Created, files, dirs); err != nil {
		return nil, err
	}
	if log != nil {
		fs := b.fs
		fmt.Fprintf(log, "fstress: file set %s: %d dirs, %d files, %d symlinks (%d objects created, %d reused, %.1f MB written) in %.1fs\n",
			l.Base, len(l.Dirs), len(l.Files), len(l.Links), fs.Created, fs.Reused, float64(fs.Written)/1e6, time.Since(t0).Seconds())
	}
	return b.fs, nil
}

// newFileset is an empty Fileset for layout l (handles to be filled).
func newFileset(l *Layout, root nfs3.FH) *Fileset {
	return &Fileset{Layout: l, Root: root,
		DirFH: make([]nfs3.FH, len(l.Dirs)), FileFH: make([]nfs3.FH, len(l.Files)),
		FileSize: make([]uint64, len(l.Files)), LinkFH: make([]nfs3.FH, len(l.Links))}
}

// readKnownLayout reads the manifest of layout l. When it describes the same
// shape and layout seed, known is the layout of the set it records (the
// objects to look up rather than create); otherwise man is nil and known is
// empty. metaFH is the .fstress directory handle (nil if absent).
func readKnownLayout(s *Session, w *workload.Workload, l *Layout) (man *Manifest, metaFH nfs3.FH, known *Layout) {
	man, metaFH, _ = readManifest(s, l.Base)
	if man != nil && man.Shape == l.Shape && man.LayoutSeed == LayoutSeed {
		return man, metaFH, GenLayout(w, LayoutSeed, man.Files, man.Dirs)
	}
	return nil, metaFH, &Layout{}
}

// updateManifest records the largest set built so far when this call
// created objects or grew the set (or no valid manifest was found).
func updateManifest(s *Session, w *workload.Workload, l *Layout, metaFH nfs3.FH, man *Manifest, created, files, dirs int) error {
	if man != nil && created == 0 && man.Files >= files && man.Dirs >= dirs {
		return nil
	}
	m := Manifest{Version: 1, Workload: w.Name, Shape: l.Shape, Base: l.Base, LayoutSeed: LayoutSeed,
		Files: files, Dirs: dirs, Updated: time.Now().UTC().Format(time.RFC3339)}
	if man != nil {
		m.Files = max(m.Files, man.Files)
		m.Dirs = max(m.Dirs, man.Dirs)
	}
	if err := writeManifest(s, metaFH, &m); err != nil {
		return fmt.Errorf("file set manifest: %v", err)
	}
	return nil
}

// filesetBuild is the state of one file-set build: the layout to reach, the
// prefix of it the manifest says exists (known), the Fileset being filled
// and the call pipe. Every step issues its calls through the pipe and
// waits for all of them (a barrier) before the next step; the callbacks
// append to step-local lists under the pipe's lock.
type filesetBuild struct {
	s     *Session
	l     *Layout
	known *Layout
	fs    *Fileset
	p     *pipe
	data  *content.Source // the files' first content (generation 0)
}

// wait waits for the step's calls; the error is the first one, prefixed.
func (b *filesetBuild) wait() error {
	if err := b.p.wait(); err != nil {
		return fmt.Errorf("file set: %v", err)
	}
	return nil
}

// buildDirs finds or makes the directories, one depth level at a time
// (children need the parent's handle): LOOKUP the known ones, MKDIR the
// others and those not found, LOOKUP the ones MKDIR gave no handle for.
func (b *filesetBuild) buildDirs() error {
	maxDepth := int32(0)
	for _, d := range b.l.Dirs {
		if d.Depth > maxDepth {
			maxDepth = d.Depth
		}
	}
	for depth := int32(0); depth <= maxDepth; depth++ {
		missing, err := b.lookupKnownDirs(depth)
		if err != nil {
			return err
		}
		noFH, err := b.mkdirs(missing)
		if err != nil {
			return err
		}
		if err := b.lookupDirs(noFH); err != nil {
			return err
		}
	}
	return nil
}

// parentFH is the handle of directory d's parent (the export root for the
// base directory).
func (b *filesetBuild) parentFH(d LDir) nfs3.FH {
	if d.Parent >= 0 {
		return b.fs.DirFH[d.Parent]
	}
	return b.s.Root
}

// lookupKnownDirs looks up the known directories at depth; missing are
// those not found, then the unknown ones.
func (b *filesetBuild) lookupKnownDirs(depth int32) (missing []int, err error) {
	var notFound, unknown []int // notFound: appended by the callbacks
	for i, d := range b.l.Dirs {
		if d.Depth != depth {
			continue
		}
		if i >= len(b.known.Dirs) {
			unknown = append(unknown, i)
			continue
		}
		b.p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: b.parentFH(d), Name: d.Name}, func(r *nfs3.Reply) {
			if r.Status == nfsOK {
				b.fs.DirFH[i] = r.FH
				b.fs.Reused++
			} else {
				notFound = append(notFound, i)
			}
		})
	}
	err = b.wait()
	return append(notFound, unknown...), err
}

// mkdirs makes the directories dirs; noFH are those that exist without a
// handle in the reply (MKDIR answered NFS3ERR_EXIST or sent no handle).
func (b *filesetBuild) mkdirs(dirs []int) (noFH []int, err error) {
	l, p := b.l, b.p
	for _, i := range dirs {
		d := l.Dirs[i]
		p.call(nfs3.Request{Proc: nfs3.ProcMkdir, FH: b.parentFH(d), Name: d.Name, Mode: 0o755}, func(r *nfs3.Reply) {
			switch {
			case r.Status == nfsOK && len(r.FH) > 0:
				b.fs.DirFH[i] = r.FH
				b.fs.Created++
			case r.Status == nfsOK || r.Status == nfsExist:
				noFH = append(noFH, i)
			default:
				p.fail(fmt.Errorf("MKDIR %s: %s", l.Path(int32(i)), b.s.statusString(r.Status)))
			}
		})
	}
	return noFH, b.wait()
}

// lookupDirs looks up directories that must exist.
func (b *filesetBuild) lookupDirs(dirs []int) error {
	l, p := b.l, b.p
	for _, i := range dirs {
		d := l.Dirs[i]
		p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: b.parentFH(d), Name: d.Name}, func(r *nfs3.Reply) {
			if r.Status != nfsOK {
				p.fail(fmt.Errorf("LOOKUP %s: %s", l.Path(int32(i)), b.s.statusString(r.Status)))
				return
			}
			b.fs.DirFH[i] = r.FH
		})
	}
	return b.wait()
}

// buildFiles finds or makes the files: LOOKUP the known ones, CREATE the
// others and those missing or short, LOOKUP the ones CREATE gave no handle
// for, then WRITE the created ones full.
func (b *filesetBuild) buildFiles() error {
	create, err := b.lookupKnownFiles()
	if err != nil {
		return err
	}
	noFH, err := b.createFiles(create)
	if err != nil {
		return err
	}
	if err := b.lookupFiles(noFH); err != nil {
		return err
	}
	return b.writeFiles(create)
}

// lookupKnownFiles looks up the known files; a file found at least its
// layout size is reused. create are the others: those not found or shorter
// than the layout says, then the unknown ones.
func (b *filesetBuild) lookupKnownFiles() (create []int, err error) {
	l, fs := b.l, b.fs
	var unknown []int // create: appended by the callbacks
	for i, f := range l.Files {
		if i >= len(b.known.Files) {
			unknown = append(unknown, i)
			continue
		}
		b.p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: fs.DirFH[f.Dir], Name: f.Name}, func(r *nfs3.Reply) {
			if r.Status == nfsOK {
				fs.FileFH[i] = r.FH
				fs.FileSize[i] = l.Files[i].Size
				if r.Attr != nil {
					fs.FileSize[i] = r.Attr.Size
				}
				if fs.FileSize[i] >= l.Files[i].Size {
					fs.Reused++
					return
				}
			}
			create = append(create, i)
		})
	}
	err = b.wait()
	return append(create, unknown...), err
}

// createFiles creates (UNCHECKED, mode 0644) the files; noFH are those
// CREATE sent no handle for.
func (b *filesetBuild) createFiles(files []int) (noFH []int, err error) {
	l, p := b.l, b.p
	for _, i := range files {
		f := l.Files[i]
		p.call(nfs3.Request{Proc: nfs3.ProcCreate, FH: b.fs.DirFH[f.Dir], Name: f.Name, Mode: 0o644}, func(r *nfs3.Reply) {
			if r.Status != nfsOK {
				p.fail(fmt.Errorf("CREATE %s/%s: %s", l.Path(f.Dir), f.Name, b.s.statusString(r.Status)))
				return
			}
			b.fs.Created++
			if len(r.FH) == 0 {
				noFH = append(noFH, i)
				return
			}
			b.fs.FileFH[i] = r.FH
		})
	}
	return noFH, b.wait()
}

// lookupFiles looks up files that must exist.
func (b *filesetBuild) lookupFiles(files []int) error {
	l, p := b.l, b.p
	for _, i := range files {
		f := l.Files[i]
		p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: b.fs.DirFH[f.Dir], Name: f.Name}, func(r *nfs3.Reply) {
			if r.Status != nfsOK {
				p.fail(fmt.Errorf("LOOKUP %s/%s: %s", l.Path(f.Dir), f.Name, b.s.statusString(r.Status)))
				return
			}
			b.fs.FileFH[i] = r.FH
		})
	}
	return b.wait()
}

// writeFiles fills the files to their layout size with the workload's data
// at generation 0, in UNSTABLE WRITEs of writeUnit bytes (the last one
// shorter).
func (b *filesetBuild) writeFiles(files []int) error {
	l, p, fs := b.l, b.p, b.fs
	for _, i := range files {
		f, data := l.Files[i], content.Ref{Src: b.data, File: uint32(i)}
		for off := uint64(0); off < f.Size; off += writeUnit {
			n := min(f.Size-off, writeUnit)
			fs.Written += int64(n)
			p.call(nfs3.Request{Proc: nfs3.ProcWrite, FH: fs.FileFH[i], Offset: off, Count: uint32(n), Content: data, Stable: nfs3.Unstable}, func(r *nfs3.Reply) {
				if r.Status != nfsOK {
					p.fail(fmt.Errorf("WRITE %s/%s: %s", l.Path(f.Dir), f.Name, b.s.statusString(r.Status)))
				}
			})
		}
		fs.FileSize[i] = f.Size
	}
	return b.wait()
}

// buildSymlinks finds or makes the symlinks: LOOKUP the known ones,
// SYMLINK the others and those not found, LOOKUP the ones SYMLINK gave no
// handle for.
func (b *filesetBuild) buildSymlinks() error {
	missing, err := b.lookupKnownLinks()
	if err != nil {
		return err
	}
	noFH, err := b.symlinks(missing)
	if err != nil {
		return err
	}
	return b.lookupLinks(noFH)
}

// lookupKnownLinks looks up the known symlinks; missing are those not
// found, then the unknown ones.
func (b *filesetBuild) lookupKnownLinks() (missing []int, err error) {
	var notFound, unknown []int // notFound: appended by the callbacks
	for i, k := range b.l.Links {
		if i >= len(b.known.Links) {
			unknown = append(unknown, i)
			continue
		}
		b.p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: b.fs.DirFH[k.Dir], Name: k.Name}, func(r *nfs3.Reply) {
			if r.Status == nfsOK {
				b.fs.LinkFH[i] = r.FH
				b.fs.Reused++
				return
			}
			notFound = append(notFound, i)
		})
	}
	err = b.wait()
	return append(notFound, unknown...), err
}

// symlinks makes the symlinks links (mode 0777); noFH are those that exist
// without a handle in the reply.
func (b *filesetBuild) symlinks(links []int) (noFH []int, err error) {
	l, p := b.l, b.p
	for _, i := range links {
		k := l.Links[i]
		p.call(nfs3.Request{Proc: nfs3.ProcSymlink, FH: b.fs.DirFH[k.Dir], Name: k.Name, Target: k.Target, Mode: 0o777}, func(r *nfs3.Reply) {
			switch {
			case r.Status == nfsOK && len(r.FH) > 0:
				b.fs.LinkFH[i] = r.FH
				b.fs.Created++
			case r.Status == nfsOK || r.Status == nfsExist:
				noFH = append(noFH, i)
			default:
				p.fail(fmt.Errorf("SYMLINK %s/%s: %s", l.Path(k.Dir), k.Name, b.s.statusString(r.Status)))
			}
		})
	}
	return noFH, b.wait()
}

// lookupLinks looks up symlinks that must exist.
func (b *filesetBuild) lookupLinks(links []int) error {
	l, p := b.l, b.p
	for _, i := range links {
		k := l.Links[i]
		p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: b.fs.DirFH[k.Dir], Name: k.Name}, func(r *nfs3.Reply) {
			if r.Status != nfsOK {
				p.fail(fmt.Errorf("LOOKUP %s/%s: %s", l.Path(k.Dir), k.Name, b.s.statusString(r.Status)))
				return
			}
			b.fs.LinkFH[i] = r.FH
		})
	}
	return b.wait()
}

// readManifest looks up .fstress/<base>.json; it returns the manifest (nil
// if absent or unreadable) and the .fstress directory handle (nil if absent).
func readManifest(s *Session, base string) (*Manifest, nfs3.FH, error) {
	if s.V4 != nil {
		return readManifest4(s, base)
	}
	c := s.Clients[0]
	dir, st, err := lookup(c, s.Root, manifestD)
	if err != nil || st != nfsOK {
		return nil, nil, err
	}
	fh, st, err := lookup(c, dir, base+".json")
	if err != nil || st != nfsOK {
		return nil, dir, err
	}
	data, err := readAll(c, fh)
	if err != nil {
		return nil, dir, err
	}
	var m Manifest
	if json.Unmarshal(data, &m) != nil || m.Version != 1 || m.Base != base {
		return nil, dir, nil
	}
	return &m, dir, nil
}

func writeManifest(s *Session, dir nfs3.FH, m *Manifest) error {
	if s.V4 != nil {
		return writeManifest4(s, dir, m)
	}
	c := s.Clients[0]
	if dir == nil {
		rep, err := call(c, &nfs3.Request{Proc: nfs3.ProcMkdir, FH: s.Root, Name: manifestD, Mode: 0o755})
		if err != nil {
			return err
		}
		if rep.Status != nfsOK && rep.Status != nfsExist {
			return fmt.Errorf("MKDIR %s: %s", manifestD, s.statusString(rep.Status))
		}
		var st uint32
		dir, st, err = lookup(c, s.Root, manifestD)
		if err != nil {
			return err
		}
		if st != nfsOK {
			return fmt.Errorf("LOOKUP %s: %s", manifestD, s.statusString(st))
		}
	}
	data, _ := json.MarshalIndent(m, "", "  ")
	data = append(data, '\n')
	name := m.Base + ".json"
	rep, err := call(c, &nfs3.Request{Proc: nfs3.ProcCreate, FH: dir, Name: name, Mode: 0o644, SetSize: true, Size: 0})
	if err != nil {
		return err
	}
	if rep.Status != nfsOK {
		return fmt.Errorf("CREATE %s/%s: %s", manifestD, name, s.statusString(rep.Status))
	}
	fh := rep.FH
	if len(fh) == 0 {
		var st uint32
		if fh, st, err = lookup(c, dir, name); err != nil || st != nfsOK {
			return fmt.Errorf("LOOKUP %s/%s failed", manifestD, name)
		}
	}
	rep, err = call(c, &nfs3.Request{Proc: nfs3.ProcWrite, FH: fh, Offset: 0, Count: uint32(len(data)), Data: data, Stable: 2})
	if err != nil {
		return err
	}
	if rep.Status != nfsOK {
		return fmt.Errorf("WRITE %s/%s: %s", manifestD, name, s.statusString(rep.Status))
	}
	return nil
}

// call is a synchronous NFS call with a decoded reply.
func call(c *rpc.Client, req *nfs3.Request) (*nfs3.Reply, error) {
	body, err := c.Call(nfs3.Program, nfs3.Version, uint32(req.Proc), req.Encode)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", req.Proc, oneLine(err))
	}
	rep, err := nfs3.DecodeReply(req.Proc, body)
	if err != nil {
		return nil, fmt.Errorf("%s reply: %v", req.Proc, err)
	}
	return &rep, nil
}

func lookup(c *rpc.Client, dir nfs3.FH, name string) (nfs3.FH, uint32, error) {
	rep, err := call(c, &nfs3.Request{Proc: nfs3.ProcLookup, FH: dir, Name: name})
	if err != nil {
		return nil, 0, err
	}
	return append(nfs3.FH(nil), rep.FH...), rep.Status, nil
}

// readAll reads a small file (the manifest) with READ calls. nfs3.Reply
// carries no READ data, so the READ3resok is decoded here: status,
// post_op_attr, count, eof, data<>.
func readAll(c *rpc.Client, fh nfs3.FH) ([]byte, error) {
	var data []byte
	for off := uint64(0); off < 1<<24; {
		req := nfs3.Request{Proc: nfs3.ProcRead, FH: fh, Offset: off, Count: 32768}
		body, err := c.Call(nfs3.Program, nfs3.Version, uint32(nfs3.ProcRead), req.Encode)
		if err != nil {
			return nil, fmt.Errorf("READ: %v", oneLine(err))
		}
		d := xdr.NewDecoder(body)
		if st := d.Uint32(); st != nfsOK {
			return nil, fmt.Errorf("READ: %s", nfs3.StatusString(st))
		}
		if d.Bool() {
			d.Skip(84)
		}
		d.Uint32()
		eof := d.Bool()
		b := d.Opaque()
		if d.Err() != nil {
			return nil, fmt.Errorf("READ reply: %v", d.Err())
		}
		data = append(data, b...)
		off += uint64(len(b))
		if eof || len(b) == 0 {
			break
		}
	}
	return data, nil
}
