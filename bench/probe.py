"""One measurement in a fresh process (so peak memory and start-up are this command's own); prints JSON."""
from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path

T0 = float(os.environ.get("BENCH_T0", time.time()))


def _first_resource_clock() -> dict[str, float]:
    """Record when the program constructs its first resource: the end of start-up (interpreter, imports, config
    validation). The monitor only sees registrations once the program body has run and the event loop turns."""
    import pulumi

    seen: dict[str, float] = {}
    original = pulumi.Resource.__init__

    def construct(self, t, *args, **kwargs):
        if t != "pulumi:pulumi:Stack":
            seen.setdefault("first", time.time())
        return original(self, t, *args, **kwargs)

    pulumi.Resource.__init__ = construct
    return seen


def peak_rss_mb() -> float:
    """This process image's peak resident set: /proc's VmHWM, which starts afresh at exec. getrusage's ru_maxrss
    is kept across exec, so a probe spawned by a bench process that had grown would report the parent's size."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def check_plan(plan):
    """What `gpu-platform check` adds to a plan: the whole policy pack over its graph."""
    from gpu_platform.policy.runner import check
    from policies import context

    return check(plan, context.for_config(plan.config))


def simulate() -> None:
    """The simulator's speed scenario (100,000 jobs, 1,000 GPUs, 30 queues in 5 cohorts) in its own process."""
    from gpu_platform.simulator import bench_scenario

    cpu = time.process_time()
    figures = bench_scenario()
    print(json.dumps({**figures, "cpu_s": round(time.process_time() - cpu, 2), "peak_rss_mb": round(peak_rss_mb())}))


def main(mode: str, stack_file: str) -> None:
    seen = _first_resource_clock()
    from gpu_platform.engine import plan_stack

    plan = plan_stack(file=stack_file)
    if mode == "check":
        check_plan(plan)
    end = time.time()
    print(json.dumps({
        "mode": mode, "resources": len(plan.resources), "wall_s": end - T0,
        "startup_s": seen["first"] - T0,
        "peak_rss_mb": peak_rss_mb(),
        "providers": sorted({m.split(".")[0] for m in sys.modules} &
                            {"pulumi_aws", "pulumi_azure_native", "pulumi_gcp", "pulumi_oci"}),
    }))


if __name__ == "__main__":
    simulate() if sys.argv[1] == "simulate" else main(sys.argv[1], sys.argv[2])
