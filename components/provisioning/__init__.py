"""Who makes GPU nodes: one package per provisioner (Cluster Autoscaler, Karpenter, GKE node auto-provisioning,
queued provisioning), each registering its row from its `facts.py` when `kinds.py` imports it."""
