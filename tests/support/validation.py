"""Config validation results the config, scheduling, tenancy and observability tests read."""
from __future__ import annotations

import copy

import pytest

from components.config import ConfigError, validate


def problems(raw: dict) -> dict[str, str]:
    """Every problem validation reports, by dotted path (it must refuse `raw`)."""
    with pytest.raises(ConfigError) as info:
        validate(raw)
    return {p.path: p.message for p in info.value.problems}


def reported_at(raw: dict, path: str) -> str:
    """The message validation reports at `path`, failing with all it reported when there is none there."""
    found = problems(raw)
    assert path in found, found
    return found[path]


def first_pool_problems(raw: dict, sharing: dict, **pool) -> dict[str, str]:
    """The problems of a copy of `raw` whose first GPU pool takes `sharing` and the other fields given."""
    changed = copy.deepcopy(raw)
    changed["gpuPools"][0].update(sharing=sharing, **pool)
    return problems(changed)


def one_mig_pool(cloud: str, cluster: dict, pool: str, instance_type: str, **top) -> dict:
    """A config of one pool of `instance_type` cut in all-1g.10gb MIG slices, 8 of them team serving's quota."""
    return {"cloud": cloud, **top, "cluster": cluster,
            "gpuPools": [{"name": pool, "instanceType": instance_type, "maxNodes": 2,
                          "sharing": {"mode": "mig", "migProfile": "all-1g.10gb"}}],
            "teams": [{"name": "serving", "quotas": {pool: 8}}]}
