"""The workbench's words, each defined once: policies, canned workloads, seeding sources, designs,
slots, the unrolled trial-task limit of rate_peak and the Params' schema dialect."""

from __future__ import annotations

import os

STOP_RULES = ("inside", "overlap", "fit")
# genomics: approximates SPECstorage 2020 GENOMICS
CANNED_WORKLOADS = (
    "web_server",
    "web_proxy",
    "db_tp",
    "mail",
    "news",
    "specsfs97",
    "p2p",
    "genomics",
)
SEED_SOURCES = ("none", "load", "history")
DESIGNS = ("fullfact", "dopt", "lhs", "active")  # map_surface designs
MAX_ROUNDS = 6  # rounds of samples unrolled in map_surface (one-shot designs use one)
# inventory groups of the SUT slots
SLOTS = tuple(os.environ.get("WB_SLOTS", "slot1,slot2").split(","))
MAX_GOALS = 8  # R_sat goals of one rating: r_sat_ms and up to 7 more (goals_ms)
MAX_TRIAL_TASKS = 40  # trial_k task groups unrolled in rate_peak; max_trials may not exceed it
