"""Observability: Prometheus, GPU recording rules and alerts, the Grafana dashboard and the idle-GPU reclaimer."""
