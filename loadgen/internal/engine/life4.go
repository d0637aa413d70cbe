package engine

import (
	"context"
	"fmt"
	"time"

	"workbench/loadgen/internal/nfs3"
	"workbench/loadgen/internal/nfs4"
	"workbench/loadgen/internal/rpc"
)

// Bounds of the NFSv4.1 recovery (each loop also ends with the run).
const (
	recoverTries   = 600                    // Recover attempts per lost session (~2 min at recoverGap)
	recoverGap     = 200 * time.Millisecond // between them
	reopenRounds   = 180                    // rounds of OPENs refused with NFS4ERR_GRACE / DELAY
	reopenGap      = time.Second            // between them
	reconnectMax   = time.Second            // longest wait between connection attempts
	closeFilesTime = 30 * time.Second       // bound of the CLOSEs at the end of a run
)

// start4 prepares the NFSv4.1 side of a run (in set-up): it opens the
// files when the mix READs or WRITEs (their open stateids are used), and
// starts a connection watcher per connection and the session recovery.
func (r *runner) start4(ctx context.Context) error {
	v := r.v4
	for _, m := range r.w.Mix {
		if m.Weight > 0 && (m.Proc == nfs3.ProcRead || m.Proc == nfs3.ProcWrite) {
			v.needOpen = true
		}
	}
	if v.needOpen && len(r.fs.FileFH) > 0 {
		if _, err := r.openFiles(ctx, nil); err != nil {
			return fmt.Errorf("opening the file set: %v", err)
		}
	}
	for i := range v.conns {
		v.wg.Add(1)
		go r.watchConn(i)
	}
	v.wg.Add(1)
	go r.recoverLoop()
	return nil
}

// finish4 stops the watchers and closes the files the run opened.
func (r *runner) finish4() {
	v := r.v4
	v.cancel()
	v.wg.Wait()
	sids := *v.sids.Load()
	if len(sids) == 0 {
		return
	}
	p := newPipe(r.s, 64)
	deadline := time.Now().Add(closeFilesTime)
	for f, sid := range sids {
		if sid == (nfs4.Stateid{}) || time.Now().After(deadline) {
			continue
		}
		p.callRaw4(nfs4.Request{Op: nfs4.OpClose, FH: nfs4.FH(r.fs.FileFH[f]), Stateid: sid}, func(*nfs4.Reply) {})
	}
	if err := p.wait(); err != nil && r.cfg.Log != nil {
		fmt.Fprintf(r.cfg.Log, "fstress: warning: closing the file set: %v\n", err)
	}
}

// openFiles opens (OPEN, no create, read and write) the files of the set
// — those of only when not nil — and publishes their stateids; it returns
// the files whose OPEN was refused with NFS4ERR_GRACE or NFS4ERR_DELAY.
func (r *runner) openFiles(ctx context.Context, only []int) (again []int, err error) {
	v := r.v4
	sids := append([]nfs4.Stateid(nil), *v.sids.Load()...)
	if len(sids) < len(r.fs.FileFH) {
		sids = append(sids, make([]nfs4.Stateid, len(r.fs.FileFH)-len(sids))...)
	}
	if only == nil {
		only = make([]int, len(r.fs.FileFH))
		for i := range only {
			only[i] = i
		}
	}
	p := newPipe(r.s, 64)
	for _, f := range only {
		if ctx.Err() != nil {
			break
		}
		lf := &r.fs.Layout.Files[f]
		p.callRaw4(nfs4.Request{Op: nfs4.OpOpen, FH: nfs4.FH(r.fs.DirFH[lf.Dir]), Name: lf.Name}, func(rep *nfs4.Reply) {
			switch rep.Status {
			case nfs4.NFS4_OK:
				sids[f] = rep.Stateid
			case nfs4.NFS4ERR_GRACE, nfs4.NFS4ERR_DELAY:
				again = append(again, f)
			default:
				p.fail(fmt.Errorf("OPEN %s/%s: %s", r.fs.Layout.Path(lf.Dir), lf.Name, nfs4.StatusString(rep.Status)))
			}
		})
	}
	err = p.wait()
	v.sids.Store(&sids)
	return again, err
}

// recoverLoop re-creates a session a reply found gone (Session.Recover,
// retried while the server is away) and, when the client id changed too
// (a restarted server), re-opens the files.
func (r *runner) recoverLoop() {
	v := r.v4
	defer v.wg.Done()
	for {
		var gen uint32
		select {
		case <-v.ctx.Done():
			return
		case gen = <-v.lost:
		}
		id := v.v4.ClientID()
		v.holding.Store(true)
		if v.recoverSession(gen) && v.v4.ClientID() != id && v.needOpen {
			r.reopen()
		}
		v.holding.Store(false)
	}
}

// afterReconnect checks the session on a re-established connection
// before calls go out again: a SEQUENCE (Renew) that re-creates a session
// the server lost (nfs4.Session.Call), then the files re-opened when the
// client id changed (a restarted server).
func (r *runner) afterReconnect() {
	v := r.v4
	v.holding.Store(true)
	defer v.holding.Store(false)
	id := v.v4.ClientID()
	for i := 0; i < recoverTries && v.ctx.Err() == nil; i++ {
		ctx, cancel := context.WithTimeout(v.ctx, setupTimeout)
		err := v.v4.Renew(ctx)
		cancel()
		if err == nil {
			break
		}
		select {
		case <-v.ctx.Done():
		case <-time.After(recoverGap):
		}
	}
	if v.v4.ClientID() != id && v.needOpen {
		r.reopen()
	}
}

// recoverSession calls Recover until it succeeds (true) or the tries or
// the run end.
func (v *run4) recoverSession(gen uint32) bool {
	for i := 0; i < recoverTries; i++ {
		ctx, cancel := context.WithTimeout(v.ctx, setupTimeout)
		err := v.v4.Recover(ctx, gen)
		cancel()
		if err == nil {
			return true
		}
		select {
		case <-v.ctx.Done():
			return false
		case <-time.After(recoverGap):
		}
	}
	return false
}

// reopen opens every file again (the old open stateids died with the
// client id), retrying those refused during the server's grace period;
// calls wait (holding) only for the first round.
func (r *runner) reopen() {
	v := r.v4
	var only []int
	for round := 0; round < reopenRounds && v.ctx.Err() == nil; round++ {
		again, err := r.openFiles(v.ctx, only)
		if err != nil && r.cfg.Log != nil {
			fmt.Fprintf(r.cfg.Log, "fstress: warning: re-opening the file set: %v\n", err)
		}
		if only == nil {
			v.reopened.Add(uint64(len(r.fs.FileFH) - len(again)))
		} else {
			v.reopened.Add(uint64(len(only) - len(again)))
		}
		v.holding.Store(false)
		if len(again) == 0 {
			return
		}
		only = again
		select {
		case <-v.ctx.Done():
			return
		case <-time.After(reopenGap):
		}
	}
}

// watchConn re-establishes connection i whenever it fails (a server
// restart), until the run ends; the metronome keeps calls for it in the
// backlog meanwhile.
func (r *runner) watchConn(i int) {
	v := r.v4
	defer v.wg.Done()
	cfg := &v.sess.Cfg
	opt := rpc.Options{Timeout: cfg.Timeout, MaxRetransmits: cfg.Retransmits, Auth: rpc.HostAuthSys()}
	for {
		select {
		case <-v.ctx.Done():
			return
		case <-v.conns[i].Load().Done():
		}
		wait := 50 * time.Millisecond
		for {
			c, err := rpc.DialContext(v.ctx, cfg.Server, opt)
			if err == nil {
				v.conns[i].Store(c)
				v.sess.setClient(i, c)
				v.reconnects.Add(1)
				if i == 0 {
					r.afterReconnect()
				}
				break
			}
			select {
			case <-v.ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, reconnectMax)
		}
	}
}
