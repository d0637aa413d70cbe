"""The measured cost of a rating (pipeline.finish.measured_cost): wall time from the start of
provisioning to the summary, split into provision, deploy, trials and orchestration."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from analysis.rating_report import report_step
from workbench.findings.cost import cost_text
from workbench.config import paths
from workbench.lease.leases import lease_slot
from workbench.output.console import WIDTH
from workbench.controller.trial import TrialResult
from workbench.measure.playbook import PlaybookRun
from workbench.measure.simulated import SimulatedServer
from workbench.params.plan import plan_from_params
from workbench.pipeline import steps
from workbench.pipeline.runner import run_rating
from workbench.pipeline.finish import measured_cost
from workbench.store.local import LocalStore


def test_the_measured_cost_and_its_breakdown(tmp_path):
    store = LocalStore(tmp_path)
    rid = "r1"
    store.put_json(store.rating_key(rid, "timings/provision.json"), {"start_unix": 1000.0, "wall_s": 40.0})
    store.put_json(store.rating_key(rid, "timings/deploy.json"), {"start_unix": 1045.0, "wall_s": 25.0})
    for k, (start, wall) in enumerate([(1075.0, 12.0), (1090.0, 11.5), (1105.0, 12.5)]):
        store.put_trial(rid, k, {"n": k, "load_ops_s": 400.0, "mean_ms": 1.0, "valid": True,
                                 "started_unix": start, "wall_s": wall})
    out = measured_cost(store, rid, store.trials(rid), spec_cost_s=36.0, end_unix=1130.0)
    # 130 s from provisioning to the summary: 40 + 25 + 36 in the steps, 29 s between them
    assert out["cost_s"] == pytest.approx(130.0) and out["cost_spec_s"] == 36.0
    assert out["cost_breakdown_s"] == pytest.approx({"provision": 40.0, "deploy": 25.0, "trials": 36.0,
                                                     "orchestration": 29.0})
    assert cost_text(out) == ("130 s measured (provision 40, deploy 25, trials 36, orchestration 29); "
                              "controller's account 36 s")


def test_a_rating_without_timings_keeps_the_controller_s_account(tmp_path):
    store = LocalStore(tmp_path)
    store.put_trial("old", 0, {"n": 0, "load_ops_s": 400.0, "mean_ms": 1.0, "valid": True})
    out = measured_cost(store, "old", store.trials("old"), spec_cost_s=36.0, end_unix=2000.0)
    assert out == {"cost_spec_s": 36.0, "cost_breakdown_s": None}
    assert cost_text({"cost_s": 36.0, **out}) == "36 s (controller's account: runlength + overhead per trial)"


class FakeHarness:
    """A harness whose playbooks succeed at once and whose trials run on one SimulatedServer (shared by
    every instance of a rating, as the real server is); each test's subclass brings its own server and
    may watch or spoil a step."""

    server: SimulatedServer
    warmup_valid = True

    def __init__(self, **kw):
        self.results_dir = Path(kw["results_dir"])
        self.workload = Path(kw["workload"])

    def provision(self):
        self.results_dir.mkdir(parents=True, exist_ok=True)
        (self.results_dir / "sysinfo.json").write_text(json.dumps({"host": "simulated"}))
        return PlaybookRun(rc=0, status="successful")

    deploy = teardown = lambda self: PlaybookRun(rc=0, status="successful")

    def warm_up(self, load, duration_s):
        ok = self.warmup_valid
        return TrialResult(mean_ms=1.0, p95_ms=2.0, achieved_rate=load, load_ops_s=load, runlength_s=duration_s,
                           valid=ok, reason="" if ok else "3 errors, 0 timeouts")

    def measure(self, load, runlength_s, *, trial_id=None, check_server=None):
        return self.server.measure(load, runlength_s)


@pytest.fixture
def rate_fake(tmp_path, monkeypatch):
    """rate_fake(params, rating_id, harness) → (plan, store, result): run_rating over a fake harness,
    with the report step."""
    monkeypatch.setattr(paths, "LEASES", tmp_path / "leases")
    (tmp_path / "fstress").write_text("")
    monkeypatch.setattr(steps, "FSTRESS", tmp_path / "fstress")

    def rate(params, rid, harness, log=lambda s: None):
        plan = dataclasses.replace(plan_from_params(params, rid), workdir=str(tmp_path / "work"))
        store = LocalStore(tmp_path / "store")
        return plan, store, run_rating(plan, store, log=log, make=harness, report=report_step)
    return rate


def test_a_custom_workload_is_what_the_harness_runs_and_is_stored_with_the_rating(rate_fake):
    """Params' workload text plus a workload factor: the harness gets the rendered text as a file,
    the store keeps it (workload.wl, result.json), the report shows it."""
    given = []

    class Harness(FakeHarness):
        server = SimulatedServer(capacity_ops_s=800.0, seed=0)

        def __init__(self, **kw):
            super().__init__(**kw)
            given.append(self.workload.read_text())

    text = "base = web_server\nname = mine\ndescription = <b>my</b> web\n"
    plan, store, res = rate_fake({"profile": "smoke", "slot": "slot1", "workload_text": text, "zipf_alpha": 0.6},
                                 "c1", Harness)
    assert res["converged"] and given and set(given) == {plan.workload_text}
    assert plan.workload_text == text + "# workload factors: zipf_alpha=0.6\nfile_popularity = zipf:0.6\n"
    assert store.get_bytes(store.rating_key("c1", "workload.wl")).decode() == plan.workload_text
    result = store.get_json(store.rating_key("c1", "result.json"))
    assert result["workload"] == "custom" and result["workload_text"] == plan.workload_text
    assert result["workload_factors"] == {"zipf_alpha": 0.6}
    html = store.get_bytes(store.rating_key("c1", "report.html")).decode()
    assert "description = &lt;b&gt;my&lt;/b&gt; web" in html and "workload factors: zipf_alpha = 0.6" in html


@pytest.mark.parametrize("warmup_valid", [True, False])
def test_trial_0_checks_the_server_only_after_an_invalid_warm_up(rate_fake, warmup_valid):
    """The warm-up right after deploy showed the server answering: trial 0 then goes without the
    check (through the agents, no playbook), as every trial after a valid one does; an invalid
    warm-up (or an invalid trial) makes the next trial check the server first."""
    checks = {}

    class Harness(FakeHarness):
        server = SimulatedServer(capacity_ops_s=800.0, seed=0)

        def measure(self, load, runlength_s, *, trial_id=None, check_server=None):
            checks[trial_id] = check_server
            t = super().measure(load, runlength_s)
            return dataclasses.replace(t, valid=False, reason="5 errors") if trial_id == 2 else t

    Harness.warmup_valid = warmup_valid
    _, store, _ = rate_fake({"profile": "smoke", "slot": "slot1", "max_trials": 5}, "w1", Harness)
    assert store.get_json(store.timing_key("w1", "deploy"))["warmup_valid"] is warmup_valid
    assert checks == {0: not warmup_valid, 1: False, 2: False, 3: True, 4: False}, checks


def test_an_invalid_warm_up_s_reason_is_cut_on_the_console_and_whole_in_a_task_log(rate_fake):
    """The runner's warm-up line fits a console line (its reason cut, its gist kept); the step's
    own line (what rate_peak's deploy task prints) keeps the reason whole."""
    reason = "send-lag p99 12.263 ms > bound 10.000 ms (host steal 2.30 %, " + "a long aside " * 10 + ")"

    class Harness(FakeHarness):
        server = SimulatedServer(capacity_ops_s=800.0, seed=0)
        warmup_valid = False

        def warm_up(self, load, duration_s):
            return dataclasses.replace(super().warm_up(load, duration_s), reason=reason)

    lines = []
    plan, store, _ = rate_fake({"profile": "smoke", "slot": "slot1", "max_trials": 2}, "w2", Harness,
                               log=lambda s: lines.extend(s.splitlines()))
    warm = [ln for ln in lines if "warm-up trial" in ln]
    assert len(warm) == 1 and len(warm[0]) <= WIDTH, warm
    assert warm[0].endswith("(send-lag p99 12.263 ms > bound 10.000 ms)"), warm
    task_line = steps.deploy(lease_slot(plan), store, Harness)
    assert task_line.endswith(f"({reason})") and len(task_line) > WIDTH, task_line


def test_the_load_curve_s_csv_sits_beside_the_report_and_the_ort_in_the_result(rate_fake):
    """report_step writes load_curve.csv beside report.html, in the store and in the rating's local
    directory, and the report links it there; summarise_step puts the ORT in result.json."""

    class Harness(FakeHarness):
        server = SimulatedServer(capacity_ops_s=800.0, seed=0)

    plan, store, res = rate_fake({"profile": "smoke", "slot": "slot1"}, "lc1", Harness)
    assert "overall_response_time_ms" in store.get_json(store.result_key("lc1"))
    text = store.get_bytes(store.load_curve_csv_key("lc1")).decode()
    assert text.splitlines()[0] == "offered_ops_s,achieved_ops_s,mean_ms,p95_ms,p99_ms,trials,valid,in_ort"
    assert len(text.splitlines()) == 1 + res["n_loads"]
    assert (plan.local_dir() / "load_curve.csv").read_bytes() == text.encode()
    html = store.get_bytes(store.rating_report_key("lc1")).decode()
    assert '<a href="load_curve.csv">load_curve.csv</a>' in html
    assert res["urls"]["load_curve"].endswith("ratings/lc1/load_curve.csv")
