"""Scheduling: priority classes, and Kueue or Volcano queues sized from each team's GPU quotas."""
