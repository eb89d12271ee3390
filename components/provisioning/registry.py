"""The provisioner registry: one `ProvisionerKind` row per provisioner package, as `SchedulerKind` for schedulers.

A stack's provisioner is the value of its cloud's `provisioner_key` extra, else the cloud's `autoscaler` default
(`kinds.chosen`), read through the cloud's `provisioner_kinds` where it spells a choice its own way; the row of that
name installs it. Rows no cloud can choose work beside the chosen one and are switched on by their own key or per pool
(GKE node auto-provisioning, queued provisioning). Every row's config checks
run on every stack and decide for themselves whether the stack uses them.

Free of Pulumi on purpose, like the scheduler rows: a row reaches its config checks (config layer) and its installer
(component layer) through functions of its own package that import them only when called. What differs per cloud
(Karpenter's node class, NAP's cluster setting, the autoscaler's IAM and values) lives in that cloud's package: it
names the cloud.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from components.clouds.facts import CloudProfile
from components.rows import Rows


@dataclass(frozen=True)
class ProvisioningStack:
    """What a provisioner's config checks read of a stack being validated (the config model sits above this table,
    so its types are named in words)."""

    extras: dict[str, Any] | None  # cluster.<cloud>: the cloud's extras; None when the cluster section is invalid
    kubernetes_minor: str
    pool_items: list[Any]  # gpuPools as written, for error paths
    pools: list[Any]  # the valid pools (components.config.model.GpuPool)
    prof: CloudProfile
    scheduler: Any  # components.config.model.Scheduler


@dataclass(frozen=True)
class ProvisionerChecks:
    """A provisioner package's config checks (its `checks` module, Pulumi-free)."""

    # Every problem the stack's pools and extras have with this provisioner, added to `problems`
    # (components.config.errors.Problems).
    check: Callable[[ProvisioningStack, Any], None]
    # The pools as this provisioner can make them (a `fabric: auto` it cannot attach resolved to none), before the
    # teams read them; None: the pools as declared.
    resolve_pools: Callable[[dict[str, Any], list[Any], list[Any], CloudProfile], list[Any]] | None = None


@dataclass(frozen=True)
class ProvisionerKind:
    """One way GPU nodes come to be: what chooses it, what it checks, and what it installs in the cluster."""

    name: str  # the `provisioner_key` choice (or a cloud's `autoscaler` default) that makes it the stack's provisioner
    # Whether a cloud can choose it; False: it works beside the chosen one.
    choosable: bool
    checks: Callable[[], ProvisionerChecks] | None = None  # its config checks, imported from its own package on call
    # `install(ctx)` for the chosen provisioner (ctx: components.context.Context), imported from its own package on
    # call; None: it installs nothing through the provisioning layer.
    installer: Callable[[], Callable[[Any], None]] | None = None
    # What the newer-than-the-table Kubernetes version warning adds when it is a cloud's default provisioner (a
    # release pinned per minor that stays on the newest pinned one); empty: nothing.
    newer_minor_note: str = ""


KINDS: Rows[ProvisionerKind] = Rows("provisioner")
register = KINDS.register
