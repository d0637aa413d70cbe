"""params.request: a plan's settings, typed and split by meaning."""
from __future__ import annotations

import dataclasses

from workbench.controller.parts import Budget, Goals
from workbench.params.plan import plan_from_params
from workbench.params.request import LoadRequest, ServerRequest


def test_the_plan_gives_its_request_back_typed():
    """A plan's request: the controller's parts rebuild the same spec; the harness's parts carry the
    server and the load, nothing of the search."""
    plan = plan_from_params({"profile": "quick", "read_iops": 300, "confidence": 0.8}, "r1")
    req = plan.request()
    assert req.spec() == plan.rating_spec()
    assert isinstance(req.goals, Goals) and req.goals.confidence == 0.8 and isinstance(req.budget, Budget)
    assert req.server == ServerRequest(plan.factors, {}) and req.server.role_vars()["nfs_server_disk_read_iops"] == 300
    assert req.load.workload == "web_server" and req.load.fileset_rate == plan.fileset_rate
    harness_fields = {f.name for c in (ServerRequest, LoadRequest) for f in dataclasses.fields(c)}
    assert not harness_fields & {f.name for f in dataclasses.fields(plan.rating_spec())}
