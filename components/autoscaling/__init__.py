"""Autoscaling of GPU pools where the cloud does not do it natively: the Kubernetes Cluster Autoscaler."""
