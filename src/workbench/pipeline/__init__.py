"""The pipeline layer: results stores, slot leases, a rating as resumable steps, sweeps, nights.

The DAGs and the entry points use the names re-exported here; each is defined in one module.
"""
from workbench.pipeline.leases import lease_slot, release_slot
from workbench.pipeline.plan import (PARAMS, ParamError, RatingPlan, history_seed, plan_from_params, rating_id_for,
                                     seeded, strict_json)
from workbench.pipeline.runner import run_rating
from workbench.pipeline.s3store import open_store
from workbench.pipeline.steps import (decide_step, deploy, provision, publish_step, report_step,
                                      summarise_step, teardown, trial_log, trial_step, validate_step)
from workbench.pipeline.validation import checked_plan, validate_plan

__all__ = ["PARAMS", "ParamError", "RatingPlan", "checked_plan", "decide_step", "deploy", "history_seed", "lease_slot",
           "open_store", "plan_from_params", "provision", "publish_step", "rating_id_for",
           "release_slot", "report_step", "run_rating", "seeded", "strict_json", "summarise_step", "teardown",
           "trial_log", "trial_step", "validate_plan", "validate_step"]
