#!/usr/bin/env python3
"""A stand-in for `fstress agent` speaking its protocol (loadgen/README.md, "Agent") for the unit tests.

    fake_agent.py MODE agent --deployment ID --pid-file FILE

MODE: ok (a run answers a result built from its flags), die (a run ends the process before the
reply: an agent killed mid-trial), silent (a run is never answered), fail (a run answers ok:false,
exit 4: not drained), nohello (exits at once). Like the real agent it writes its pid to --pid-file
and first kills a live process the file names (a stale agent of an earlier deployment).
"""
import json
import os
import signal
import sys
import time


def flag(args, name, default=None):
    return args[args.index(name) + 1] if name in args else default


def main() -> int:
    mode, argv = sys.argv[1], sys.argv[2:]
    assert argv[0] == "agent", argv
    dep, pid_file = flag(argv, "--deployment", ""), flag(argv, "--pid-file")
    if mode == "nohello":
        return 1
    if pid_file:
        try:
            old = int(open(pid_file).read().strip())
            os.kill(old, signal.SIGTERM)
        except (OSError, ValueError):
            pass
        with open(pid_file, "w") as f:
            f.write(f"{os.getpid()}\n")
    out = sys.stdout

    def say(msg):
        out.write(json.dumps(msg) + "\n")
        out.flush()

    say({"event": "hello", "ok": True, "protocol": 1, "pid": os.getpid(), "host": "fake", "deployment": dep})
    trials = 0
    for line in sys.stdin:
        req = json.loads(line)
        op, rid = req["op"], req.get("id")
        if op == "ping":
            say({"id": rid, "op": "ping", "ok": True, "trials": trials, "busy": False, "pid": os.getpid()})
        elif op == "quit":
            say({"id": rid, "op": "quit", "ok": True})
            break
        elif op == "run":
            args = req["args"]
            if mode == "die":
                os._exit(9)
            if mode == "silent":
                continue
            if mode == "fail":
                say({"id": rid, "op": "run", "ok": False, "exit": 4, "error": "server did not drain"})
                continue
            trials += 1
            rate = float(flag(args, "--rate"))
            dur = float(flag(args, "--duration"))
            say({"id": rid, "op": "run", "ok": True, "exit": 0, "elapsed_s": 0.01, "reused": trials > 1,
                 "stderr": "", "result": {
                     "offered_rate": rate, "achieved_rate": rate, "duration_s": dur, "ops_total": int(rate * dur),
                     "mean_ms": 3.5, "std_ms": 1.2, "p50_ms": 3.0, "p95_ms": 6.0, "p99_ms": 9.0, "max_ms": 20.0,
                     "errors": 0, "timeouts": 0, "retransmits": 0, "generator_saturated": False,
                     "saturation_reason": "", "send_lag_ms": {"mean": 0.01, "p99": 0.1, "max": 0.5},
                     "seed": int(flag(args, "--seed")), "client_id": int(flag(args, "--client-id")),
                     "start_at": flag(args, "--start-at"), "args": args}})
        else:
            say({"id": rid, "op": op, "ok": True})
    if pid_file:
        try:
            os.unlink(pid_file)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    time.sleep(0)
    sys.exit(main())
