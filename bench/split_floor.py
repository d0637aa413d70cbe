#!/usr/bin/env python3
"""How close can the latency split come? Its parts beside each call's times on the wire (issue 50).

    .venv/bin/python bench/split_floor.py [--loads 200,800,2000,3200,3600,4000] [--trials 2]
        [--runlength 20] [--slot slot1] [--profile quick] [--out /tmp/split-floor/<time>]

Provisions the main job's default server on a local slot as bench/wall_noise.py does, and runs
--trials trials of --runlength s at each load. Beside each trial, bench/wirecap.py captures every
NFS call on the wire of the server's namespace and of the load host's (kernel timestamps), so each
call's time is known where no product part measures it:

  W   server residence: the reply's first byte leaving the server's link − the call's last byte
      arriving there (receive queue, Ganesha's RPC layer, the operation, the reply's encoding)
  R   wire round trip at the client: the reply's last byte in − the call's first byte out
  RN  the same for fstress's NULL probes; WN their server residence

and prints, per load, the product's parts (latency_split.trial_split: client mean C, Ganesha's
mean S, the receive-queue estimate Q, NULL round trip N, send lag L) beside W and R, and:

  unreported  (W − S) / C   the server's time its statistics do not report (the split's floor
                            with Ganesha's own mean as the server part)
  Q error     (Q − (W − S)) / C   what the receive-queue estimate adds beyond it
  oracle gap  (W + N + L − C) / C   the three-part sum with the server part measured on the wire
  client stack (C − L − R) / C   fstress's time outside the wire (its send and receive paths)
  ideal gap   (W + (RN − WN) + L − C) / C   each part measured at its best: the server on the wire,
                            the network as the NULLs' wire round trip less their server residence

Runs as root; the captures cost CPU beside the server (niced, kernel timestamps: their delay does
not move a time, only their drop count, printed). Nothing else should run beside it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:] = [str(REPO / "src")] + [p for p in sys.path if Path(p or ".").resolve() != REPO / "bench"]
# (bench/bottleneck.py would shadow the bottleneck package pandas imports)
from workbench import cli  # noqa: E402
from workbench.findings.latency_split import trial_split  # noqa: E402
from workbench.lease.heartbeat import holding  # noqa: E402
from workbench.lease.leases import lease_slot  # noqa: E402
from workbench.pipeline.slot import harness_for, reap_slots, teardown  # noqa: E402
from workbench.pipeline.steps import deploy, provision  # noqa: E402
from workbench.store.local import LocalStore  # noqa: E402

LEASE_WAIT_S = 600.0


def loads_arg(text: str) -> list[float]:
    loads = [float(x) for x in text.split(",") if x.strip()]
    if not loads or any(not 0 < x < 1e7 for x in loads):
        raise argparse.ArgumentTypeError(f"loads must be positive numbers, comma-separated; got {text!r}")
    return loads
CAPTURE_END_S = 60.0  # a capture writes its file within this after SIGTERM


def start_capture(netns: str, out: Path, seconds: float) -> subprocess.Popen:
    cmd = ["ip", "netns", "exec", netns, "nice", "-n", "5", sys.executable,
           str(REPO / "bench" / "wirecap.py"), "--out", str(out), "--seconds", str(seconds)]
    return subprocess.Popen(cmd)


def stop_capture(p: subprocess.Popen, out: Path) -> dict:
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=CAPTURE_END_S)
    return json.loads(out.read_text())


def pairs(records: list) -> dict:
    """(conn, xid) -> (proc, call first, call last, reply first, reply last) in ns."""
    calls, replies = {}, {}
    for conn, d, xid, proc, t0, t1, _len in records:
        (calls if d == "c" else replies)[(conn, xid)] = (proc, t0, t1)
    return {k: (c[0], c[1], c[2], replies[k][1], replies[k][2])
            for k, c in calls.items() if k in replies}


def wire_figures(sut: dict, load: dict, window_ns: tuple[int, int]) -> dict:
    """Means over the calls fstress sent inside its measured window (raw start_unix_ns, duration_s)
    and seen on both wires, in ms."""
    s, c = pairs(sut["records"]), pairs(load["records"])
    lo, hi = window_ns
    ws, rs, wn, rn = [], [], [], []
    for k in s.keys() & c.keys():
        proc, _c0, s_in, s_out, _s1 = s[k]
        _p, c_out, _c1, _r0, c_in = c[k]
        if not lo <= c_out < hi:
            continue
        (wn if proc == 0 else ws).append((s_out - s_in) / 1e6)
        (rn if proc == 0 else rs).append((c_in - c_out) / 1e6)
    if len(ws) < 20:
        return {"calls": len(ws)}
    return {"calls": len(ws), "W": statistics.fmean(ws), "R": statistics.fmean(rs),
            "WN": statistics.median(wn) if wn else None, "RN": statistics.median(rn) if rn else None,
            "drops": sut["stats"]["kernel_drops"] + load["stats"]["kernel_drops"],
            "desyncs": sut["stats"]["desyncs"] + load["stats"]["desyncs"]}


def window_ns(raw: dict) -> tuple[int, int]:
    start = int(raw["start_unix_ns"])
    return start, start + int(float(raw["duration_s"]) * 1e9)


def row(split: dict, wire: dict) -> dict:
    c, s, q, w = split["client_ms"], split["server_ms"], split["server_queue_ms"], wire["W"]
    n, lag = split["network_ms"], split["queueing_ms"]
    return {"C": c, "S": s, "Q": q, "N": n, "L": lag, **wire,
            "unreported_pct": 100 * (w - s) / c, "q_error_pct": 100 * (q - (w - s)) / c,
            "oracle_gap_pct": 100 * (w + n + lag - c) / c,
            "product_gap_pct": split["gap_pct"], "client_stack_pct": 100 * (c - lag - wire["R"]) / c,
            **({"ideal_gap_pct": 100 * (w + wire["RN"] - wire["WN"] + lag - c) / c}
               if wire.get("RN") is not None else {})}


def analyse(load: float, n: int, valid: bool, reason: str, raw: dict, caps: list[dict]) -> dict:
    split, wire = trial_split(raw), wire_figures(*caps, window_ns(raw))
    r = {"load": load, "trial": n, "valid": valid, "reason": reason}
    if "missing" in split or "W" not in wire:
        r["missing"] = split.get("missing") or f"{wire['calls']} calls on both wires"
    else:
        r.update(row(split, wire))
    return r


def reanalyse(out: Path) -> list[dict]:
    """The rows again from a run's saved trials, telemetry and captures (--from)."""
    rows = []
    for tel in sorted(out.glob("telemetry-*.json"), key=lambda p: int(p.stem.split("-")[1])):
        n = int(tel.stem.split("-")[1])
        raw = {**json.loads((out / "work" / "trials" / f"{n}.json").read_text()),
               "telemetry": json.loads(tel.read_text())}
        caps = [json.loads((out / f"cap-{n}-{h}.json").read_text()) for h in ("sut", "load")]
        rows.append(analyse(float(raw["offered_rate"]), n, True, "", raw, caps))
    return rows


def run(a, plan, out: Path) -> list[dict]:
    k = re.fullmatch(r"slot(\d+)", a.slot)
    if not k:
        raise SystemExit(f"--slot must be a local slot slotK (namespaces wb-sutK, wb-loadK); got {a.slot!r}")
    rows = []
    h = harness_for(plan)
    n = 0
    for load in a.loads:
        for _ in range(a.trials):
            files = out / f"cap-{n}-sut.json", out / f"cap-{n}-load.json"
            procs = [start_capture(f"wb-{host}{k.group(1)}", f, a.runlength * 3 + 120)
                     for host, f in zip(("sut", "load"), files, strict=True)]
            try:
                t = h.measure(load, a.runlength, trial_id=n)
            finally:
                caps = [stop_capture(p, f) for p, f in zip(procs, files, strict=True)]
            (out / f"telemetry-{n}.json").write_text(json.dumps((t.raw or {}).get("telemetry")))
            rows.append(analyse(load, n, t.valid, t.reason, t.raw or {}, caps))
            print(json.dumps(rows[-1]), flush=True)
            n += 1
    return rows


def table(rows: list[dict]) -> None:
    cols = ("C", "S", "Q", "N", "L", "W", "R", "WN", "RN", "unreported_pct", "q_error_pct",
            "oracle_gap_pct", "product_gap_pct", "client_stack_pct", "ideal_gap_pct")
    print("\nload    " + " ".join(f"{c[:10]:>10}" for c in cols) + "  (ms; % of C; median of trials)")
    for load in sorted({r["load"] for r in rows}):
        rs = [r for r in rows if r["load"] == load and "C" in r and r["valid"]]
        if not rs:
            print(f"{load:6.0f}  no valid trial with every part")
            continue
        med = [statistics.median(v) if (v := [r[c] for r in rs if r.get(c) is not None]) else None
               for c in cols]
        print(f"{load:6.0f}  " + " ".join(f"{v:10.3f}" if v is not None else f"{'-':>10}" for v in med)
              + f"  n={len(rs)} drops={sum(r['drops'] for r in rs)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loads", type=loads_arg, default=loads_arg("200,800,2000,3200,3600,4000"))
    ap.add_argument("--trials", type=int, default=2, help="trials at each load (1–20)")
    ap.add_argument("--runlength", type=float, default=20.0, help="s per trial (5–300)")
    ap.add_argument("--slot", default="slot1")
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--out", type=Path,
                    default=Path(f"/tmp/split-floor/{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"))
    ap.add_argument("--from", dest="saved", type=Path, help="re-analyse a run's saved files; run nothing")
    a = ap.parse_args(argv)
    if a.saved:
        table(reanalyse(a.saved))
        return 0
    if not (1 <= a.trials <= 20 and 5 <= a.runlength <= 300):
        ap.error("--trials must be 1–20 and --runlength 5–300 s")
    a.out.mkdir(parents=True, exist_ok=True)
    args = cli._parser().parse_args(["rate", "--profile", a.profile, "--slot", a.slot, "--results", str(a.out)])
    plan = dataclasses.replace(cli.build_plan(args, rating_id=a.out.name), workdir=str(a.out / "work"))
    reap_slots(log=lambda s: print(s, flush=True))
    plan = lease_slot(plan, wait_s=LEASE_WAIT_S, log=lambda s: print(s, flush=True))
    try:
        store = LocalStore(a.out)
        provision(plan, store)
        print(f"{plan.server_text()}\n{deploy(plan, store)}", flush=True)
        with holding(plan):
            rows = run(a, plan, a.out)
    finally:
        print(f"teardown: {teardown(plan)}", flush=True)
    (a.out / "rows.json").write_text(json.dumps(rows, indent=1))
    table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
