"""A factor pack outside the repository swept by map_surface with no code change (issue 51): this
test's own pack file declares two knobs of an external Ganesha (its RPC threads and its log level)
and its own tasks apply them — a change to the filer's config file and a reload (SIGHUP, awaited
in Ganesha's log). map_surface rates two samples of the filer through dag.test(), each level applied
before its sample (two trials each: a small file set, a 12 s budget — the sweep's mechanics, not λ*);
then a level the filer refuses is a harness failure naming the task and its message, and the pack's
reset leaves the filer's config as it was."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_dags import _dag, _states, airflow_db, airflow_env  # noqa: F401  (fixtures)

from workbench.params.plan import rating_id_for

REPO = Path(__file__).resolve().parents[2]
FILER = {"server_address": "10.251.16.1", "server_export": "/export",
         "server_description": "an operator's Ganesha with its own knobs"}

APPLY = """\
- name: Write the RPC threads and the log level into the filer's config
  ansible.builtin.replace:
    path: {conf}
    regexp: '{regexp}'
    replace: '{replace}'
  loop:
    - {{regexp: 'RPC_Ioq_ThrdMax = \\d+;', replace: 'RPC_Ioq_ThrdMax = {{{{ rpc_threads }}}};'}}
    - {{regexp: 'Default_Log_Level = \\w+;', replace: 'Default_Log_Level = {{{{ log_level }}}};'}}
- name: Ask the filer to take the thread count
  ansible.builtin.shell: |
    if [ {{{{ rpc_threads }}}} -gt 12 ]; then
      echo "filer refuses RPC_Ioq_ThrdMax {{{{ rpc_threads }}}}: at most 12" >&2; exit 3
    fi
  changed_when: false
{reload}
- name: Record the levels applied
  ansible.builtin.lineinfile:
    path: {record}
    line: "{{{{ wb_factor_levels | to_json }}}}"
    create: true
    mode: "0644"
"""
RESET = """\
- name: Put the filer's config back
  ansible.builtin.copy:
    src: {conf}.orig
    dest: {conf}
    remote_src: true
    mode: "0644"
{reload}
"""
RELOAD = """\
- name: Reload Ganesha
  ansible.builtin.shell: |
    grep -c 'Reread exports complete' {log} || true
    kill -HUP "$(cat {pid})"
  register: wb_reload
  changed_when: true
- name: Await Ganesha's reread of its config
  ansible.builtin.command: grep -c 'Reread exports complete' {log}
  register: wb_reread
  until: wb_reread.stdout | int > wb_reload.stdout_lines[0] | int
  retries: 100
  delay: 0.1
  changed_when: false
"""


def _pack(tmp_path: Path, filer_dir: Path) -> tuple[Path, Path]:
    """The test's factor pack (outside the repository) and the file its tasks record levels in."""
    conf, record = filer_dir / "ganesha.conf", tmp_path / "applied.jsonl"
    reload = RELOAD.format(log=filer_dir / "ganesha.log", pid=filer_dir / "ganesha.pid")
    (tmp_path / "apply.yml").write_text(APPLY.format(conf=conf, record=record, reload=reload,
                                                     regexp="{{ item.regexp }}", replace="{{ item.replace }}"))
    (tmp_path / "reset.yml").write_text(RESET.format(conf=conf, reload=reload))
    pack = tmp_path / "ganesha-knobs.yml"
    pack.write_text(
        "factors:\n"
        "  - {name: rpc_threads, type: int, levels: [8, 16], sweep: numeric, help: Ganesha RPC_Ioq_ThrdMax}\n"
        "  - {name: log_level, type: str, levels: [EVENT, INFO], sweep: categorical}\n"
        "apply: apply.yml\nreset: reset.yml\n")
    return pack, record


@pytest.mark.integration
@pytest.mark.xdist_group("filer6")       # this test's filer, load host and slot (filer6, xload6)
@pytest.mark.timeout(600)
def test_a_factor_pack_outside_the_repository_is_swept_by_map_surface(airflow_env, tmp_path,  # noqa: F811
                                                                     monkeypatch):
    from conftest import start_slot, stop_slot

    from workbench.config import vocabulary
    from workbench.config.factor_pack import load_pack
    from workbench.measure.ansible import AnsibleHarness, HarnessError
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, rpcbind, Ganesha)")
    inv = tmp_path / "external.yml"
    text = (REPO / "inventory" / "external" / "hosts.yml").read_text()
    inv.write_text(text.replace("xload1", "xload6").replace("wb-filer\n", "wb-filer6\n")
                   .replace("filer1:", "filer6:").replace("10.251.11.", "10.251.16."))
    monkeypatch.setenv("WB_INVENTORY", str(inv))
    monkeypatch.setenv("WB_FACTOR_PACK_DIRS", str(tmp_path))     # the operator's: packs the UI may name
    monkeypatch.setattr(vocabulary, "SLOTS", ("filer6",))   # map_surface's slot "auto"
    store = airflow_env
    stop_slot("filer6")
    filer = start_slot("filer6")
    try:
        filer_dir = filer.log.parent
        orig = (filer_dir / "ganesha.conf").read_text()
        (filer_dir / "ganesha.conf.orig").write_text(orig)
        pack, record = _pack(tmp_path, filer_dir)
        conf = {"profile": "smoke", "factor_pack": str(pack), "factors": {"rpc_threads": [8, 12]},
                "fixed": {**FILER, "log_level": "INFO", "budget_s": 12, "files_per_ops": 0.01}, "seeding": False}
        dr = _dag("map_surface").test(run_conf=conf)
        states = _states(dr)
        assert str(dr.state).endswith("success"), states
        sweep_id = rating_id_for("map_surface", dr.run_id)
        rows = [store.get_json(k) for k in store.sample_keys(sweep_id)]
        assert sorted(r["sample"]["rpc_threads"] for r in rows) == [8, 12], rows
        for r in rows:
            spec = store.get_json(store.spec_key(r["rating_id"]))
            assert spec["pack_factors"] == {"rpc_threads": r["sample"]["rpc_threads"], "log_level": "INFO"}
            assert spec["factor_pack"]["path"] == str(pack) and spec["external"]["address"] == FILER["server_address"]
            assert r["peak_rate"] > 0 and store.trials(r["rating_id"]), r
        applied = [json.loads(line) for line in record.read_text().splitlines()]
        # one apply per sample, in the order dag.test ran them; the config holds the last one's
        assert sorted(applied, key=lambda a: a["rpc_threads"]) == [{"rpc_threads": n, "log_level": "INFO"} for n in (8, 12)], applied
        now = (filer_dir / "ganesha.conf").read_text()
        assert f"RPC_Ioq_ThrdMax = {applied[-1]['rpc_threads']};" in now and "Default_Log_Level = INFO;" in now
        assert store.get_json(f"surfaces/{sweep_id}/model.json")["n_samples"] == 2

        # a level the filer refuses: a harness failure naming the task and its message (what
        # `workbench rate` prints, exit 1; a DAG's task fails with it); the pack's reset put the
        # config back
        h = AnsibleHarness(slot="filer6", inventory=inv, results_dir=tmp_path / "refused",
                           external={"address": FILER["server_address"], "export": "/export"},
                           factor_pack=load_pack(pack).to_dict(),
                           pack_levels={"rpc_threads": 16, "log_level": "EVENT"})
        with pytest.raises(HarnessError) as e:
            h.apply_pack()
        msg = str(e.value)
        assert "\n" not in msg and "rpc_threads=16, log_level=EVENT failed to apply" in msg, msg
        assert "Ask the filer to take the thread count failed" in msg and "at most 12" in msg, msg
        assert "the pack's reset ran" in msg, msg
        assert (filer_dir / "ganesha.conf").read_text() == orig
        assert len(record.read_text().splitlines()) == 2
    finally:
        stop_slot("filer6")
