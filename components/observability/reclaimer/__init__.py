"""The idle-GPU reclaimer: `job.py` is the standard-library program the CronJob runs, `component.py` deploys it."""
