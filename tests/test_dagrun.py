"""The main job's terminal (workbench.dagrun): Airflow's output to a file, one line per trial as the
store records it, the result block; exit 0 only for a successful, converged rating."""
from __future__ import annotations

import dataclasses
import os
import types

import pytest

from workbench import dagrun
from workbench.params.plan import plan_from_params
from workbench.store.local import LocalStore


def _trial(n, load, mean):
    return {"n": n, "load_ops_s": load, "runlength_s": 5.0, "mean_ms": mean, "p95_ms": 2 * mean,
            "achieved_rate": load, "valid": True, "decision": "test"}


def test_quiet_fds_sends_this_process_and_its_children_to_the_log(tmp_path, capfd):
    log = tmp_path / "logs" / "run.log"
    with dagrun.quiet_fds(log) as terminal:
        os.write(1, b"airflow says a lot\n")           # what Airflow's handlers on fd 1 do
        os.system("echo a playbook says more; echo and on stderr >&2")
        terminal.write("trial 0 shown\n")
    out = capfd.readouterr().out
    assert out == "trial 0 shown\n"
    assert log.read_text().splitlines() == ["airflow says a lot", "a playbook says more", "and on stderr"]
    os.write(1, b"the terminal is back\n")
    assert capfd.readouterr().out == "the terminal is back\n"


def test_the_watcher_prints_each_recorded_trial_once_with_cost_and_budget(tmp_path):
    store = LocalStore(tmp_path)
    rid = "rate_peak__manual__x"
    plan = dataclasses.replace(plan_from_params({"profile": "quick"}, rid), slot="slot1")
    lines = []
    sink = types.SimpleNamespace(write=lines.append, flush=lambda: None)
    w = dagrun.TrialWatcher(store, rid, sink)
    w.poll()                                          # nothing stored yet: nothing shown
    store.put_json(store.rating_key(rid, "spec.json"), plan.to_dict())
    store.put_json(store.rating_key(rid, "trials/00000.json"), _trial(0, 400, 0.2))
    w.poll()
    store.put_json(store.rating_key(rid, "trials/00001.json"), _trial(1, 800, 9.5))
    w.poll()
    w.poll()
    spec = plan.rating_spec()
    assert len(lines) == 2 and "trial   0:" in lines[0] and "trial   1:" in lines[1]
    assert f"cost {2 * (5 + spec.trial_overhead_s):.0f}/{spec.budget_s:g} s" in lines[1]


@pytest.mark.parametrize("state,converged,code", [("success", True, 0), ("success", False, 1), ("failed", True, 1)])
def test_the_exit_code_says_whether_the_rating_converged(tmp_path, monkeypatch, capsys, state, converged, code):
    store = LocalStore(tmp_path / "store")
    seen = {}

    def fake_run(dag_id, conf, when):
        rid = dagrun.rating_id_for(dag_id, dagrun.run_id_at(when))
        seen["rid"] = rid
        store.put_json(store.rating_key(rid, "result.json"), {"peak_rate": 900.0, "converged": converged,
                                                              "reason": "test", "bracket": [800, 1000]})
        return types.SimpleNamespace(state=state, run_id=dagrun.run_id_at(when))

    monkeypatch.setattr(dagrun, "run", fake_run)
    monkeypatch.setattr(dagrun, "open_store", lambda: store)
    monkeypatch.setattr(dagrun, "WORKDIR", tmp_path / "work")
    assert dagrun.main(["rate_peak", "--verbose"]) == code
    out = capsys.readouterr().out
    assert "peak rate λ*" in out and seen["rid"] in out
    assert dagrun.main(["rate_peak", "--conf", "[1]"]) == 2
