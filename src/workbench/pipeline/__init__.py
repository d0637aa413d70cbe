"""The pipeline layer: the workflows — a rating as resumable steps, run_rating, sweeps, nights. What
they store is rendered by analysis/ (reports, plots, comparisons), which the entry points and the
DAG tasks call.

The DAGs and the entry points use the step names re-exported here; each is defined in one module.
"""

from workbench.pipeline.finish import publish_step, summarise_step, validate_step
from workbench.pipeline.runner import run_rating
from workbench.pipeline.slot import reap_slots, teardown
from workbench.pipeline.steps import decide_step, deploy, provision, trial_log, trial_step

__all__ = [
    "decide_step",
    "deploy",
    "provision",
    "publish_step",
    "reap_slots",
    "run_rating",
    "summarise_step",
    "teardown",
    "trial_log",
    "trial_step",
    "validate_step",
]
