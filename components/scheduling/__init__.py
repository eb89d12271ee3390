"""Scheduling: priority classes, job frameworks, and one package per batch scheduler (kueue/, volcano/, kai/),
each registered by one import line in kinds.py."""
