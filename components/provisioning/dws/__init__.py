"""Queued provisioning (`gpuPools[].provisioning: queued`, GKE's Dynamic Workload Scheduler): nodes bought all at once
for an admitted Kueue workload through a ProvisioningRequest. Its config checks live here; Kueue's admission check that
asks for the nodes is one of Kueue's queue objects (components/scheduling/kueue/provisioning.py), and the cloud's queued
ProvisioningRequest class and node pool setting are that cloud's facts and cluster."""
