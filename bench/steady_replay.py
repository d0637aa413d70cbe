#!/usr/bin/env python3
"""Recorded real trials re-judged two ways, side by side: which are trends, which are re-run?

For each rating directory (its `trials/<n>.json`, fstress's results with their interval series),
every trial is mapped as the harness maps it (`measure.trialjson.result_from_json`, which judges
its series with `stats.steady.judge`) twice:

  before   plain Mann–Kendall on the interval means; every not-steady trial but a saturated rise
           excluded and re-run (controller.steadiness before 2026-11-28)
  now      the pre-whitened test (`stats.steady.trend_test`); a trend whose Theil–Sen change is
           under s·R_sat counted too (`controller.steadiness.immaterial_trend`)

and the spec of `--profile` decides what the controller excludes. Prints one line per trial judged
not steady either way, then per rating and in all: trends, exclusions, and the runlength the
exclusions re-run (s), before and now, with the ratio.

Usage:  PYTHONPATH=src .venv/bin/python bench/steady_replay.py [--ratings '/tmp/workbench/ratings/*'] [--profile quick]
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import json
import shlex
import sys
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

from workbench.config.profiles import PROFILES  # noqa: E402
from workbench.controller import steadiness  # noqa: E402
from workbench.controller.spec import RatingSpec  # noqa: E402
from workbench.measure.trialjson import result_from_json  # noqa: E402
from workbench.stats import steady  # noqa: E402


_WHITENED = steady.trend_test


def _plain(x):
    """stats.steady.trend_test as it was: Mann–Kendall on the series itself (no whitening)."""
    return steady.Trend(*steady.mann_kendall(x), 0.0, _WHITENED(x).change)


@contextlib.contextmanager
def _patched():
    """The code as it was: the plain test, and no trend immaterial."""
    with mock.patch.object(steady, "trend_test", _plain), \
         mock.patch.object(steadiness, "immaterial_trend", lambda *a, **k: False):
        yield


def _trials(rating_dir: Path) -> list[tuple[int, dict]]:
    out = []
    for f in (rating_dir / "trials").glob("*.json"):
        if f.stem.isdigit():
            with contextlib.suppress(ValueError, OSError):
                out.append((int(f.stem), json.loads(f.read_text())))
    return sorted(out, key=lambda p: p[0])


def _judged(records, spec):
    """(trials, {index: why excluded}) of one rating's records, judged by the code in force."""
    trials = [result_from_json(raw, float(raw.get("offered_rate") or 0), float(raw.get("duration_s") or 0))
              for _, raw in records]
    return trials, steadiness.not_steady_excluded(spec, trials)


def replay(rating_dir: Path, spec: RatingSpec) -> dict:
    records = [(n, raw) for n, raw in _trials(rating_dir) if raw.get("offered_rate") and raw.get("duration_s")]
    with _patched():
        old, old_out = _judged(records, spec)
    new, new_out = _judged(records, spec)
    for i, ((n, _), a, b) in enumerate(zip(records, old, new)):
        va, vb = steadiness.verdict_of(a), steadiness.verdict_of(b)
        if steadiness.is_not_steady(a) or steadiness.is_not_steady(b):
            print(f"  {rating_dir.name[-26:]} #{n:<3d} {b.load_ops_s:7.0f} ops/s mean {b.mean_ms:9.3g} ms  "
                  f"before {va.get('verdict'):10s} p {va.get('mk_p', float('nan')):.2g}"
                  f"{' EXCLUDED' if i in old_out else ' counted ':9s} | now {vb.get('verdict'):10s} "
                  f"p {vb.get('mk_p', float('nan')):.2g} r1 {vb.get('mk_r1', 0):.2f} "
                  f"change {vb.get('trend_change_ms', float('nan')):+.3g} ms{' EXCLUDED' if i in new_out else ' counted'}")
    trend = lambda ts: sum(1 for t in ts if str(steadiness.verdict_of(t).get("verdict")).startswith("trend"))  # noqa: E731
    rerun = lambda out, ts: sum(float(ts[i].runlength_s) for i in out)  # noqa: E731
    return {"trials": len(new), "trends_before": trend(old), "trends_now": trend(new),
            "excluded_before": len(old_out), "excluded_now": len(new_out),
            "rerun_s_before": rerun(old_out, old), "rerun_s_now": rerun(new_out, new),
            "runlength_s": sum(float(t.runlength_s) for t in new)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ratings", default="/tmp/workbench/ratings/*", help="glob of rating directories")
    ap.add_argument("--profile", default="quick", choices=sorted(PROFILES), help="whose spec decides exclusions")
    args = ap.parse_args(argv)
    print("$ python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *(argv if argv is not None else sys.argv[1:])]))
    spec = RatingSpec(**PROFILES[args.profile]["spec"])
    print(f"# R_sat goals {spec.goals} ms, s {spec.width}: a trend under {spec.width * min(spec.goals):g} ms counts now")
    total: dict[str, float] = {}
    for d in sorted(Path(p) for p in glob.glob(args.ratings)):
        if not (d / "trials").is_dir():
            continue
        r = replay(d, spec)
        if r["trials"]:
            print(f"{d.name}: {r['trials']} trials, trends {r['trends_before']} → {r['trends_now']}, "
                  f"excluded {r['excluded_before']} → {r['excluded_now']} ({r['rerun_s_before']:g} → "
                  f"{r['rerun_s_now']:g} s re-run of {r['runlength_s']:g} s)")
            for k, v in r.items():
                total[k] = total.get(k, 0) + v
    if not total:
        print("no recorded trials with a series")
        return 1
    ratio = total["rerun_s_now"] / total["rerun_s_before"] if total["rerun_s_before"] else float("nan")
    print(f"\nall: {total['trials']:.0f} trials, {total['runlength_s']:g} s; trends {total['trends_before']:.0f} → "
          f"{total['trends_now']:.0f}; excluded and re-run {total['excluded_before']:.0f} → {total['excluded_now']:.0f}, "
          f"{total['rerun_s_before']:g} → {total['rerun_s_now']:g} s ({ratio:.2f}×)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
