"""`RatingRequest`: one rating's settings, typed and split by meaning — what the controller reads
(goals, policy, budget, search: controller/parts.py, controller/policy.py) and what the harness
reads (server, load). Each part's settings are declared once: the controller's with
`config.settings.setting`, the server's in `config.factors` / `config.external`, the load's in
`config.workloads` / `config.tenants`; the Params form, the command line, the checks and the harness
variables derive from those declarations. A `RatingPlan` (plan.py) stores a request as plain data
(XCom, spec.json) and gives it back typed with `plan.request()`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.config.factors import factor_vars
from workbench.controller.parts import Budget, Goals, Search
from workbench.controller.policy import Policy
from workbench.controller.spec import RatingSpec


@dataclass(frozen=True)
class ServerRequest:
    """What is rated: the slot's own server with these factors, or an external server."""

    factors: dict[str, Any] = field(default_factory=dict)  # config.factors names → values
    # config.external.ExternalServer fields; {}: none
    external: dict[str, Any] = field(default_factory=dict)
    # a factor pack (config.factor_pack.FactorPack.to_dict(); {}: none) and its levels chosen
    pack: dict[str, Any] = field(default_factory=dict)
    pack_levels: dict[str, Any] = field(default_factory=dict)

    def role_vars(self) -> dict[str, Any]:
        """The nfs_server role's variables of the factors (config.factors.factor_vars, checked)."""
        return factor_vars(self.factors)


@dataclass(frozen=True)
class LoadRequest:
    """What the load hosts run: the workload (and its factors), how many hosts share it, tenant B,
    the file set's build rate, the warm-up and fstress's own settings."""

    workload: str  # canned name, file, or "custom"
    workload_text: str = ""  # the text fstress runs ("" = workload)
    workload_factors: dict[str, Any] = field(default_factory=dict)
    load_hosts: int = 0  # the slot's first N (0 = all)
    background: dict[str, Any] = field(default_factory=dict)  # tenant B (config.tenants); {}: none
    fileset_rate: float = 0.0
    warmup_s: float = 0.0
    warmup_trial_s: float = 0.0
    extravars: dict[str, Any] = field(default_factory=dict)  # fstress role settings


@dataclass(frozen=True)
class RatingRequest:
    """One rating's settings: goals, policy, budget and search rules for the controller; server and
    load for the harness."""

    goals: Goals
    policy: Policy
    budget: Budget
    search: Search
    server: ServerRequest
    load: LoadRequest

    @classmethod
    def of(cls, spec: RatingSpec, server: ServerRequest, load: LoadRequest) -> RatingRequest:
        return cls(
            spec.part(Goals), spec.policy, spec.part(Budget), spec.part(Search), server, load
        )

    def spec(self) -> RatingSpec:
        """The controller's view: goals, policy, budget and search rules, flat."""
        return RatingSpec.of(self.goals, self.policy, self.budget, self.search)
