"""Node auto-provisioning beside the pools' own autoscaling (`cluster.gcp.nodeAutoProvisioning`): the cloud makes
node pools of its own within cluster-wide cpu, memory and GPU limits. Its config checks live here; the cluster
setting it becomes is built by the cloud that offers it (components/clouds/gcp/cluster.py)."""
