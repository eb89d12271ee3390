"""The resource graph a stack policy sees, with the GPU pools found in it.

A pool is the `GpuNodePool` component with its cloud node pool child; a GPU node pool created outside the
component (or by another program) is a pool too, so nothing escapes the rules by not using our component.
"""
from __future__ import annotations

from dataclasses import dataclass
from collections import ChainMap
from collections.abc import Mapping
from typing import Any, Iterable

from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UnknownValueError

from policies.props import Undecidable, get, items, mapping
from policies.shapes import INSTANCE_TYPE_LABELS, POOL_COMPONENT, SHAPES, NodePoolShape
from policies.taints import Taint, taint_from_map

ADOPTED_CLUSTER = "gpu-platform:cluster:ExistingCluster"  # components/clouds/existing.py: no cloud resources


@dataclass
class Pool:
    """One GPU pool: its component (our Kubernetes-level declaration) and/or its cloud node pool."""

    component: PolicyResource | None
    node_pool: PolicyResource | None

    @property
    def shape(self) -> NodePoolShape | None:
        return SHAPES.get(self.node_pool.resource_type) if self.node_pool else None

    @property
    def resource(self) -> PolicyResource:
        """What findings about the pool name: the component when there is one."""
        return self.component or self.node_pool

    @property
    def name(self) -> str:
        if self.component is not None:
            return str(get(self.component.props, "poolName", self.component.name))
        return self.node_pool.name

    def declared(self, key: str, default: Any = None) -> Any:
        return get(self.component.props, key, default) if self.component is not None else default

    def taints(self) -> list[Taint]:
        """Every taint the pool's nodes get: declared, set on the cloud resource, and added by the cloud."""
        found: dict[Taint, None] = {}
        for raw in items(self.declared("taints")):
            found.setdefault(taint_from_map(raw))
        if self.shape is not None:
            for taint in (*self.shape.taints(self.node_pool.props), *self.shape.implicit_taints(self.node_pool.props)):
                found.setdefault(taint)
        return list(found)

    def labels(self) -> dict[str, str]:
        """Node labels: the cloud resource's (what nodes really get) over the declared ones."""
        labels = {str(k): str(v) for k, v in mapping(self.declared("labels")).items()}
        if self.shape is not None:
            labels.update(self.shape.labels(self.node_pool.props))
        return labels

    def label(self, key: str, default: str | None = None) -> str | None:
        return self.labels().get(key, default)

    def label_values(self, key: str) -> set[str]:
        """Every value label `key` can have on the pool's nodes: set labels, and those the cloud and kubelet add
        (instance type, the cloud's node pool name), so a selector on any of them is recognised."""
        values = {v for v in [self.labels().get(key)] if v is not None}
        if self.shape is not None:
            values |= self.shape.node_labels(self.node_pool.props).get(key, set())
        if key in INSTANCE_TYPE_LABELS and self.declared("instanceType"):
            values.add(str(self.declared("instanceType")))
        return values

    @property
    def workload(self) -> str | None:
        return self.declared("workload") or self.label("gpu-platform.io/workload")

    @property
    def sharing(self) -> str:
        return self.declared("sharing.mode") or self.label("gpu-platform.io/sharing") or "none"

    def spot(self) -> bool:
        if self.shape is not None and self.shape.spot(self.node_pool.props):
            return True
        return self.declared("capacityType") == "spot"

    def cloud_driver(self) -> bool | None:
        """Whether the cloud installs the driver: the cloud resource's answer, else the declared owner."""
        if self.shape is not None:
            answer = self.shape.cloud_driver(self.node_pool.props)
            if answer is not None:
                return answer
        owner = self.declared("driver") or self.label("gpu-platform.io/driver")
        return None if owner is None else owner == "managed"


class Graph:
    """Resources by URN and type, with parents linked as the analyzer links them."""

    def __init__(self, resources: Iterable[PolicyResource]):
        self.resources = list(resources)
        self.by_urn = {r.urn: r for r in self.resources}

    def of_type(self, *types: str) -> list[PolicyResource]:
        return [r for r in self.resources if r.resource_type in types]

    def outside_plan(self, args: Any, reason: str, subject: str) -> None:
        """Not applicable for `reason`, unless the stack adopts its cluster: then `subject` exists, outside the
        plan, and the rule cannot decide (undecided, so `check --fail-on unknown` fails)."""
        if self.of_type(ADOPTED_CLUSTER):
            raise Undecidable(f"the cluster is adopted (cluster.existingKubeconfig): its {subject} are outside the "
                              "plan; check them where the cluster is managed")
        args.not_applicable(reason)

    def node_pool_props(self, node_pool: PolicyResource) -> Mapping:
        """A cloud node pool's inputs, with the instance type its template gives when the pool names none.

        Raises Undecidable when the pool takes its instance type from a template the graph does not hold.
        """
        link = SHAPES[node_pool.resource_type].template
        props = node_pool.props
        if link is None or not get(props, link.field) or items(get(props, link.pool_field)):
            return props
        template = self._template(node_pool, link)
        if template is None:
            raise Undecidable(f"{node_pool.name}: {link.field} names a template that is not in this stack, so its "
                              "instance type (GPU or not) cannot be read")
        instance = get(template.props, link.instance)
        if not instance:
            raise Undecidable(f"{node_pool.name}: template {template.name} sets no {link.instance}, so whether the "
                              "pool has GPUs cannot be read")
        return ChainMap({link.pool_field: [instance]}, props)

    def _template(self, node_pool: PolicyResource, link) -> PolicyResource | None:
        """The template a node pool names: by its name input, else the one template the pool depends on."""
        name = get(node_pool.props, f"{link.field}.name")
        if name:
            return next((t for t in self.of_type(link.type) if get(t.props, "name") == name), None)
        linked = [d for d in node_pool.dependencies or [] if d.resource_type == link.type]
        return linked[0] if len(linked) == 1 else None

    def has_gpus(self, node_pool: PolicyResource) -> bool:
        """Whether a cloud node pool's instance type has GPUs (raises when that cannot be read)."""
        return SHAPES[node_pool.resource_type].gpu(self.node_pool_props(node_pool))

    def children(self, resource: PolicyResource) -> list[PolicyResource]:
        return [r for r in self.resources if r.parent is not None and r.parent.urn == resource.urn]

    def pools(self) -> list[Pool]:
        """Every GPU pool; a cloud node pool outside any component counts when its instance type has GPUs."""
        pools, claimed = [], set()
        for component in self.of_type(POOL_COMPONENT):
            node_pool = next((c for c in self.children(component) if c.resource_type in SHAPES), None)
            if node_pool is not None:
                claimed.add(node_pool.urn)
            pools.append(Pool(component, node_pool))
        for node_pool in self.of_type(*SHAPES):
            if node_pool.urn not in claimed and self._gpus_or_unknown(node_pool):
                pools.append(Pool(None, node_pool))
        return pools

    def _gpus_or_unknown(self, node_pool: PolicyResource) -> bool:
        try:
            return self.has_gpus(node_pool)
        except UnknownValueError:
            return False  # GPU001 reports a pool whose instance type cannot be read
