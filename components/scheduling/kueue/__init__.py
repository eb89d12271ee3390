"""Kueue: its row (facts.py), its chart and queue objects (component.py), its metrics (monitoring.py)."""
