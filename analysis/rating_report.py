"""A rating's report step, between summarise and publish (pipeline.finish): the HTML report, its
plots and the load curve's CSV, from what the rating stored. The entry points and the rate_peak DAG
call it, and pass it to run_rating (`report=`) for the ratings of a sweep or a night."""

from __future__ import annotations

from analysis.report import rating_plots, rating_report_html
from workbench.findings.load_curve import curve_csv, curve_rows
from workbench.params.plan import RatingPlan
from workbench.store.base import CSV_TYPE, Store


def report_step(plan: RatingPlan, store: Store) -> str:
    """HTML report, plots and the load curve's CSV to the store (report and CSV also to the rating's
    local directory); returns the report's key."""
    rid = plan.rating_id
    result = store.get_json(store.result_key(rid))
    trials = store.trials(rid)
    sysinfo = store.get_json(store.sysinfo_key(rid), None)
    validation = store.get_json(store.gx_key(rid), None)
    plots = rating_plots(plan.to_dict(), result, trials)
    for name, png in plots.items():
        store.put_bytes(store.rating_plot_key(rid, name), png, "image/png")
    key, csv_key = store.rating_report_key(rid), store.load_curve_csv_key(rid)
    curve = curve_csv(curve_rows(result, trials)).encode()
    store.put_bytes(csv_key, curve, CSV_TYPE)
    html = rating_report_html(
        plan.to_dict(),
        result,
        trials,
        sysinfo=sysinfo,
        validation=validation,
        plots=plots,
        curve_href=store.link(key, csv_key),
    )
    store.put_bytes(key, html.encode(), "text/html; charset=utf-8")
    out = plan.local_dir() / "report.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    # beside the local report, as its link says
    (out.parent / store.link(key, csv_key)).write_bytes(curve)
    return key
