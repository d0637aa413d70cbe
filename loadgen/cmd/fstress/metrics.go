package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"workbench/loadgen/internal/engine"
	"workbench/loadgen/internal/hoststat"
)

// The agent's live view (issue 50): with --metrics-addr HOST:PORT,
// `fstress agent` serves /metrics in the Prometheus text format for its
// lifetime (promhttp on a registry of its own, with the Go runtime's and
// the process's collectors), for a Prometheus server to scrape while a
// rating runs. Every series carries the agent's deployment id (label
// deployment); those of the trials also the rating_id and slot the run
// request names (empty when it names none). The trial figures are read at
// each scrape from the counters the engine publishes as the run goes on
// (engine.Live: at most 100 ms old), the host's CPU from /proc/stat
// (internal/hoststat). A new (rating_id, slot) starts the counters afresh:
// each series counts the trials of one rating on one slot. A port already
// taken is one line on stderr and the agent runs on without the endpoint;
// the view never fails a trial.

// agentMetrics is the agent's collector: what the scrapes read.
type agentMetrics struct {
	mu      sync.Mutex
	live    *engine.Live // the counters of the trials under labels (nil: no trial yet)
	labels  [2]string    // rating_id, slot of the trial now or last
	running bool
	offered float64 // ops/s of the trial now or last
	trials  int     // trials run (ended) by the agent
	d       metricDescs
}

// metricDescs are the descriptors of agentMetrics' series.
type metricDescs struct {
	running, offered, sent, done, inFlight, errors, skipped, lag, trials, hostCPU *prometheus.Desc
}

func newAgentMetrics() *agentMetrics {
	trial := []string{"rating_id", "slot"}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("fstress_"+name, help, labels, nil)
	}
	return &agentMetrics{d: metricDescs{
		running:  d("trial_running", "1 while the agent runs a trial (from the request to the reply), else 0", trial...),
		offered:  d("offered_ops_per_second", "the offered rate of the trial now or last (this agent's share)", trial...),
		sent:     d("calls_sent_total", "calls sent (warm-up included)", trial...),
		done:     d("calls_completed_total", "calls finished: replies (any NFS status), timeouts and transport errors", trial...),
		inFlight: d("calls_in_flight", "calls sent and not finished yet", trial...),
		errors: d("call_errors_total", "finished calls that failed, by kind: nfs (a reply with an NFS error status), "+
			"timeout (no reply after every retransmit), transport (a send or connection error)", append(trial, "kind")...),
		skipped: d("calls_skipped_total", "due calls not sent (no free call slot at --max-outstanding, or no target)", trial...),
		lag:     d("send_lag_seconds", "actual minus intended send time of the measured calls (warm-up excluded)", trial...),
		trials:  d("trials_total", "trials the agent has run"),
		hostCPU: d("host_cpu_seconds_total", "the host's CPU time over all CPUs from /proc/stat, by mode: "+
			"busy, idle (with iowait), steal (taken by the hypervisor)", "mode"),
	}}
}

// begin marks a trial running at rate ops/s under the request's labels and
// returns the engine counters to give its run (nil when m is nil: no view).
func (m *agentMetrics) begin(ratingID, slot string, rate float64) *engine.Live {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := [2]string{ratingID, slot}; m.live == nil || l != m.labels {
		m.live, m.labels = &engine.Live{}, l
	}
	m.running, m.offered = true, rate
	return m.live
}

// end marks the trial ended.
func (m *agentMetrics) end() {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.running = false
	m.trials++
	m.mu.Unlock()
}

// Describe is prometheus.Collector's.
func (m *agentMetrics) Describe(ch chan<- *prometheus.Desc) {
	d := &m.d
	for _, x := range []*prometheus.Desc{d.running, d.offered, d.sent, d.done, d.inFlight, d.errors, d.skipped,
		d.lag, d.trials, d.hostCPU} {
		ch <- x
	}
}

// Collect is prometheus.Collector's: the figures as of this scrape.
func (m *agentMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	live, lv, running, offered, trials := m.live, m.labels, m.running, m.offered, m.trials
	m.mu.Unlock()
	d := &m.d
	ch <- prometheus.MustNewConstMetric(d.trials, prometheus.CounterValue, float64(trials))
	collectHostCPU(d.hostCPU, ch)
	if live == nil {
		return
	}
	c := live.Snapshot()
	gauge := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, lv[0], lv[1])
	}
	counter := func(desc *prometheus.Desc, v int64, extra ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), append(lv[:], extra...)...)
	}
	run := 0.0
	if running {
		run = 1
	}
	gauge(d.running, run)
	gauge(d.offered, offered)
	gauge(d.inFlight, float64(c.InFlight))
	counter(d.sent, c.Sent())
	counter(d.done, c.Completed)
	counter(d.skipped, c.Skipped)
	counter(d.errors, c.NFSErrors, "nfs")
	counter(d.errors, c.Timeouts, "timeout")
	counter(d.errors, c.TransportErrors, "transport")
	ch <- lagHistogram(d.lag, &c, lv)
}

// collectHostCPU sends the host's CPU seconds by mode (none when /proc/stat
// is unreadable).
func collectHostCPU(desc *prometheus.Desc, ch chan<- prometheus.Metric) {
	c, err := hoststat.Read()
	if err != nil {
		return
	}
	for _, m := range []struct {
		mode  string
		ticks uint64
	}{{"busy", c.Total - c.Idle - c.Steal}, {"idle", c.Idle}, {"steal", c.Steal}} {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(m.ticks)/hoststat.TicksPerSecond, m.mode)
	}
}

// lagHistogram is the send-lag histogram of c in seconds (cumulative buckets).
func lagHistogram(d *prometheus.Desc, c *engine.LiveCounts, lv [2]string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(engine.LagBounds))
	var n uint64
	for i, b := range engine.LagBounds {
		n += uint64(c.Lag[i])
		buckets[b.Seconds()] = n
	}
	n += uint64(c.Lag[len(engine.LagBounds)])
	return prometheus.MustNewConstHistogram(d, n, float64(c.LagSumNs)/1e9, buckets, lv[0], lv[1])
}

// serveMetrics serves m (and the Go and process collectors), every series
// labelled deployment, on addr's /metrics until stop is called. It returns
// the address listened on; a failure to listen is one line on stderr, ""
// and a no-op stop: the agent goes on without the view.
func serveMetrics(addr, deployment string, m *agentMetrics, stderr io.Writer) (bound string, stop func()) {
	ln, err := listenMetrics(addr)
	if err != nil {
		errLine(stderr, "agent: no metrics endpoint on %s (%v); running on without it", addr, err)
		return "", func() {}
	}
	reg := prometheus.NewRegistry()
	prometheus.WrapRegistererWith(prometheus.Labels{"deployment": deployment}, reg).MustRegister(m,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Timeout: 5 * time.Second}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second,
		ErrorLog: log.New(stderr, "fstress: agent: metrics: ", 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln) // ends with Close
	}()
	return ln.Addr().String(), func() {
		srv.Close()
		<-done
	}
}

// listenMetrics listens on HOST:PORT, or takes "fd:N": a listening socket
// the parent opened and passed as descriptor N. A socket stays in the
// network namespace it was made in, so a controller outside the load
// host's namespace passes one of its own for its Prometheus to reach.
func listenMetrics(addr string) (net.Listener, error) {
	n, ok := strings.CutPrefix(addr, "fd:")
	if !ok {
		return net.Listen("tcp", addr)
	}
	fd, err := strconv.Atoi(n)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%q is not fd:N with N >= 3", addr)
	}
	f := os.NewFile(uintptr(fd), "metrics")
	defer f.Close() // FileListener holds its own copy
	return net.FileListener(f)
}
