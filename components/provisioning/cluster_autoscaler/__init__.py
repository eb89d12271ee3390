"""The Kubernetes Cluster Autoscaler: the chart we install where the cloud's pools do not scale themselves (EKS node
groups, OKE node pools), and the priority-expander ConfigMap a cloud-run autoscaler reads (AKS)."""
