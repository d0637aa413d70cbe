"""The results store's layout: every object name is spelled here, and only here (`StoreLayout`, the
base of `store.base.Store`; tests/store/test_base.py pins each key). Keys follow from validated ids,
so a retried task rewrites the same object:
  ratings/<rating_id>/{spec,result,sysinfo,gx}.json, workload.wl, timings/<step>.json,
      trials/<n:05d>.json, trials.parquet, telemetry.parquet, plots/<name>, report.html
  surfaces/<sweep_id>/plan.json, samples/<i:03d>.json, rounds/<k:03d>.json, model.json,
      samples.parquet, plots/<name>, report.html
  nightly/<YYYY-MM-DD>/config.json, <baseline>.json, verdicts.json, report.html
  comparisons/<rating_id A>__vs__<rating_id B>/verdict.json, report.html
"""

from __future__ import annotations

import re

_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")


def check_id(value: str, what: str = "id") -> str:
    """Return `value` if it is a safe id ([A-Za-z0-9._-], 1..128 chars, not . or ..)."""
    if not isinstance(value, str) or not _ID.fullmatch(value) or value in {".", ".."}:
        raise ValueError(f"bad {what} {value!r}: use 1-128 of [A-Za-z0-9._-]")
    return value


def check_key(name: str) -> str:
    """`name` if it is a safe object key: a relative path without ".", ".." or empty parts."""
    parts = name.split("/")
    if name.startswith("/") or any(p in {".", ".."} for p in parts) or "" in parts[:-1]:
        raise ValueError(f"bad object name {name!r}: relative path without '.', '..' or '//'")
    return name


class StoreLayout:
    """The key of every object a rating, a sweep, a night and a comparison keep."""

    def rating_key(self, rating_id: str, name: str) -> str:
        return f"ratings/{check_id(rating_id, 'rating id')}/{check_key(name)}"

    def surface_key(self, sweep_id: str, name: str) -> str:
        return f"surfaces/{check_id(sweep_id, 'sweep id')}/{check_key(name)}"

    def nightly_key(self, date_str: str, name: str) -> str:
        return f"nightly/{check_id(date_str, 'date')}/{check_key(name)}"

    def comparison_key(self, a: str, b: str, name: str) -> str:
        pair = f"{check_id(a, 'rating id')}__vs__{check_id(b, 'rating id')}"
        return f"comparisons/{pair}/{check_key(name)}"

    # a rating
    def rating_prefix(self, rating_id: str) -> str:
        return self.rating_key(rating_id, "")

    def spec_key(self, rating_id: str) -> str:
        return self.rating_key(rating_id, "spec.json")

    def workload_key(self, rating_id: str) -> str:
        return self.rating_key(rating_id, "workload.wl")

    def sysinfo_key(self, rating_id: str) -> str:
        return self.rating_key(rating_id, "sysinfo.json")

    def timing_key(self, rating_id: str, step: str) -> str:
        return self.rating_key(rating_id, f"timings/{step}.json")

    def gx_key(self, rating_id: str) -> str:
        return self.rating_key(rating_id, "gx.json")

    def result_key(self, rating_id: str) -> str:
        return self.rating_key(rating_id, "result.json")

    def rating_plot_key(self, rating_id: str, name: str) -> str:
        return self.rating_key(rating_id, f"plots/{name}")

    def rating_report_key(self, rating_id: str) -> str:
        return self.rating_key(rating_id, "report.html")

    def trials_prefix(self, rating_id: str) -> str:
        return self.rating_key(rating_id, "trials/")

    def trial_key(self, rating_id: str, n: int) -> str:
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"trial index must be an int >= 0, got {n!r}")
        return self.rating_key(rating_id, f"trials/{n:05d}.json")

    def trials_parquet_key(self, rating_id: str) -> str:
        return self.rating_key(rating_id, "trials.parquet")

    def telemetry_parquet_key(self, rating_id: str) -> str:
        return self.rating_key(rating_id, "telemetry.parquet")

    def load_curve_csv_key(self, rating_id: str) -> str:
        return self.rating_key(rating_id, "load_curve.csv")

    # a sweep (map_surface)
    def surface_prefix(self, sweep_id: str) -> str:
        return self.surface_key(sweep_id, "")

    def sweep_plan_key(self, sweep_id: str) -> str:
        return self.surface_key(sweep_id, "plan.json")

    def sample_key(self, sweep_id: str, i: int) -> str:
        return self.surface_key(sweep_id, f"samples/{i:03d}.json")

    def round_key(self, sweep_id: str, k: int) -> str:
        return self.surface_key(sweep_id, f"rounds/{k:03d}.json")

    def model_key(self, sweep_id: str) -> str:
        return self.surface_key(sweep_id, "model.json")

    def samples_parquet_key(self, sweep_id: str) -> str:
        return self.surface_key(sweep_id, "samples.parquet")

    def surface_plot_key(self, sweep_id: str, name: str) -> str:
        return self.surface_key(sweep_id, f"plots/{name}")

    def surface_report_key(self, sweep_id: str) -> str:
        return self.surface_key(sweep_id, "report.html")

    # a night (nightly_regression)
    def nightly_prefix(self, night: str) -> str:
        return self.nightly_key(night, "")

    def night_config_key(self, night: str) -> str:
        return self.nightly_key(night, "config.json")

    def baseline_key(self, night: str, name: str) -> str:
        return self.nightly_key(night, f"{name}.json")

    def verdicts_key(self, night: str) -> str:
        return self.nightly_key(night, "verdicts.json")

    def nightly_report_key(self, night: str) -> str:
        return self.nightly_key(night, "report.html")

    # a comparison (compare_ratings, workbench compare): B against A
    def comparison_verdict_key(self, a: str, b: str) -> str:
        return self.comparison_key(a, b, "verdict.json")

    def comparison_report_key(self, a: str, b: str) -> str:
        return self.comparison_key(a, b, "report.html")
