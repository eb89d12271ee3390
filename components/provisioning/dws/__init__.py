"""Queued provisioning (`gpuPools[].provisioning: queued`, GKE's Dynamic Workload Scheduler): nodes bought all at once
for an admitted Kueue workload through a ProvisioningRequest. Its config checks and Kueue's admission check live here;
the cloud's queued ProvisioningRequest class and node pool setting are that cloud's facts and cluster."""
