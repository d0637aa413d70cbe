package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Tests of the agent's live view (metrics.go): scrapes of a real endpoint
// while an in-process agent runs trials against the in-repo null server.

// lockedBuf is a bytes.Buffer safe for the agent's goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// agentWith runs agentMain with args on pipes, its stderr kept.
func agentWith(t *testing.T, args ...string) (*agentConn, <-chan int, *lockedBuf) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &lockedBuf{}
	code := make(chan int, 1)
	go func() {
		code <- agentMain(args, inR, outW, stderr)
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	a := &agentConn{t: t, in: inW, out: sc}
	t.Cleanup(func() { inW.Close() })
	return a, code, stderr
}

// scrape is one scrape's metric families.
type scrape map[string]*dto.MetricFamily

var scrapeClient = &http.Client{Timeout: 5 * time.Second}

func scrapeOnce(url string) (scrape, error) {
	resp, err := scrapeClient.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// metric is the series of family name whose labels include want (nil: none).
func (s scrape) metric(name string, want map[string]string) *dto.Metric {
	f := s[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// value is the gauge's or counter's value of that series (-1: none).
func (s scrape) value(name string, want map[string]string) float64 {
	m := s.metric(name, want)
	switch {
	case m == nil:
		return -1
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return -1
}

// pollScrape scrapes url every 20 ms until cond holds; fails the test when
// it does not within the bound.
func pollScrape(t *testing.T, url string, within time.Duration, what string, cond func(scrape) bool) scrape {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		s, err := scrapeOnce(url)
		if err == nil && cond(s) {
			return s
		}
		last = err
		<-tick.C
	}
	t.Fatalf("no scrape of %s showed %s within %v (last error %v)", url, what, within, last)
	return nil
}

// With --metrics-addr, a scrape during a trial shows it running and its
// completed calls growing; after the reply, not running, every call sent
// completed, the measured calls' send lags; a trial of another rating
// starts its own series. Every series carries the deployment; the Go and
// process collectors are there.
func TestAgentMetricsDuringTrial(t *testing.T) {
	_, port := startNull(t)
	a, code, stderr := agentWith(t, "--deployment", "dep-m", "--metrics-addr", "127.0.0.1:0")
	h := a.must()
	if h.Protocol != 2 || h.Metrics == "" {
		t.Fatalf("hello: %+v (stderr %q)", h, stderr.String())
	}
	url := "http://" + h.Metrics + "/metrics"
	s, err := scrapeOnce(url)
	if err != nil {
		t.Fatal(err)
	}
	dep := map[string]string{"deployment": "dep-m"}
	for _, name := range []string{"fstress_trials_total", "go_goroutines", "process_cpu_seconds_total"} {
		if s.metric(name, dep) == nil {
			t.Errorf("before any trial: no %s{deployment=dep-m}", name)
		}
	}
	if s.value("fstress_host_cpu_seconds_total", map[string]string{"mode": "busy"}) <= 0 {
		t.Error("no host CPU seconds (mode busy)")
	}
	r1 := map[string]string{"deployment": "dep-m", "rating_id": "r1", "slot": "slot1"}
	a.send(agentRequest{ID: "t1", Op: "run", Args: trialArgs(port, "2"), RatingID: "r1", Slot: "slot1"})
	var first float64
	pollScrape(t, url, 10*time.Second, "the trial running with completed calls", func(s scrape) bool {
		first = s.value("fstress_calls_completed_total", r1)
		return s.value("fstress_trial_running", r1) == 1 && first > 0
	})
	pollScrape(t, url, 5*time.Second, "the completed calls growing", func(s scrape) bool {
		return s.value("fstress_trial_running", r1) == 1 && s.value("fstress_calls_completed_total", r1) > first
	})
	rep := a.must()
	if !rep.OK || rep.Result == nil {
		t.Fatalf("trial: %+v", rep)
	}
	checkAfterTrial(t, url, r1, rep.Result.OpsTotal, 400*2.2)
	// another rating: its own series from 0; the first one's gone
	r2 := map[string]string{"rating_id": "r2", "slot": "slot1"}
	a.send(agentRequest{ID: "t2", Op: "run", Args: trialArgs(port, "0.5"), RatingID: "r2", Slot: "slot1"})
	if rep := a.must(); !rep.OK {
		t.Fatalf("trial 2: %+v", rep)
	}
	s, err = scrapeOnce(url)
	if err != nil {
		t.Fatal(err)
	}
	got := s.value("fstress_calls_completed_total", r2) + s.value("fstress_calls_skipped_total", r2)
	if got != 400*0.7 || s.metric("fstress_calls_completed_total", r1) != nil {
		t.Errorf("rating r2: completed+skipped %v, want 280; r1's series still there: %v", got,
			s.metric("fstress_calls_completed_total", r1) != nil)
	}
	if got := s.value("fstress_trials_total", dep); got != 2 {
		t.Errorf("trials_total %v, want 2", got)
	}
	a.in.Close()
	if c := <-code; c != exitOK {
		t.Errorf("agent exit %d", c)
	}
	if _, err := scrapeOnce(url); err == nil {
		t.Error("the endpoint still answers after the agent ended")
	}
}

// checkAfterTrial: right after the reply the scrape shows the trial ended,
// all calls of it (warm-up included: want) completed and none in flight,
// the measured calls' (ops) send lags, the offered rate.
func checkAfterTrial(t *testing.T, url string, labels map[string]string, ops uint64, want float64) {
	t.Helper()
	s, err := scrapeOnce(url)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.value("fstress_trial_running", labels); got != 0 {
		t.Errorf("after the trial: running %v", got)
	}
	done, sent := s.value("fstress_calls_completed_total", labels), s.value("fstress_calls_sent_total", labels)
	skipped := s.value("fstress_calls_skipped_total", labels)
	if done+skipped != want || sent != done || s.value("fstress_calls_in_flight", labels) != 0 {
		t.Errorf("after the trial: completed %v skipped %v sent %v in flight %v, want %v due, all sent completed", done,
			skipped, sent, s.value("fstress_calls_in_flight", labels), want)
	}
	if got := s.value("fstress_offered_ops_per_second", labels); got != 400 {
		t.Errorf("offered %v, want 400", got)
	}
	if m := s.metric("fstress_send_lag_seconds", labels); m == nil || m.Histogram == nil || m.Histogram.GetSampleCount() != ops {
		t.Errorf("send lag histogram %v: want %d samples (the measured calls)", m, ops)
	}
	if got := s.value("fstress_call_errors_total", map[string]string{"kind": "timeout", "rating_id": labels["rating_id"]}); got != 0 {
		t.Errorf("timeouts %v", got)
	}
}

// A port already taken: one line on stderr, no endpoint in the hello, and
// the trials run as without the view.
func TestAgentMetricsPortTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, port := startNull(t)
	a, code, stderr := agentWith(t, "--metrics-addr", taken.Addr().String())
	if h := a.must(); h.Event != "hello" || !h.OK || h.Metrics != "" {
		t.Fatalf("hello: %+v", h)
	}
	if e := stderr.String(); strings.Count(e, "\n") != 1 || !strings.Contains(e, "no metrics endpoint on "+taken.Addr().String()) {
		t.Errorf("stderr %q: want one line naming the address", e)
	}
	a.send(agentRequest{ID: "t", Op: "run", Args: trialArgs(port, "0.5"), RatingID: "r", Slot: "slot2"})
	if r := a.must(); !r.OK || r.Result == nil {
		t.Fatalf("trial without the view: %+v", r)
	}
	a.in.Close()
	if c := <-code; c != exitOK {
		t.Errorf("agent exit %d", c)
	}
}

// TestListenMetricsTakesAPassedSocket: --metrics-addr fd:N serves on the
// listening socket descriptor N (what a controller outside the load host's
// network namespace passes); a bad fd:N is an error, not a guess.
func TestListenMetricsTakesAPassedSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File() // a copy: descriptor ≥ 3
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// listenMetrics owns (closes) the descriptor it is given, as the agent owns the one it inherits:
	// give it one of its own, never f's (f's finalizer would close a number reused meanwhile)
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	passed, err := listenMetrics("fd:" + strconv.Itoa(fd))
	if err != nil {
		t.Fatal(err)
	}
	defer passed.Close()
	if passed.Addr().String() != ln.Addr().String() {
		t.Fatalf("fd listener on %s, want %s", passed.Addr(), ln.Addr())
	}
	for _, bad := range []string{"fd:x", "fd:1"} {
		if _, err := listenMetrics(bad); err == nil {
			t.Errorf("listenMetrics(%q): no error", bad)
		}
	}
}
