package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"workbench/loadgen/internal/engine"
	"workbench/loadgen/internal/results"
)

// The resident agent: `fstress agent` runs trials on request and keeps the
// connections, the NFSv4.1 session and the file set between them. Its
// control channel is its stdin and stdout — over the SSH connection the
// harness opens to the load host (`ssh HOST fstress agent ...`), so it is
// authenticated by SSH, opens no port, and dies with the connection: the
// end of stdin cancels the trial in progress and ends the agent. One JSON
// object per line each way; see loadgen/README.md, "Agent".

// AgentProtocol is the version of the agent's line protocol (hello.protocol).
// 2: `agent --metrics-addr` (metrics.go), the hello's metrics and a run
// request's rating_id and slot (labels of the live view); else as 1.
const AgentProtocol = 2

// agentRequest is one request line.
type agentRequest struct {
	ID       string   `json:"id"`
	Op       string   `json:"op"`                  // run, ping, cancel, reset, quit
	Args     []string `json:"args,omitempty"`      // run: the flags of `fstress run` without --json
	RatingID string   `json:"rating_id,omitempty"` // run: labels of the live view (protocol 2)
	Slot     string   `json:"slot,omitempty"`
}

// agentReply is one reply line (also the hello line, with Event set).
type agentReply struct {
	Event      string          `json:"event,omitempty"` // "hello" on the first line
	ID         string          `json:"id,omitempty"`
	Op         string          `json:"op,omitempty"`
	OK         bool            `json:"ok"`
	Exit       *int            `json:"exit,omitempty"` // run: fstress run's exit code
	Saturated  bool            `json:"saturated,omitempty"`
	Error      string          `json:"error,omitempty"`
	Result     *results.Result `json:"result,omitempty"`
	Stderr     string          `json:"stderr,omitempty"` // run: what fstress run would have printed on stderr
	ElapsedS   float64         `json:"elapsed_s,omitempty"`
	Reused     *bool           `json:"reused,omitempty"` // run: the kept connections and file set served this trial
	Protocol   int             `json:"protocol,omitempty"`
	PID        int             `json:"pid,omitempty"`
	Host       string          `json:"host,omitempty"`
	Deployment string          `json:"deployment,omitempty"`
	Metrics    string          `json:"metrics,omitempty"` // hello: the address /metrics is served on (protocol 2)
	Trials     int             `json:"trials,omitempty"`  // ping: trials run so far
	Busy       bool            `json:"busy,omitempty"`    // ping: a trial is running
}

// agent is the state of one agent process.
type agent struct {
	out     *json.Encoder
	outMu   sync.Mutex
	kept    keptSession
	mu      sync.Mutex
	cancel  context.CancelFunc // of the trial in progress (nil: none)
	trials  int
	running bool
	metrics *agentMetrics // the live view (nil: off)
}

func (a *agent) reply(r agentReply) {
	a.outMu.Lock()
	defer a.outMu.Unlock()
	a.out.Encode(r) // one line; an error means the harness is gone: the end of stdin follows
}

// cmdAgent is `fstress agent [--deployment ID] [--pid-file FILE] [--metrics-addr HOST:PORT]`.
func cmdAgent(args []string, stdout, stderr io.Writer) int {
	return agentMain(args, os.Stdin, stdout, stderr)
}

func agentMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("agent")
	deployment := fs.String("deployment", "", "deployment id, echoed in the hello line")
	pidFile := fs.String("pid-file", "", "pid file: a live agent named in it is stopped first (a stale agent of an earlier deployment); removed at exit")
	metricsAddr := fs.String("metrics-addr", "", "serve the live view on HOST:PORT/metrics, or on fd:N, a listening socket the parent passed (Prometheus text format; empty: none)")
	if !parseFlags(fs, args, stderr) {
		return exitUsage
	}
	if *pidFile != "" {
		if err := takePidFile(*pidFile, 5*time.Second); err != nil {
			errLine(stderr, "agent: %v", err)
			return exitError
		}
		defer removeOwnPidFile(*pidFile)
	}
	a := &agent{out: json.NewEncoder(stdout)}
	defer a.kept.close()
	var served string
	if *metricsAddr != "" {
		a.metrics = newAgentMetrics()
		var stop func()
		served, stop = serveMetrics(*metricsAddr, *deployment, a.metrics, stderr)
		defer stop()
	}
	host, _ := os.Hostname()
	a.reply(agentReply{Event: "hello", OK: true, Protocol: AgentProtocol, PID: os.Getpid(), Host: host,
		Deployment: *deployment, Metrics: served})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	work := make(chan agentRequest, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for req := range work {
			if !a.serve(req, stderr) {
				return
			}
		}
	}()
	a.readRequests(stdin, work, done, sig, stderr)
	a.cancelTrial()
	<-done
	return exitOK
}

// readRequests reads request lines until the end of stdin, a quit, or a
// signal: ping and cancel are answered at once (even during a trial), the
// rest go to the worker in order.
func (a *agent) readRequests(stdin io.Reader, work chan<- agentRequest, done <-chan struct{}, sig <-chan os.Signal, stderr io.Writer) {
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	defer close(work)
	for {
		select {
		case <-sig:
			return
		case <-done: // quit
			return
		case line, ok := <-lines:
			if !ok {
				return // the harness (or its SSH connection) is gone
			}
			if len(bytes.TrimSpace(line)) > 0 && !a.dispatch(line, work) {
				return
			}
		}
	}
}

// dispatch handles one request line; false: stop reading (quit).
func (a *agent) dispatch(line []byte, work chan<- agentRequest) bool {
	var req agentRequest
	if err := json.Unmarshal(line, &req); err != nil {
		a.reply(agentReply{OK: false, Error: "bad request line: " + err.Error()})
		return true
	}
	switch req.Op {
	case "ping":
		a.mu.Lock()
		r := agentReply{ID: req.ID, Op: req.Op, OK: true, Trials: a.trials, Busy: a.running, PID: os.Getpid()}
		a.mu.Unlock()
		a.reply(r)
	case "cancel":
		a.reply(agentReply{ID: req.ID, Op: req.Op, OK: true, Busy: a.cancelTrial()})
	case "run", "reset", "quit":
		work <- req
		return req.Op != "quit"
	default:
		a.reply(agentReply{ID: req.ID, Op: req.Op, OK: false, Error: fmt.Sprintf("unknown op %q (want run, ping, cancel, reset or quit)", req.Op)})
	}
	return true
}

// cancelTrial cancels the trial in progress; true when there was one.
func (a *agent) cancelTrial() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancel != nil {
		a.cancel()
		return true
	}
	return false
}

// serve runs one queued request on the worker; false after quit.
func (a *agent) serve(req agentRequest, stderr io.Writer) bool {
	switch req.Op {
	case "reset":
		a.kept.close()
		a.reply(agentReply{ID: req.ID, Op: req.Op, OK: true})
	case "quit":
		a.reply(agentReply{ID: req.ID, Op: req.Op, OK: true})
		return false
	default:
		a.reply(a.runTrial(req))
	}
	return true
}

// runTrial runs a run request as `fstress run` would, with the kept
// session, and builds its reply.
func (a *agent) runTrial(req agentRequest) agentReply {
	start := time.Now()
	var buf bytes.Buffer
	rep := agentReply{ID: req.ID, Op: "run"}
	t, code := parseTrial(req.Args, false, &buf)
	var out *engine.Outcome
	if t != nil {
		t.live = a.metrics.begin(req.RatingID, req.Slot, t.c.rate)
		defer a.metrics.end()
		ctx, cancel := context.WithCancel(context.Background())
		a.mu.Lock()
		a.cancel, a.running = cancel, true
		a.mu.Unlock()
		sess, fset := a.kept.sess, a.kept.fset
		o, c := t.execute(ctx, &a.kept, &buf)
		reused := sess != nil && sess == a.kept.sess && fset == a.kept.fset
		rep.Reused = &reused
		if o != nil && (o.Result.Timeouts > 0 || o.LeftOutstanding > 0) {
			// the server still holds the unanswered calls of these connections: the next trial
			// would queue behind them (52 s more after an overloaded trial on Ganesha); as the end of
			// a `fstress run` process does, close them and let the next trial connect anew
			a.kept.close()
		}
		a.mu.Lock()
		a.cancel, a.running = nil, false
		a.trials++
		a.mu.Unlock()
		cancel()
		out, code = o, c
	}
	if out != nil {
		out.Result.Summary(&buf)
		rep.OK, rep.Result, rep.Saturated = true, out.Result, out.Saturated
		if code = exitOK; out.Saturated {
			code = exitSaturated
			errLine(&buf, "generator saturated: %s", out.Reason)
		}
	} else {
		rep.Error = lastErrLine(buf.String())
	}
	rep.Exit, rep.Stderr, rep.ElapsedS = &code, buf.String(), time.Since(start).Seconds()
	return rep
}

// lastErrLine is the last "fstress: ..." line of a trial's stderr.
func lastErrLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimPrefix(lines[i], "fstress: "); l != lines[i] {
			return l
		}
	}
	return strings.TrimSpace(s)
}

// takePidFile stops a live agent the pid file names (SIGTERM, then SIGKILL
// after wait) and writes this process's pid into it.
func takePidFile(path string, wait time.Duration) error {
	if b, err := os.ReadFile(path); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 && pid != os.Getpid() && isAgent(pid) {
			syscall.Kill(pid, syscall.SIGTERM)
			deadline := time.Now().Add(wait)
			for isAgent(pid) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if isAgent(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
				for i := 0; i < 100 && isAgent(pid); i++ {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}
	}
	return results.WriteFileAtomic(path, []byte(strconv.Itoa(os.Getpid())+"\n"))
}

// isAgent reports whether pid is a live `fstress agent` process (not a
// zombie, and its command line is an agent's).
func isAgent(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(st, ')'); i < 0 || i+2 >= len(st) || st[i+2] == 'Z' {
		return false
	}
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(string(cmd), "\x00")
	for i, s := range args {
		if s == "agent" && i > 0 && strings.Contains(args[i-1], "fstress") {
			return true
		}
	}
	return false
}

// removeOwnPidFile removes the pid file if it still names this process.
func removeOwnPidFile(path string) {
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
		os.Remove(path)
	}
}
