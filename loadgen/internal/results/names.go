package results

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"workbench/loadgen/internal/nfs3"
)

// NFSVersion41 is Result.NFSVersion of an NFSv4.1 run; an NFSv3 run leaves
// it empty (its JSON is what it always was).
const NFSVersion41 = "4.1"

// v41Names names the NFSv4.1 COMPOUND each workload procedure is sent as
// (engine: the v4.1 dispatch), indexed by procedure. A name that is also a
// v3 procedure's name stands for that procedure in both versions.
var v41Names = [nfs3.NumProcs]string{
	nfs3.ProcNull:        "null",
	nfs3.ProcGetattr:     "getattr",
	nfs3.ProcSetattr:     "setattr",
	nfs3.ProcLookup:      "lookup",
	nfs3.ProcAccess:      "access",
	nfs3.ProcReadlink:    "readlink",
	nfs3.ProcRead:        "read",
	nfs3.ProcWrite:       "write",
	nfs3.ProcCreate:      "open_create",
	nfs3.ProcMkdir:       "create_dir",
	nfs3.ProcSymlink:     "create_symlink",
	nfs3.ProcMknod:       "mknod",
	nfs3.ProcRemove:      "remove",
	nfs3.ProcRmdir:       "remove_dir",
	nfs3.ProcRename:      "rename",
	nfs3.ProcLink:        "link",
	nfs3.ProcReaddir:     "readdir",
	nfs3.ProcReaddirplus: "readdir_attrs",
	nfs3.ProcFsstat:      "getattr_fsstat",
	nfs3.ProcFsinfo:      "getattr_fsinfo",
	nfs3.ProcPathconf:    "getattr_pathconf",
	nfs3.ProcCommit:      "commit",
}

// OpName is the per-op name of workload procedure p in a result of NFS
// version v ("" for v3, NFSVersion41).
func OpName(p nfs3.Proc, v string) string {
	if v == NFSVersion41 && int(p) < len(v41Names) {
		return v41Names[p]
	}
	return p.String()
}

// opByName is the procedure a per-op name stands for, v3 or v4.1.
func opByName(name string) (nfs3.Proc, bool) {
	if p, ok := nfs3.ProcByName(name); ok {
		return p, true
	}
	for i, n := range v41Names {
		if n == name {
			return nfs3.Proc(i), true
		}
	}
	return 0, false
}

// NFS4Stats are the NFSv4.1 session's counters of a run (Result.NFS4).
type NFS4Stats struct {
	SessionsRecreated uint64 `json:"sessions_recreated"` // after NFS4ERR_BADSESSION / DEADSESSION
	SeqMisordered     uint64 `json:"seq_misordered"`     // replies NFS4ERR_SEQ_MISORDERED
	SlotWaits         uint64 `json:"slot_waits"`         // calls that waited for a free session slot
	Reconnects        uint64 `json:"reconnects"`         // TCP connections re-established
	Reopened          uint64 `json:"reopened"`           // files re-opened after the client id changed
	Slots             int    `json:"slots"`              // the slot table's size (largest when merged)
}

func (a *NFS4Stats) add(b *NFS4Stats) {
	a.SessionsRecreated += b.SessionsRecreated
	a.SeqMisordered += b.SeqMisordered
	a.SlotWaits += b.SlotWaits
	a.Reconnects += b.Reconnects
	a.Reopened += b.Reopened
	a.Slots = max(a.Slots, b.Slots)
}

// addVersion merges the NFS version, the NFSv4.1 counters and the error
// statuses of r; results of different NFS versions do not merge.
func (m *merger) addVersion(r *Result, first bool) error {
	out := m.out
	if first {
		out.NFSVersion = r.NFSVersion
	} else if r.NFSVersion != out.NFSVersion {
		return fmt.Errorf("NFS version %q differs from the first result's %q", versionName(r.NFSVersion), versionName(out.NFSVersion))
	}
	if r.NFS4 != nil {
		if out.NFS4 == nil {
			out.NFS4 = &NFS4Stats{}
		}
		out.NFS4.add(r.NFS4)
	}
	for k, v := range r.ErrorStatuses {
		if out.ErrorStatuses == nil {
			out.ErrorStatuses = map[string]uint64{}
		}
		out.ErrorStatuses[k] += v
	}
	return nil
}

func versionName(v string) string {
	if v == "" {
		return "3"
	}
	return v
}

// errorLine is the summary's line naming the error statuses ("" when none).
func errorLine(m map[string]uint64) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return "errors by status: " + strings.Join(parts, ", ")
}

// summaryNFS4 prints the NFS version, the error statuses and the session
// counters of an NFSv4.1 result (nothing for NFSv3).
func (r *Result) summaryNFS4(w io.Writer) {
	if r.NFSVersion != "" {
		fmt.Fprintf(w, "NFS version %s", r.NFSVersion)
		if n := r.NFS4; n != nil {
			fmt.Fprintf(w, ": %d slots, sessions re-created %d, seq misordered %d, slot waits %d, reconnects %d, files re-opened %d",
				n.Slots, n.SessionsRecreated, n.SeqMisordered, n.SlotWaits, n.Reconnects, n.Reopened)
		}
		fmt.Fprintln(w)
	}
	if l := errorLine(r.ErrorStatuses); l != "" {
		fmt.Fprintln(w, l)
	}
}
