package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"workbench/loadgen/internal/engine"
	"workbench/loadgen/internal/probe"
	"workbench/loadgen/internal/results"
)

// keptSession is what an agent keeps between trials: the mounted session
// (its connections, an NFSv4.1 session) and the file set looked up or
// built on it. `run` uses one for its single trial.
type keptSession struct {
	connKey string
	sess    *engine.Session
	setKey  string
	fset    *engine.Fileset
}

// session returns the kept session when it was opened with cfg and all its
// connections are alive, else closes it and connects anew.
func (k *keptSession) session(ctx context.Context, cfg engine.ConnConfig) (*engine.Session, error) {
	key := fmt.Sprintf("%+v", cfg)
	if k.sess != nil && k.connKey == key && k.sess.Alive() {
		return k.sess, nil
	}
	k.close()
	s, err := engine.Connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	k.sess, k.connKey = s, key
	return s, nil
}

// fileset is the trial's file set with the drain's READ stage before it
// (readStageAndFileset) — on the kept set's handles when the workload's
// set for this rate was looked up on this session already.
func (k *keptSession) fileset(ctx context.Context, t *trial, sess *engine.Session, null *results.Drain,
	stderr io.Writer) (*engine.Fileset, *results.Drain, error) {
	c, o := &t.c, &t.o
	key := fmt.Sprintf("%s|%s|%g|%s", t.w.Name, c.wl, o.filesetFor(c.rate), k.connKey)
	if k.fset == nil || k.setKey != key {
		fset, d, err := readStageAndFileset(ctx, c, o, t.w, sess, null, stderr)
		if err != nil {
			return nil, nil, err
		}
		k.fset, k.setKey = fset, key
		return fset, d, nil
	}
	if null == nil || o.drainProbe != probe.ProbeRead || !engine.NeedsFileset(t.w) || c.v41() {
		return k.fset, null, nil
	}
	d, err := drainReads(ctx, c, o, sess.Cfg.Server, probe.Handles{FH: k.fset.FileFH, Sizes: k.fset.FileSize}, null, stderr)
	if err != nil {
		if errors.Is(err, probe.ErrNoData) {
			return k.fset, null, nil
		}
		return nil, nil, err
	}
	return k.fset, d, nil
}

// close ends the kept session (DESTROY_SESSION for NFSv4.1) and forgets the file set.
func (k *keptSession) close() {
	if k.sess != nil {
		k.sess.Close()
	}
	*k = keptSession{}
}
