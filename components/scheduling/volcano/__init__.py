"""Volcano: its row (facts.py), its chart and Queues (component.py), its metrics (monitoring.py)."""
