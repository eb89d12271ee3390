"""Kueue's admission semantics (v0.19, `kueue.x-k8s.io/v1beta2`), for flat cohorts, split along Kueue's own lines.

- quota.py: ClusterQueue and cohort state and quota arithmetic (Kueue's `pkg/cache/scheduler`, resource_node.go)
- preemption.py: preemption targets (`pkg/scheduler/preemption`), on the quota book
- flavors.py: flavor assignment, Fit or Preempt (`pkg/scheduler/flavorassigner`), asking the preemptor
- cycle.py: the scheduling cycle and queue heads (`pkg/scheduler`, `pkg/queue`); `KueueScheduler` is the
  engine's Scheduler, registered as "kueue"

Each layer builds on the one before (QuotaBook <- Preemptor <- FlavorAssigner <- KueueScheduler), so the
imports go one way only.
"""
from gpu_platform.simulator.kueue.cycle import KueueScheduler

__all__ = ["KueueScheduler"]
