"""client-go's token bucket (flowcontrol.NewTokenBucketRateLimiter over golang.org/x/time/rate), the rate limit of a
scheduler's API client. The bucket starts full (rate.NewLimiter: `burst` tokens), and callers wait in the order they
asked (the limiter reserves tokens in call order), so a write waits for every write queued before it."""
from __future__ import annotations

import math


class TokenBucket:
    """`qps` refill, `burst` tokens at most, as GCRA; `qps` 0 is unlimited."""

    __slots__ = ("qps", "burst", "tat", "free", "interval", "slack")

    def __init__(self, qps: float, burst: int):
        self.qps, self.burst = qps, burst
        self.tat = -math.inf  # the theoretical arrival time of the next write
        self.free = -math.inf  # when every write so far went through
        # The divisions take() would repeat on every write, done once: the same operations, so the same results.
        self.interval = 1 / qps if qps else 0.0
        self.slack = (max(burst, 1) - 1) / qps if qps else 0.0

    def take(self, t: float, count: int = 1) -> float:
        """Pass `count` writes issued at `t`; returns when the last went through."""
        if not self.qps or not count:
            return t
        tat = (self.tat if self.tat > t else t) + (count - 1) / self.qps
        self.tat = tat + self.interval
        free = tat - self.slack
        if t > free:
            free = t
        if self.free > free:
            free = self.free
        self.free = free
        return free
