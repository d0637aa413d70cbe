package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

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

var zeroData = make([]byte, 1<<20)

// PrepareFileset creates, augments or reuses the file set for workload w at
// the given offered rate and returns it with handles for every object.
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
	fs := &Fileset{Layout: l, Root: s.Root,
		DirFH: make([]nfs3.FH, len(l.Dirs)), FileFH: make([]nfs3.FH, len(l.Files)),
		FileSize: make([]uint64, len(l.Files)), LinkFH: make([]nfs3.FH, len(l.Links))}

	man, metaFH, _ := readManifest(s, l.Base)
	known := &Layout{}
	if man != nil && man.Shape == l.Shape && man.LayoutSeed == LayoutSeed {
		known = GenLayout(w, LayoutSeed, man.Files, man.Dirs)
	} else {
		man = nil
	}
	p := newPipe(s, 256)

	// Directories, one depth level at a time (children need the parent FH).
	maxDepth := int32(0)
	for _, d := range l.Dirs {
		if d.Depth > maxDepth {
			maxDepth = d.Depth
		}
	}
	var retry []int
	for depth := int32(0); depth <= maxDepth; depth++ {
		retry = retry[:0]
		for i, d := range l.Dirs {
			if d.Depth != depth {
				continue
			}
			i := i
			parent := s.Root
			if d.Parent >= 0 {
				parent = fs.DirFH[d.Parent]
			}
			if i < len(known.Dirs) {
				p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: parent, Name: d.Name}, func(r *nfs3.Reply) {
					if r.Status == nfsOK {
						fs.DirFH[i] = r.FH
						fs.Reused++
					} else {
						retry = append(retry, i)
					}
				})
			} else {
				retry = append(retry, i)
			}
		}
		if err := p.wait(); err != nil {
			return nil, fmt.Errorf("file set: %v", err)
		}
		var lookup []int
		for _, i := range retry {
			i := i
			d := l.Dirs[i]
			parent := s.Root
			if d.Parent >= 0 {
				parent = fs.DirFH[d.Parent]
			}
			p.call(nfs3.Request{Proc: nfs3.ProcMkdir, FH: parent, Name: d.Name, Mode: 0o755}, func(r *nfs3.Reply) {
				switch {
				case r.Status == nfsOK && len(r.FH) > 0:
					fs.DirFH[i] = r.FH
					fs.Created++
				case r.Status == nfsOK || r.Status == nfsExist:
					lookup = append(lookup, i)
				default:
					p.fail(fmt.Errorf("MKDIR %s: %s", l.Path(int32(i)), nfs3.StatusString(r.Status)))
				}
			})
		}
		if err := p.wait(); err != nil {
			return nil, fmt.Errorf("file set: %v", err)
		}
		for _, i := range lookup {
			i := i
			d := l.Dirs[i]
			parent := s.Root
			if d.Parent >= 0 {
				parent = fs.DirFH[d.Parent]
			}
			p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: parent, Name: d.Name}, func(r *nfs3.Reply) {
				if r.Status != nfsOK {
					p.fail(fmt.Errorf("LOOKUP %s: %s", l.Path(int32(i)), nfs3.StatusString(r.Status)))
					return
				}
				fs.DirFH[i] = r.FH
			})
		}
		if err := p.wait(); err != nil {
			return nil, fmt.Errorf("file set: %v", err)
		}
	}

	// Files: look up the known ones; create the others, then write them.
	var create []int
	for i, f := range l.Files {
		i := i
		if i < len(known.Files) {
			p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: fs.DirFH[f.Dir], Name: f.Name}, func(r *nfs3.Reply) {
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
		} else {
			create = append(create, i)
		}
	}
	if err := p.wait(); err != nil {
		return nil, fmt.Errorf("file set: %v", err)
	}
	var needFH []int
	for _, i := range create {
		i := i
		f := l.Files[i]
		p.call(nfs3.Request{Proc: nfs3.ProcCreate, FH: fs.DirFH[f.Dir], Name: f.Name, Mode: 0o644}, func(r *nfs3.Reply) {
			if r.Status != nfsOK {
				p.fail(fmt.Errorf("CREATE %s/%s: %s", l.Path(f.Dir), f.Name, nfs3.StatusString(r.Status)))
				return
			}
			fs.Created++
			if len(r.FH) == 0 {
				needFH = append(needFH, i)
				return
			}
			fs.FileFH[i] = r.FH
		})
	}
	if err := p.wait(); err != nil {
		return nil, fmt.Errorf("file set: %v", err)
	}
	for _, i := range needFH {
		i := i
		f := l.Files[i]
		p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: fs.DirFH[f.Dir], Name: f.Name}, func(r *nfs3.Reply) {
			if r.Status != nfsOK {
				p.fail(fmt.Errorf("LOOKUP %s/%s: %s", l.Path(f.Dir), f.Name, nfs3.StatusString(r.Status)))
				return
			}
			fs.FileFH[i] = r.FH
		})
	}
	if err := p.wait(); err != nil {
		return nil, fmt.Errorf("file set: %v", err)
	}
	for _, i := range create {
		i := i
		f := l.Files[i]
		for off := uint64(0); off < f.Size; off += writeUnit {
			n := f.Size - off
			if n > writeUnit {
				n = writeUnit
			}
			fs.Written += int64(n)
			p.call(nfs3.Request{Proc: nfs3.ProcWrite, FH: fs.FileFH[i], Offset: off, Count: uint32(n), Data: zeroData[:n], Stable: 0}, func(r *nfs3.Reply) {
				if r.Status != nfsOK {
					p.fail(fmt.Errorf("WRITE %s/%s: %s", l.Path(f.Dir), f.Name, nfs3.StatusString(r.Status)))
				}
			})
		}
		fs.FileSize[i] = f.Size
	}
	if err := p.wait(); err != nil {
		return nil, fmt.Errorf("file set: %v", err)
	}

	// Symlinks.
	var mk []int
	for i, k := range l.Links {
		i := i
		if i < len(known.Links) {
			p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: fs.DirFH[k.Dir], Name: k.Name}, func(r *nfs3.Reply) {
				if r.Status == nfsOK {
					fs.LinkFH[i] = r.FH
					fs.Reused++
					return
				}
				mk = append(mk, i)
			})
		} else {
			mk = append(mk, i)
		}
	}
	if err := p.wait(); err != nil {
		return nil, fmt.Errorf("file set: %v", err)
	}
	var lk []int
	for _, i := range mk {
		i := i
		k := l.Links[i]
		p.call(nfs3.Request{Proc: nfs3.ProcSymlink, FH: fs.DirFH[k.Dir], Name: k.Name, Target: k.Target, Mode: 0o777}, func(r *nfs3.Reply) {
			switch {
			case r.Status == nfsOK && len(r.FH) > 0:
				fs.LinkFH[i] = r.FH
				fs.Created++
			case r.Status == nfsOK || r.Status == nfsExist:
				lk = append(lk, i)
			default:
				p.fail(fmt.Errorf("SYMLINK %s/%s: %s", l.Path(k.Dir), k.Name, nfs3.StatusString(r.Status)))
			}
		})
	}
	if err := p.wait(); err != nil {
		return nil, fmt.Errorf("file set: %v", err)
	}
	for _, i := range lk {
		i := i
		k := l.Links[i]
		p.call(nfs3.Request{Proc: nfs3.ProcLookup, FH: fs.DirFH[k.Dir], Name: k.Name}, func(r *nfs3.Reply) {
			if r.Status != nfsOK {
				p.fail(fmt.Errorf("LOOKUP %s/%s: %s", l.Path(k.Dir), k.Name, nfs3.StatusString(r.Status)))
				return
			}
			fs.LinkFH[i] = r.FH
		})
	}
	if err := p.wait(); err != nil {
		return nil, fmt.Errorf("file set: %v", err)
	}

	// Manifest: record the largest set built so far.
	if man == nil || fs.Created > 0 || man.Files < files || man.Dirs < dirs {
		m := Manifest{Version: 1, Workload: w.Name, Shape: l.Shape, Base: l.Base, LayoutSeed: LayoutSeed,
			Files: files, Dirs: dirs, Updated: time.Now().UTC().Format(time.RFC3339)}
		if man != nil {
			m.Files = max(m.Files, man.Files)
			m.Dirs = max(m.Dirs, man.Dirs)
		}
		if err := writeManifest(s, metaFH, &m); err != nil {
			return nil, fmt.Errorf("file set manifest: %v", err)
		}
	}
	if log != nil {
		fmt.Fprintf(log, "fstress: file set %s: %d dirs, %d files, %d symlinks (%d objects created, %d reused, %.1f MB written) in %.1fs\n",
			l.Base, len(l.Dirs), len(l.Files), len(l.Links), fs.Created, fs.Reused, float64(fs.Written)/1e6, time.Since(t0).Seconds())
	}
	return fs, nil
}

// readManifest looks up .fstress/<base>.json; it returns the manifest (nil
// if absent or unreadable) and the .fstress directory handle (nil if absent).
func readManifest(s *Session, base string) (*Manifest, nfs3.FH, error) {
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
	c := s.Clients[0]
	if dir == nil {
		rep, err := call(c, &nfs3.Request{Proc: nfs3.ProcMkdir, FH: s.Root, Name: manifestD, Mode: 0o755})
		if err != nil {
			return err
		}
		if rep.Status != nfsOK && rep.Status != nfsExist {
			return fmt.Errorf("MKDIR %s: %s", manifestD, nfs3.StatusString(rep.Status))
		}
		var st uint32
		dir, st, err = lookup(c, s.Root, manifestD)
		if err != nil {
			return err
		}
		if st != nfsOK {
			return fmt.Errorf("LOOKUP %s: %s", manifestD, nfs3.StatusString(st))
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
		return fmt.Errorf("CREATE %s/%s: %s", manifestD, name, nfs3.StatusString(rep.Status))
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
		return fmt.Errorf("WRITE %s/%s: %s", manifestD, name, nfs3.StatusString(rep.Status))
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
