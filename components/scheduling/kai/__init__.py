"""NVIDIA KAI Scheduler: its row (facts.py), its queue tree (queues.py), its chart and objects (component.py), its
metrics (monitoring.py). docs/scheduling.md says how a team submits work to it."""
