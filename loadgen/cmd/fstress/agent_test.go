package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"workbench/loadgen/internal/nullserver"
	"workbench/loadgen/internal/results"
)

// TestMain lets a test start the test binary as an agent process
// (FSTRESS_TEST_AGENT=1): a process the test can kill.
func TestMain(m *testing.M) {
	if os.Getenv("FSTRESS_TEST_AGENT") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// agentConn is the harness side of an agent: requests in, reply lines out.
type agentConn struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

func (c *agentConn) send(req agentRequest) {
	c.t.Helper()
	b, _ := json.Marshal(req)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("sending %s: %v", req.Op, err)
	}
}

// next reads the next reply line; ok false at the end of the agent's output.
func (c *agentConn) next() (agentReply, bool) {
	var r agentReply
	if !c.out.Scan() {
		return r, false
	}
	if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
		c.t.Fatalf("bad reply line %q: %v", c.out.Text(), err)
	}
	return r, true
}

func (c *agentConn) must() agentReply {
	c.t.Helper()
	r, ok := c.next()
	if !ok {
		c.t.Fatal("agent output ended")
	}
	return r
}

// inProcessAgent runs agentMain on pipes.
func inProcessAgent(t *testing.T) (*agentConn, <-chan int) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- agentMain(nil, inR, outW, io.Discard)
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	return &agentConn{t: t, in: inW, out: sc}, code
}

func trialArgs(port int, dur string) []string {
	p := strconv.Itoa(port)
	return []string{"--server", "127.0.0.1:" + p, "--mount-port", p, "--export", "/export", "--workload", "web_server",
		"--rate", "400", "--duration", dur, "--warmup", "0.2", "--seed", "9", "--drain-timeout", "0", "--conns", "2"}
}

// A trial with calls the server never answered (timeouts) closes the kept
// connections: the next trial connects anew (its reply says reused false)
// instead of queueing behind the lost calls; the one after it reuses again.
func TestAgentReconnectsAfterTimeouts(t *testing.T) {
	var drop atomic.Bool
	port := startServer(t, &nullserver.Server{Drop: func(prog, _, proc, _ uint32) bool {
		return prog == 100003 && proc == 1 && drop.Load() // GETATTR lost while drop is set
	}})
	a, _ := inProcessAgent(t)
	a.must() // hello
	args := append(trialArgs(port, "1"), "--timeout", "100ms", "--retransmits", "0")
	want := []struct{ drop, reused bool }{{false, false}, {true, true}, {false, false}, {false, true}}
	for k, w := range want {
		drop.Store(w.drop)
		a.send(agentRequest{ID: strconv.Itoa(k), Op: "run", Args: args})
		r := a.must()
		if !r.OK || r.Result == nil || r.Reused == nil || *r.Reused != w.reused || (r.Result.Timeouts > 0) != w.drop {
			t.Fatalf("trial %d (drop %v): ok %v reused %v timeouts %v error %q", k, w.drop, r.OK, r.Reused,
				r.Result != nil && r.Result.Timeouts > 0, r.Error)
		}
	}
	a.in.Close()
}

// The agent runs two trials on one session and file set; each returns what
// `fstress run` writes for the same flags (same calls, procedure by
// procedure); quit ends it with exit 0.
func TestAgentRunsTrials(t *testing.T) {
	_, port := startNull(t)
	a, code := inProcessAgent(t)
	if h := a.must(); h.Event != "hello" || h.Protocol != AgentProtocol || h.PID != os.Getpid() {
		t.Fatalf("hello: %+v", h)
	}
	var got []*results.Result
	for k := 1; k <= 2; k++ {
		a.send(agentRequest{ID: "trial" + strconv.Itoa(k), Op: "run", Args: trialArgs(port, "1")})
		r := a.must()
		if r.ID != "trial"+strconv.Itoa(k) || !r.OK || r.Exit == nil || (*r.Exit != 0 && *r.Exit != 3) || r.Result == nil {
			t.Fatalf("trial %d: %+v", k, r)
		}
		if r.Reused == nil || *r.Reused != (k == 2) {
			t.Errorf("trial %d: reused %v", k, r.Reused)
		}
		got = append(got, r.Result)
	}
	a.send(agentRequest{ID: "p", Op: "ping"})
	if p := a.must(); !p.OK || p.Trials != 2 || p.Busy {
		t.Errorf("ping: %+v", p)
	}
	js := filepath.Join(t.TempDir(), "r.json")
	if c, _, stderr := runCLI(append([]string{"run", "--json", js}, trialArgs(port, "1")...)...); c != 0 && c != 3 {
		t.Fatalf("fstress run: exit %d: %s", c, stderr)
	}
	want, err := results.ReadJSONFile(js)
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range got {
		if r.NullRTTMs == nil || r.NullRTTMs.N < 1 || r.NullRTTMs.N > 11 {
			t.Errorf("trial %d: null_rtt_ms %+v: want the NULLs beside the 1 s trial", k+1, r.NullRTTMs)
		}
		if r.OpsTotal != want.OpsTotal || len(r.Ops) != len(want.Ops) || r.Series == nil || len(r.FirstCalls) == 0 {
			t.Errorf("trial %d: %d ops in %d procedures, fstress run: %d in %d", k+1, r.OpsTotal, len(r.Ops), want.OpsTotal, len(want.Ops))
		}
		for op, o := range want.Ops {
			if r.Ops[op] == nil || r.Ops[op].Count != o.Count {
				t.Errorf("trial %d: %s: %v, fstress run %d", k+1, op, r.Ops[op], o.Count)
			}
		}
	}
	a.send(agentRequest{ID: "q", Op: "quit"})
	if q := a.must(); q.ID != "q" || !q.OK {
		t.Errorf("quit: %+v", q)
	}
	if c := <-code; c != 0 {
		t.Errorf("agent exit %d", c)
	}
}

// A bad run request is a failed reply (a refusal: exit 2, one line), not the end of the agent.
func TestAgentBadRequest(t *testing.T) {
	a, code := inProcessAgent(t)
	a.must()
	a.send(agentRequest{ID: "x", Op: "run", Args: []string{"--server", "127.0.0.1:1", "--export", "/", "--workload", "nope", "--rate", "1"}})
	if r := a.must(); r.OK || r.Exit == nil || *r.Exit != exitUsage || !strings.Contains(r.Error, "nope") {
		t.Errorf("bad workload: %+v", r)
	}
	a.send(agentRequest{ID: "y", Op: "dance"})
	if r := a.must(); r.OK || !strings.Contains(r.Error, "unknown op") {
		t.Errorf("unknown op: %+v", r)
	}
	a.in.Close() // the harness is gone: the agent ends
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the agent did not end at the end of its input")
	}
}

// startAgentProcess starts the test binary as `fstress agent ARGS`.
func startAgentProcess(t *testing.T, args ...string) (*exec.Cmd, *agentConn) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"agent"}, args...)...)
	cmd.Env = append(os.Environ(), "FSTRESS_TEST_AGENT=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	a := &agentConn{t: t, in: in, out: sc}
	if h := a.must(); h.Event != "hello" || h.PID != cmd.Process.Pid {
		t.Fatalf("hello: %+v", h)
	}
	return cmd, a
}

// An agent killed mid-trial: the harness's pending request sees the end of
// the agent's output at once (a harness failure), not a result.
func TestAgentKilledMidTrial(t *testing.T) {
	_, port := startNull(t)
	cmd, a := startAgentProcess(t)
	a.send(agentRequest{ID: "long", Op: "run", Args: trialArgs(port, "20")})
	time.Sleep(700 * time.Millisecond)
	a.send(agentRequest{ID: "p", Op: "ping"})
	if p := a.must(); !p.Busy {
		t.Errorf("ping during the trial: %+v", p)
	}
	killed := time.Now()
	cmd.Process.Kill()
	if r, ok := a.next(); ok {
		t.Fatalf("a killed agent answered: %+v", r)
	}
	if d := time.Since(killed); d > 2*time.Second {
		t.Errorf("end of output %v after the kill", d)
	}
}

// A second agent with the same pid file replaces a stale one (which ends);
// the end of its input ends the second, which removes the pid file.
func TestAgentReplacesStaleAgent(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "agent.pid")
	old, a1 := startAgentProcess(t, "--pid-file", pidFile, "--deployment", "d1")
	_, a2 := startAgentProcess(t, "--pid-file", pidFile, "--deployment", "d2")
	if r, ok := a1.next(); ok {
		t.Errorf("the stale agent still answers: %+v", r)
	}
	old.Wait()
	b, _ := os.ReadFile(pidFile)
	a2.send(agentRequest{ID: "p", Op: "ping"})
	p := a2.must()
	if strings.TrimSpace(string(b)) != strconv.Itoa(p.PID) {
		t.Errorf("pid file %q, agent %d", b, p.PID)
	}
	a2.in.Close()
	if _, ok := a2.next(); ok {
		t.Error("output after the end of input")
	}
	deadline := time.Now().Add(3 * time.Second)
	for _, err := os.Stat(pidFile); err == nil && time.Now().Before(deadline); _, err = os.Stat(pidFile) {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(pidFile); err == nil {
		t.Error("pid file left after the agent ended")
	}
}

// NFSv4.1 through the agent: two trials of a mix that READs and WRITEs
// (files opened and closed per trial) on one kept session, no errors.
func TestAgentNFS41Trials(t *testing.T) {
	_, port := startNull(t)
	a, code := inProcessAgent(t)
	a.must()
	args := []string{"--nfs-version", "4.1", "--server", "127.0.0.1:" + strconv.Itoa(port), "--export", "/export",
		"--workload", "db_tp", "--rate", "300", "--duration", "0.6", "--warmup", "0.1", "--drain-timeout", "0"}
	for k := 1; k <= 2; k++ {
		a.send(agentRequest{ID: strconv.Itoa(k), Op: "run", Args: args})
		r := a.must()
		if !r.OK || r.Result == nil || r.Result.NFSVersion != "4.1" || r.Result.Errors != 0 || r.Result.Timeouts != 0 ||
			r.Result.OpsTotal != 180 || r.Reused == nil || *r.Reused != (k == 2) {
			t.Fatalf("trial %d: ok %v exit %v reused %v error %q stderr %s", k, r.OK, r.Exit, r.Reused, r.Error, r.Stderr)
		}
	}
	a.in.Close()
	<-code
}

// Two agents given one --start-at start their schedules together.
func TestAgentsCommonStart(t *testing.T) {
	_, port := startNull(t)
	at := time.Now().Add(1500 * time.Millisecond)
	starts := make(chan int64, 2)
	for id := 0; id < 2; id++ {
		a, code := inProcessAgent(t)
		a.must()
		args := append(trialArgs(port, "0.5"), "--start-at", strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 6, 64),
			"--client-id", strconv.Itoa(id))
		a.send(agentRequest{ID: "s", Op: "run", Args: args})
		go func() {
			r, ok := a.next()
			a.in.Close()
			<-code
			if !ok || !r.OK {
				starts <- 0
				return
			}
			starts <- r.Result.StartUnixNs
		}()
	}
	s1, s2 := <-starts, <-starts
	want := at.Add(200 * time.Millisecond).UnixNano() // start + warm-up
	for _, s := range []int64{s1, s2} {
		if d := time.Duration(s - want); d < -5*time.Millisecond || d > 5*time.Millisecond {
			t.Errorf("measured window began %v from the common start + warm-up", d)
		}
	}
}
