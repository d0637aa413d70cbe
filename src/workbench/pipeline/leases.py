"""Slot leases: one rating at a time on a SUT slot, across DAG runs, workers and the CLI.

A lease is the file ``<WORKDIR>/leases/<slot>`` holding the rating's id and its local working
directory; it is created with O_EXCL, so of two ratings asking at once one wins. The rating that
holds a lease gets it again (a retried task). A lease whose holder shows no life for
LEASE_STALE_S (the lease file and every file of its working directory unchanged: its run was
killed before teardown) is taken over; the new rating's provisioning then resets the slot.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from workbench.config import paths
from workbench.config.vocabulary import SLOTS
from workbench.pipeline.plan import RatingPlan

LEASE_STALE_S = 1800.0        # a lease whose rating wrote nothing for this long is abandoned


def lease_file(slot: str) -> Path:
    return paths.LEASES / slot


def holder_of(slot: str) -> tuple[str, Path | None]:
    """(rating id, its working directory) of the slot's lease; ("", None) when free."""
    try:
        lines = lease_file(slot).read_text().splitlines()
    except FileNotFoundError:
        return "", None
    rid = lines[0].strip() if lines else ""
    return rid, (Path(lines[1].strip()) if len(lines) > 1 and lines[1].strip() else None)


def holds(plan: RatingPlan) -> bool:
    return plan.slot != "auto" and holder_of(plan.slot)[0] == plan.rating_id


def _lease_age_s(slot: str) -> float:
    """Seconds since the holder last showed life: its lease or anything in its working directory."""
    f = lease_file(slot)
    times = [f.stat().st_mtime]
    workdir = holder_of(slot)[1]
    if workdir is not None and workdir.is_dir():
        times += [p.stat().st_mtime for p in workdir.rglob("*") if p.is_file()]
    return time.time() - max(times)


def _write(slot: str, plan: RatingPlan, fd: int | None = None) -> None:
    text = f"{plan.rating_id}\n{plan.local_dir()}\n"
    if fd is None:
        lease_file(slot).write_text(text)
        return
    with os.fdopen(fd, "w") as fh:
        fh.write(text)


def lease_slot(plan: RatingPlan) -> str:
    """Take a slot for this rating: the plan's slot, or the first free one of SLOTS for "auto"."""
    paths.LEASES.mkdir(parents=True, exist_ok=True)
    candidates = SLOTS if plan.slot == "auto" else (plan.slot,)
    held = {}
    for slot in candidates:
        try:
            fd = os.open(lease_file(slot), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = holder_of(slot)[0]
            if holder == plan.rating_id:
                return slot
            if _lease_age_s(slot) > LEASE_STALE_S:
                print(f"taking over the stale lease of {slot} from {holder}")
                _write(slot, plan)
                return slot
            held[slot] = holder
            continue
        _write(slot, plan, fd)
        return slot
    raise RuntimeError("no free slot: " + "; ".join(f"{s} is held by rating {h} (lease {lease_file(s)})"
                                                     for s, h in held.items())
                       + f"; a lease is taken over after {LEASE_STALE_S:g} s without activity")


def release_slot(plan: RatingPlan) -> bool:
    if holds(plan):
        lease_file(plan.slot).unlink()
        return True
    return False
