"""The trial log → one summary per load: CI of the mean response time, latency rule, status.

[CC] = Cutting Corners (shared/seeds/000_*, newer text 002_*), Algorithm 2 steps 7–10: a load's
status follows from the CI of its trials' means at confidence c against the peak-rate region
[R_sat ± s·R_sat] (stop rules in docs/controller.md "Decision rule")."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

from workbench.controller.fit import near_r_sat
from workbench.controller.policy import LinearPolicy
from workbench.controller.spec import RatingSpec
from workbench.controller.state import LoadStatus, LoadSummary, SearchState, bracket_of, load_key
from workbench.controller.trial import TrialResult
from workbench.stats.intervals import MeanCI, mean_ci, region


def _lat_value(spec: RatingSpec, t: TrialResult) -> float:
    """Latency-rule statistic of one trial, in the form 'this percentile must be ≤ L_sat'.
    p_sat None → p95 (the paper's rule). p_sat given: raw["frac_within_l_sat"] if the harness
    reports it (then saturated when P < P_sat, mapped to ±inf), else p95 for p_sat ≤ 0.95 and p99
    (falling back to p95) above — a conservative reading of the P_sat form."""
    if spec.p_sat is None:
        return t.p95_ms
    raw = t.raw or {}
    frac = raw.get("frac_within_l_sat")
    if isinstance(frac, (int, float)):
        return 0.0 if frac >= spec.p_sat else math.inf
    if spec.p_sat <= 0.95:
        return t.p95_ms
    return t.p99_ms if t.p99_ms is not None else t.p95_ms


# throughput rule: saturated when the completed operations fall this many SDs short
THROUGHPUT_Z = 5.0


def _throughput_z(valid: Sequence[TrialResult]) -> float:
    """z of the operations completed at a load against those offered: (Σ achieved·r − Σ λ·r)/√(Σ
    λ·r), N(0, 1) for a server that keeps up with Poisson arrivals (its count is Poisson(λ·r))."""
    offered = sum(float(t.load) * float(t.runlength) for t in valid)
    done = sum(float(t.achieved_rate) * float(t.runlength) for t in valid)
    return (done - offered) / math.sqrt(offered) if offered > 0 else 0.0


def _side_by(centre_ms: float, r_sat: float) -> tuple[LoadStatus, int, bool]:
    """A load classified by a centre (its mean or median trial mean) against R_sat, not
    confidently."""
    return (
        (LoadStatus.BELOW_BY_MEAN, -1, False)
        if centre_ms < r_sat
        else (LoadStatus.ABOVE_BY_MEAN, +1, False)
    )


def _by_ci(spec: RatingSpec, r_sat: float, ci: MeanCI) -> tuple[LoadStatus, int, bool] | None:
    """The load's CI against the peak-rate region (Algorithm 2 steps 7–10): below it, above it, a
    peak, or (accurate, straddling an edge and R_sat) by its mean; None while undecided."""
    rlo, rhi = region(r_sat, spec.width)
    acc = ci.accuracy
    if ci.high < rlo:
        return LoadStatus.BELOW, -1, True
    if ci.low > rhi:
        return LoadStatus.ABOVE, +1, True
    # the CI overlaps the peak-rate region: a potential peak
    if spec.stop_rule == "overlap":
        if acc >= spec.accuracy:
            return LoadStatus.PEAK, 0, True
        return None
    if rlo <= ci.low and ci.high <= rhi and acc >= spec.accuracy:
        return LoadStatus.PEAK, 0, True
    if (acc >= spec.accuracy or spec.early_side) and ci.high < r_sat:
        return LoadStatus.BELOW, -1, True
    if (acc >= spec.accuracy or spec.early_side) and ci.low > r_sat:
        return LoadStatus.ABOVE, +1, True
    if acc >= spec.accuracy and abs(ci.mean - r_sat) > spec.edge_patience * spec.width * r_sat:
        # accurate, straddling a region edge and R_sat: fitting it inside would take many
        # trials; a load nearer R_sat is cheaper. Classified by its mean (not confident).
        return _side_by(ci.mean, r_sat)
    return None


def _classify(
    spec: RatingSpec,
    r_sat: float,
    n: int,
    ci: MeanCI,
    lat: float,
    lat_ci: MeanCI,
    median_ms: float = math.nan,
    far_ms: float | None = None,
) -> tuple[LoadStatus, int, bool]:
    """(status, side, confident) of one load for goal r_sat (Algorithm 2 steps 7–10); far_ms: the
    policy's far threshold (Policy.far_threshold_ms; None at the seed load's fixed sample)."""
    pol = spec.policy
    if spec.strawman and isinstance(pol, LinearPolicy) and pol.trials is not None:
        # §3.1 strawman: a fixed number of trials t, then saturated iff the mean response time
        # exceeds R_sat (or the percentile rule breaks L_sat); no CI, no adaptive trial count
        if n < pol.trials:
            return LoadStatus.OPEN, 0, False
        if lat > spec.l_sat_ms or ci.mean > r_sat:
            return LoadStatus.ABOVE, +1, False
        return LoadStatus.BELOW, -1, False
    if n < spec.min_trials:
        if n == 1 and far_ms is not None and ci.mean > far_ms:
            # far above R_sat: one trial decides (not at confidence c; never a bound of the λ* CI).
            # Never below: past capacity a trial's noise can read far below R_sat.
            return LoadStatus.ABOVE_BY_MEAN, +1, False
        return LoadStatus.OPEN, 0, False
    if lat > spec.l_sat_ms:  # percentile rule: saturated regardless of the mean
        return LoadStatus.ABOVE, +1, bool(lat_ci.low > spec.l_sat_ms) or math.isinf(lat)
    if n < spec.policy.near_min_trials and near_r_sat(ci.mean, r_sat):
        # near R_sat two trials give a CI on 1 df: it rests on one difference, which a heavy tail,
        # an outlier or a clamped reading past capacity makes small by chance (a knee load above
        # the region classified below on 33.1 and 33.2 ms ended a rating outside it)
        return LoadStatus.OPEN, 0, False
    by_ci = _by_ci(spec, r_sat, ci)
    if by_ci is not None:
        return by_ci
    if far_ms is not None and median_ms > far_ms:
        # undecided, but half its trials read above far_factor·R_sat: past capacity (a queue's
        # transient swings trial means by orders of magnitude), and no number of trials will put
        # it in the region. Saturated by its median (not confident; never a bound of the λ* CI)
        return LoadStatus.ABOVE_BY_MEAN, +1, False
    if n >= spec.max_trials_per_load:
        # Not confident: classify by the median trial mean, not the mean. One cold-start outlier
        # (316 ms among 0.25 ms trials) must not flip the side; with n this small Auto-pilot's
        # z-score warning (seed 001 §3.3) cannot flag it, since |z| ≤ (n−1)/√n (Shiffler 1988).
        centre = median_ms if math.isfinite(median_ms) else ci.mean
        return _side_by(centre, r_sat)
    return LoadStatus.OPEN, 0, False


def summarize(
    spec: RatingSpec, trials: Sequence[TrialResult], r_sat_ms: float | None = None
) -> list[LoadSummary]:
    """Per-load summaries of the valid trials, in order of each load's first trial."""
    r_sat = spec.r_sat_ms if r_sat_ms is None else r_sat_ms
    groups: dict[float, list[tuple[int, TrialResult]]] = {}
    for i, t in enumerate(trials):
        if t.load_ops_s is None or t.runlength_s is None:
            raise ValueError(f"trial {i} has no load_ops_s/runlength_s: tag it with .at(load, r)")
        groups.setdefault(load_key(t.load), []).append((i, t))
    out = [_load_summary(spec, r_sat, key, items) for key, items in groups.items()]
    if spec.policy.monotone_check:
        out = _monotone_check(out, r_sat)
    out.sort(key=lambda s: s.order)
    return out


def _load_summary(
    spec: RatingSpec, r_sat: float, key: float, items: Sequence[tuple[int, TrialResult]]
) -> LoadSummary:
    """One load from its (position in the log, trial) items."""
    valid = [t for _, t in items if t.valid]
    means = tuple(t.mean_ms for t in valid)
    rls = tuple(float(t.runlength) for t in valid)
    ci = _load_ci(spec, means, rls)
    lat, lat_ci = _latency(spec, valid, ci)
    median_ms = float(statistics.median(means)) if means else math.nan
    status, side, conf = _status_of(spec, r_sat, key, valid, ci, lat, lat_ci, median_ms)
    return LoadSummary(
        load=items[0][1].load,
        order=items[0][0],
        n=len(valid),
        mean=ci.mean,
        ci=ci,
        lat=lat,
        status=status,
        side=side,
        confident=conf,
        latency_saturated=bool(lat > spec.l_sat_ms),
        runlengths=rls,
        means=means,
        achieved_ops_s=(sum(t.achieved_rate * r for t, r in zip(valid, rls)) / sum(rls))
        if valid
        else math.nan,
        throughput_z=_throughput_z(valid) if valid else 0.0,
    )


def _load_ci(spec: RatingSpec, means: tuple[float, ...], rls: tuple[float, ...]) -> MeanCI:
    """[CC] Eq. 1's CI of the load's mean (runlength-weighted when the runlengths differ)."""
    w = None if len(set(rls)) <= 1 else rls
    ci = mean_ci(means, spec.confidence, weights=w) if means else mean_ci([], spec.confidence)
    if spec.policy.distrust_repeats and len(set(means)) < len(means):
        # a repeated trial mean: a continuous measurement never repeats exactly (a clamped or
        # quantised reading: past capacity the simulated families clamp a trial at 0.05·R);
        # such a sample is no evidence of precision, nor of the load's side
        ci = MeanCI(ci.mean, -math.inf, math.inf, ci.n, math.nan, math.inf)
    return ci


def _latency(spec: RatingSpec, valid: Sequence[TrialResult], ci: MeanCI) -> tuple[float, MeanCI]:
    """The latency rule's statistic of the load and its CI (_lat_value per trial): ±inf when most
    trials read the P_sat form broken."""
    lats = [_lat_value(spec, t) for t in valid]
    if any(math.isinf(v) for v in lats):
        return (math.inf if sum(math.isinf(v) for v in lats) * 2 > len(lats) else 0.0), ci
    if lats:
        lat_ci = mean_ci(lats, spec.confidence)
        return lat_ci.mean, lat_ci
    return math.nan, ci


def _status_of(
    spec: RatingSpec,
    r_sat: float,
    key: float,
    valid: Sequence[TrialResult],
    ci: MeanCI,
    lat: float,
    lat_ci: MeanCI,
    median_ms: float,
) -> tuple[LoadStatus, int, bool]:
    """(status, side, confident): the throughput rule, else _classify; the seed load's fixed
    sample needs its n_min trials, even past the cap or far off."""
    lspec, n_min, far = spec, spec.min_trials_at(key), spec.policy.far_threshold_ms(r_sat)
    seed = spec.is_seed_sample(key)
    if seed:  # the seed sample: n_min trials, even past the cap or far off
        cap = max(n_min, spec.max_trials_per_load)
        lspec = dataclasses.replace(spec, min_trials=n_min, max_trials_per_load=cap)
        far = None
    seeding = seed and len(valid) < n_min  # … nor does the throughput rule classify it sooner
    if (
        spec.policy.throughput_rule
        and valid
        and not seeding
        and _throughput_z(valid) < -THROUGHPUT_Z
    ):
        return LoadStatus.ABOVE, +1, True  # it does not keep up: saturated
    return _classify(lspec, r_sat, len(valid), ci, lat, lat_ci, median_ms, far)


MONOTONE_FACTOR = 1.5  # policy "local": a load reading this much below a lower load is not "below"
MONOTONE_FLOOR = 0.1  # … unless that lower load reads below this share of R_sat (the flat part)
HOLD_MAX_TRIALS = 4  # … and once both have this many trials, the held load is judged by its mean


def _monotone_check(loads: list[LoadSummary], r_sat: float) -> list[LoadSummary]:
    """R(λ) is monotone: a load classified unsaturated whose median trial is below 1/MONOTONE_FACTOR
    of the median at a lower load (with ≥ 2 trials) contradicts it — past capacity a trial's noise
    can read far below R_sat — so it stays open (more trials) instead of raising the bracket's low
    end. Medians, not means: one outlier trial at a lower load must not keep every load above it
    open for ever (a knee server sampled 200 ops/s 397 times behind one 3× outlier at 50 ops/s).
    The open load names the lower load (held_by) with the highest median, for decide to resample
    when that one has fewer trials. A lower load whose median is below MONOTONE_FLOOR·R_sat
    witnesses nothing: in the flat part of the curve 0.2 against 0.1 ms is cache and scheduling
    noise, not a queue (a quick rating resampled 200 ops/s four times behind 800 and 3200 ops/s at
    0.1 ms). Once the load and its holder have HOLD_MAX_TRIALS trials each, more trials will not
    settle the medians (at a wall's edge a load's trials are bimodal: 1012 ops/s read 0.7 ms mostly,
    32 and 170 ms now and then, and a smoke rating alternated it with 1000 ops/s for 12 trials): it
    is judged by its mean, the quantity R_sat bounds, not confidently (never an end of the λ*
    interval)."""
    out: list[LoadSummary] = []
    run_max, holder = 0.0, None
    for s in sorted(loads, key=lambda s: s.load):
        med = s.median_ms
        if s.side < 0 and holder is not None and med * MONOTONE_FACTOR < run_max:
            settled = min(s.n, holder.n) >= HOLD_MAX_TRIALS
            status, side, _ = _side_by(s.mean, r_sat) if settled else (LoadStatus.OPEN, 0, False)
            s = dataclasses.replace(
                s, status=status, side=side, confident=False, held_by=holder.load
            )
        elif s.n >= 2 and math.isfinite(med) and med > run_max and med >= MONOTONE_FLOOR * r_sat:
            run_max, holder = med, s
        out.append(s)
    return out


def trial_cost_s(spec: RatingSpec, trials: Sequence[TrialResult]) -> float:
    return sum(float(t.runlength_s or 0.0) for t in trials) + spec.trial_overhead_s * len(trials)


def search_state(spec: RatingSpec, r_sat: float, loads: list[LoadSummary]) -> SearchState:
    classified = [s for s in loads if s.status != LoadStatus.OPEN]
    lo, hi = bracket_of(classified)
    start = spec.seed_load if spec.seed_load is not None else spec.first_load
    return SearchState(r_sat, tuple(loads), lo, hi, start, spec.seed_load is not None)
