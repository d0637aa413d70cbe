package engine

import (
	"context"
	"errors"
	"fmt"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/rpc"
	"workbench/loadgen/internal/workload"
)

// ErrNoFileset is a file of the layout the server does not have (LOOKUP
// NOENT): the file set is not built yet.
var ErrNoFileset = errors.New("the file set is not built yet")

// DrainFiles is the run's file set as the drain's READ stage sees it
// before the file-set lookup (which a backlog would hold up unrecorded):
// the layout's files, each handle found when it is picked by LOOKUP of its
// name in its directory, the directories' handles by LOOKUP of their path
// from the export root once (remembered) — a cold client's way to a file.
type DrainFiles struct {
	l    *Layout
	root nfs3.FH
	dirs map[int32]nfs3.FH
}

// NewDrainFiles is the file set of workload w at rate under the export's
// root handle.
func NewDrainFiles(w *workload.Workload, rate float64, root nfs3.FH) *DrainFiles {
	files, dirs := w.FilesetSize(rate)
	return &DrainFiles{l: GenLayout(w, LayoutSeed, files, dirs), root: root, dirs: map[int32]nfs3.FH{}}
}

func (d *DrainFiles) Files() int        { return len(d.l.Files) }
func (d *DrainFiles) Size(i int) uint64 { return d.l.Files[i].Size }

// Handle looks up file i on c (its directories first, once).
func (d *DrainFiles) Handle(ctx context.Context, c *rpc.Client, i int) (nfs3.FH, error) {
	f := d.l.Files[i]
	dir, err := d.dir(ctx, c, f.Dir)
	if err != nil {
		return nil, err
	}
	return lookupName(ctx, c, dir, f.Name)
}

func (d *DrainFiles) dir(ctx context.Context, c *rpc.Client, k int32) (nfs3.FH, error) {
	if fh, ok := d.dirs[k]; ok {
		return fh, nil
	}
	parent := d.root
	if p := d.l.Dirs[k].Parent; p >= 0 {
		var err error
		if parent, err = d.dir(ctx, c, p); err != nil {
			return nil, err
		}
	}
	fh, err := lookupName(ctx, c, parent, d.l.Dirs[k].Name)
	if err == nil {
		d.dirs[k] = fh
	}
	return fh, err
}

// lookupName is a LOOKUP of name in dir; NOENT is ErrNoFileset.
func lookupName(ctx context.Context, c *rpc.Client, dir nfs3.FH, name string) (nfs3.FH, error) {
	req := nfs3.Request{Proc: nfs3.ProcLookup, FH: dir, Name: name}
	body, err := c.CallContext(ctx, nfs3.Program, nfs3.Version, uint32(nfs3.ProcLookup), req.Encode)
	if err != nil {
		return nil, err
	}
	rep, err := nfs3.DecodeReply(nfs3.ProcLookup, body)
	switch {
	case err != nil:
		return nil, err
	case rep.Status == nfsNoEnt:
		return nil, fmt.Errorf("LOOKUP %s: %w", name, ErrNoFileset)
	case rep.Status != nfsOK:
		return nil, fmt.Errorf("LOOKUP %s: %s", name, nfs3.StatusString(rep.Status))
	}
	return append(nfs3.FH(nil), rep.FH...), nil
}
