#!/usr/bin/env python3
"""What the per-interval time series costs fstress (issue 15): two binaries side by side, one run.

    .venv/bin/python bench/series_overhead.py --baseline /tmp/fstress-base [--new bin/fstress]
        [--rates 200000,600000,1000000] [--repeats 3] [--duration 5]

Both binaries run the same NULL-only trial against one `fstress nullserver` (core 0), pinned to
core 1 with GOMAXPROCS=1 as in bench/loadgen.py, alternating A/B/A/B so that drifts in the
shared machine's load fall on both. Per rate: the median CPU s per 100k ops (rusage of the
whole process, set-up and 1 s warm-up included), their ratio new/baseline, send-lag p99 and
whether either flagged itself saturated. The baseline is fstress before the series
(`git archive <commit> loadgen | tar -x -C DIR && cd DIR/loadgen && go build -o ... ./cmd/fstress`).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from loadgen import SERVER_CORE, free_port, run_fstress  # noqa: E402


def trial(binary: str, conn: list[str], wl: Path, rate: int, dur: float, out: Path) -> dict:
    """One pinned run (bench/loadgen.py): CPU s per 100k ops, send-lag p99, saturation, JSON size."""
    r = run_fstress([], [*conn, "--workload", str(wl), "--rate", str(rate), "--duration", str(dur),
                         "--warmup", "1"], out, dur * 4 + 30, binary=Path(binary))
    out.unlink()
    return {"cpu_per_100k": r["cpu_s"] / r["ops_total"] * 1e5,
            "lag_p99_us": r["send_lag_ms"]["p99"] * 1e3, "saturated": r["generator_saturated"],
            "json_bytes": len(json.dumps({k: v for k, v in r.items() if k != "cpu_s"}))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="fstress without the series")
    ap.add_argument("--new", default=str(REPO / "bin" / "fstress"))
    ap.add_argument("--rates", default="200000,600000,1000000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5.0)
    a = ap.parse_args()
    rates = [int(x) for x in a.rates.split(",")]
    bins = {"baseline": a.baseline, "new": a.new}
    port = free_port()
    server = subprocess.Popen(["taskset", "-c", SERVER_CORE, a.new, "nullserver", "--listen", f"127.0.0.1:{port}"],
                              stderr=subprocess.DEVNULL)
    runs: dict[tuple[int, str], list[dict]] = {}
    try:
        time.sleep(0.5)
        conn = ["--server", f"127.0.0.1:{port}", "--mount-port", str(port), "--export", "/null"]
        with tempfile.TemporaryDirectory() as tmpd:
            wl = Path(tmpd) / "null.wl"
            wl.write_text("name = null_only\nmix = null:1\nfileset_min_files = 16\nfileset_files_per_ops = 0.001\n")
            for rate in rates:
                for rep in range(a.repeats):
                    for name, binary in bins.items():
                        r = trial(binary, conn, wl, rate, a.duration, Path(tmpd) / "out.json")
                        runs.setdefault((rate, name), []).append(r)
                        print(f"  {rate} {name} #{rep}: {r}", file=sys.stderr)
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"{'offered/s':>10} {'CPU s/100k base':>16} {'CPU s/100k new':>15} {'new/base':>9} "
          f"{'lag p99 us base/new':>20} {'saturated b/n':>14} {'JSON bytes b/n':>16}")
    for rate in rates:
        b, n = runs[(rate, "baseline")], runs[(rate, "new")]
        mb = statistics.median(x["cpu_per_100k"] for x in b)
        mn = statistics.median(x["cpu_per_100k"] for x in n)
        lag = f"{statistics.median(x['lag_p99_us'] for x in b):.0f}/{statistics.median(x['lag_p99_us'] for x in n):.0f}"
        sat = f"{sum(x['saturated'] for x in b)}/{sum(x['saturated'] for x in n)}"
        size = f"{b[0]['json_bytes']}/{n[0]['json_bytes']}"
        print(f"{rate:10d} {mb:16.3f} {mn:15.3f} {mn / mb:9.3f} {lag:>20} {sat:>14} {size:>16}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
