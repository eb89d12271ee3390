"""EKS from plain pulumi_aws resources: network, IAM, control plane, managed node groups, Cluster Autoscaler IAM."""
from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws
import pulumi_aws.eks as eks
import pulumi_aws.iam as iam
import pulumi_aws.kms as kms

from components.clouds.aws import iam as aws_iam
from components.clouds.aws import network as aws_network
from components.clouds.aws import nodes as aws_nodes
from components.clouds.aws.facts import PROFILE
from components.clouds.aws.karpenter import karpenter_target
from components.clouds.base import GpuNodePool, GpuNodePoolArgs, PlatformCluster
from components.config.model import PlatformConfig
from components.provisioning.cluster_autoscaler.priorities import exact_pattern, expander_priorities
from components.provisioning.karpenter.component import KarpenterTarget
from components.provisioning.karpenter.facts import KIND as KARPENTER
from components.provisioning.kinds import chosen, chosen_kind

# The VPC CNI add-on's network policy agent (VPC CNI >= 1.14 with the EKS add-on's default version).
VPC_CNI_CONFIG = {"enableNetworkPolicy": "true"}
AUTHENTICATION_MODE = "API_AND_CONFIG_MAP"  # access entries, while aws-auth still works for existing tooling
LOG_TYPES = ("api", "audit", "authenticator")
PRODUCTION_LOG_TYPES = (*LOG_TYPES, "controllerManager", "scheduler")


def kubeconfig(cluster_name: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig that authenticates with `aws eks get-token` (no long-lived token in state)."""
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster_name,
        "clusters": [{"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "users": [{"name": cluster_name, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region, "--output", "json"],
        }}}],
    }, indent=2)


def team_access(config: PlatformConfig) -> dict[str, list[str]]:
    """The Kubernetes groups each team principal joins: EKS takes one access entry per principal, so a principal
    named by several teams joins all their groups."""
    access: dict[str, list[str]] = {}
    for team in config.teams:
        for principal in team.principals:
            access.setdefault(principal, [])
            access[principal] += [g for g in team.groups if g not in access[principal]]
    return access


def access_entry_suffix(principal_arn: str) -> str:
    """A resource name part from an IAM ARN: account and name, e.g. `123456789012-role-research`."""
    _, _, _, _, account, resource = principal_arn.split(":", 5)
    return f"{account}-{resource.replace('/', '-')}"


class EksCluster(PlatformCluster):
    """An EKS cluster with a system node group and one tainted managed node group per GPU pool."""

    TYPE = "gpu-platform:aws:EksCluster"

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TYPE, name, {"clusterName": config.cluster.name, "region": config.cluster.region}, opts)
        self.region = config.cluster.region
        self._gpu_pools = config.gpu_pools
        extras = config.cluster.extras
        # An explicit provider: the cluster lands in cluster.region whatever the stack's aws:region says.
        self._aws = pulumi_aws.Provider(f"{name}-aws", region=self.region, opts=pulumi.ResourceOptions(parent=self))

        network = self._network(name, config)
        partition = PROFILE.arn_partition(self.region)
        cluster_role, cluster_grants = aws_iam.service_role(f"{name}-cluster", "eks.amazonaws.com",
                                                           aws_iam.CLUSTER_POLICIES, partition.name, self._opts)
        node_role, node_grants = aws_iam.service_role(f"{name}-node", partition.ec2_principal,
                                                     aws_iam.NODE_POLICIES, partition.name, self._opts)

        private = config.cluster.private_endpoint
        vpc_config: dict[str, Any] = {"subnet_ids": network.private_subnet_ids, "endpoint_private_access": True,
                                      "endpoint_public_access": not private}
        if config.cluster.authorized_networks:  # config validation allows them on a public endpoint only
            vpc_config["public_access_cidrs"] = list(config.cluster.authorized_networks)
        encryption = None
        if config.production:
            key = kms.Key(f"{name}-secrets", description=f"EKS secrets encryption for {config.cluster.name}",
                          enable_key_rotation=True, deletion_window_in_days=30, opts=self._opts())
            encryption = {"provider": {"key_arn": key.arn}, "resources": ["secrets"]}
        self.eks = eks.Cluster(
            f"{name}-eks", name=config.cluster.name, role_arn=cluster_role.arn,
            version=config.cluster.kubernetes_version, vpc_config=vpc_config,
            access_config={"authentication_mode": AUTHENTICATION_MODE,
                           # The deployer's identity administers the cluster, so the kubeconfig below works.
                           "bootstrap_cluster_creator_admin_permissions": True},
            enabled_cluster_log_types=list(PRODUCTION_LOG_TYPES if config.production else LOG_TYPES),
            encryption_config=encryption,
            # The role must hold its policy before EKS uses it, and keep it until the cluster is gone.
            opts=self._opts(depends_on=cluster_grants))

        # EKS's VPC CNI enforces NetworkPolicies only with its network policy agent on; without it the teams'
        # default-deny policies (tenancy/isolation.py) would exist but isolate nothing.
        eks.Addon(f"{name}-vpc-cni", cluster_name=self.eks.name, addon_name="vpc-cni",
                  configuration_values=json.dumps(VPC_CNI_CONFIG), resolve_conflicts_on_create="OVERWRITE",
                  resolve_conflicts_on_update="OVERWRITE", opts=self._opts())

        for principal, groups in team_access(config).items():
            # Kubernetes groups only, no EKS access policy: the teams' RoleBindings are all they may do.
            eks.AccessEntry(f"{name}-access-{access_entry_suffix(principal)}", cluster_name=self.eks.name,
                            principal_arn=principal, kubernetes_groups=groups, type="STANDARD", opts=self._opts())

        issuer = self.eks.identities.apply(lambda ids: ids[0].oidcs[0].issuer)
        self.oidc_provider = iam.OpenIdConnectProvider(f"{name}-oidc", url=issuer, client_id_lists=["sts.amazonaws.com"],
                                                       opts=self._opts())
        karpenter = chosen_kind(extras, PROFILE) is KARPENTER
        self._autoscaler_role = None if karpenter else aws_iam.autoscaler_role(
            f"{name}-cluster-autoscaler", self.eks.name, self.eks.arn, issuer, self.oidc_provider, self._opts)

        system = aws_nodes.system_node_group(name, config, self.eks, node_role.arn, network.private_subnet_ids,
                                             self._opts(depends_on=node_grants))
        self.pools = {}
        self._asg_names: dict[str, pulumi.Output[str]] = {}
        image_type = extras.get(PROFILE.gpu_image_key, next(iter(PROFILE.gpu_images)))
        blocks = extras.get(PROFILE.reservations_key, {})
        self._karpenter: KarpenterTarget | None = None
        if karpenter:
            # Karpenter makes the GPU capacity: no node group per pool, and its NodePools are the autoscaling
            # layer's. Its nodes join with the node role, whose access entry EKS made for the system node group.
            for spec in config.gpu_pools:
                pool = GpuNodePool(f"{name}-{spec.name}", GpuNodePoolArgs.from_config(config, spec, PROFILE),
                                   opts=pulumi.ResourceOptions(parent=self))
                pool.finish({"provisioner": chosen(extras, PROFILE), "amiType": image_type})
                self.pools[spec.name] = pool
            role, policy = aws_iam.karpenter_role(f"{name}-karpenter", self.eks.name, self.eks.arn, self.region,
                                                  node_role.arn, issuer, self.oidc_provider, self._opts)
            self._karpenter = karpenter_target(
                self.eks.name, role.arn, self.pools, PROFILE.gpu_images[image_type], node_role.name,
                list(network.private_subnet_ids), self.eks.vpc_config.cluster_security_group_id,
                ready=[system, policy, *node_grants])
        for spec in (() if karpenter else config.gpu_pools):  # node groups only without Karpenter
            pool_name = f"{name}-{spec.name}"
            pool = GpuNodePool(pool_name, GpuNodePoolArgs.from_config(config, spec, PROFILE),
                               opts=pulumi.ResourceOptions(parent=self))
            subnets = (network.zone_subnet(blocks[spec.name]["availabilityZone"]) if spec.capacity_type == "reserved"
                       # EFA works within one subnet and a cluster placement group within one AZ: the first one.
                       else network.private_subnet_ids[:1] if spec.fabric == "efa"
                       else network.private_subnet_ids)
            group, asg_name = aws_nodes.gpu_node_group(
                pool_name, pool, spec, config, PROFILE, image_type, self.eks, node_role.arn, subnets,
                pulumi.ResourceOptions(parent=pool, provider=self._aws, depends_on=node_grants))
            pool.finish({"nodeGroupName": group.node_group_name, "autoscalingGroupName": asg_name,
                         "amiType": image_type})
            self.pools[spec.name] = pool
            self._asg_names[spec.name] = asg_name

        config_text = pulumi.Output.all(self.eks.name, self.eks.endpoint, self.eks.certificate_authority.data).apply(
            lambda a: kubeconfig(a[0], a[1], a[2], self.region))
        self._finish(name, config_text, self.eks.name)

    def _opts(self, **kwargs: Any) -> pulumi.ResourceOptions:
        """Options for a direct child: parented here, created through this cluster's regional provider."""
        return pulumi.ResourceOptions(parent=self, provider=self._aws, **kwargs)

    def _network(self, name: str, config: PlatformConfig) -> aws_network.Network:
        if "subnetIds" in config.cluster.extras:
            return aws_network.existing(config, self._aws)
        available = pulumi_aws.get_availability_zones(state="available",
                                                      opts=pulumi.InvokeOptions(provider=self._aws)).names
        reserved = [block["availabilityZone"]
                    for block in config.cluster.extras.get(PROFILE.reservations_key, {}).values()]
        general, extra = aws_network.pick_zones(list(available), reserved, config.cluster.extras.get("zones"))
        return aws_network.create(name, config, general, extra, self._opts)

    def node_provisioner(self) -> KarpenterTarget | None:
        return self._karpenter

    def autoscaler_values(self) -> dict[str, Any] | None:
        """Managed node groups only scale through the Cluster Autoscaler: where it runs, what it finds, its IAM role.

        None under Karpenter: the GPU pools are its NodePools, and the system node group keeps its size.
        """
        if self._karpenter is not None:
            return None
        return {
            "cloudProvider": "aws",
            "awsRegion": self.region,
            # Exact ASG names: a name-embedding regex for `a10` would also match the group of `a10-big`.
            "expanderPriorities": expander_priorities(self._gpu_pools,
                                                      lambda pool: exact_pattern(self._asg_names[pool.name])),
            "autoDiscovery": {"clusterName": self.cluster_name},
            "rbac": {"serviceAccount": {
                "name": aws_iam.AUTOSCALER_SERVICE_ACCOUNT,
                "annotations": {"eks.amazonaws.com/role-arn": self._autoscaler_role.arn},
            }},
        }
