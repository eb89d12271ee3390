"""Karpenter: its charts (unless the cloud runs it), each GPU pool's NodePool, and its config checks. Each cloud's
node class (EKS's EC2NodeClass, AKS's AKSNodeClass) is built in that cloud's package, which names the cloud."""
