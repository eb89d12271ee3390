"""GKE: a VPC with pod/service ranges and Cloud NAT (unless given), a private regional cluster, a system pool
and one node pool per GPU pool; GPUDirect pools also get their GPU NIC VPCs and compact placement (gpudirect.py)."""
from __future__ import annotations

import pulumi
import pulumi_gcp.compute as compute
import pulumi_gcp.container as container
import pulumi_gcp.projects as projects
import pulumi_gcp.serviceaccount as serviceaccount
import yaml

from components.clouds.gcp import gpudirect as gcp_gpudirect
from components.clouds.gcp.facts import PROFILE
from components.clouds.base import GpuNodePool, GpuNodePoolArgs, PlatformCluster
from components.clouds.facts import CloudProfile
from components.config.model import Cluster, GpuPool, PlatformConfig
from components.provisioning.nap.facts import KEY as NAP_KEY
from components.config.zonal import initial_per_zone
from components.system_pool import SYSTEM_TAINT

NODE_CIDR = "10.0.0.0/20"
POD_RANGE, POD_CIDR = "pods", "10.16.0.0/14"  # a /24 per node: room for ~1000 nodes
SERVICE_RANGE, SERVICE_CIDR = "services", "10.20.0.0/20"
DEFAULT_MASTER_CIDR = "172.16.0.0/28"
OAUTH_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]  # access is narrowed by IAM, not scopes
SYSTEM_POOL = "system"
# What a node's own service account needs and nothing more (GKE "Configure node service accounts"): the
# Kubernetes Engine Default Node Service Account role (logs, metrics, monitoring reads, resource metadata) and
# image pulls from Artifact Registry. Workloads get their own identities through workload identity.
NODE_ROLES = ("roles/container.defaultNodeServiceAccount", "roles/artifactregistry.reader")

# GKE installs the driver when gpuDriverVersion is DEFAULT; left unset there is no driver at all.
# INSTALLATION_DISABLED leaves it to the GPU Operator, which only works on Ubuntu node images (REFERENCE section 1).
DRIVER_VERSIONS = {"managed": "DEFAULT", "operator": "INSTALLATION_DISABLED"}
GPU_IMAGES = {"managed": "COS_CONTAINERD", "operator": "UBUNTU_CONTAINERD"}
SHARING_STRATEGIES = {"time-slicing": "TIME_SHARING", "mps": "MPS"}

# Taints stay managed: the pinned provider updates a pool's taints in place (GKE UpdateNodePool `taints`) and
# tracks only the taints it set, so GKE's own GPU taint causes no drift (effectiveTaints lists them all); ignoring
# them would leave new nodes with a taint the stack removed. GKE adds resource labels such as
# goog-gke-node-pool-provisioning-model; initialNodeCount only matters at creation and the autoscaler owns the
# count afterwards.
GKE_MUTATED_FIELDS = ["nodeConfig.resourceLabels", "initialNodeCount"]


def guest_accelerator(pool: GpuPool) -> dict:
    """The pool's `guestAccelerators` entry: GPU type and count, driver owner, MIG partition or sharing."""
    accelerator = {
        "type": pool.instance.accelerator,
        "count": pool.instance.gpus,
        "gpu_driver_installation_config": {"gpu_driver_version": DRIVER_VERSIONS[pool.driver]},
    }
    if pool.sharing.mode == "mig":
        # Config validation leaves one uniform profile, the only layout gpuPartitionSize can express.
        (accelerator["gpu_partition_size"],) = pool.sharing.mig_layout(pool.instance)
    if pool.sharing.mode in SHARING_STRATEGIES:
        accelerator["gpu_sharing_config"] = {"gpu_sharing_strategy": SHARING_STRATEGIES[pool.sharing.mode],
                                             "max_shared_clients_per_gpu": pool.sharing.replicas}
    return accelerator


def node_auto_provisioning(nap: dict | None, service_account: pulumi.Input[str]) -> dict | None:
    """`cluster_autoscaling` for cluster.gcp.nodeAutoProvisioning: NAP on, bounded by cpu, memory and each GPU type;
    the pools it creates run as the nodes' account and upgrade one node at a time, like the declared pools."""
    if nap is None:
        return None
    limits = [{"resource_type": "cpu", "maximum": nap["maxCpu"]},
              {"resource_type": "memory", "maximum": nap["maxMemoryGb"]},
              *({"resource_type": gpu, "maximum": count} for gpu, count in sorted(nap.get("maxGpus", {}).items()))]
    return {"enabled": True, "resource_limits": limits, "auto_provisioning_defaults": {
        "service_account": service_account, "oauth_scopes": OAUTH_SCOPES,
        "management": {"auto_repair": True, "auto_upgrade": True},
        "upgrade_settings": {"strategy": "SURGE", "max_surge": 0, "max_unavailable": 1},
        "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True}}}


def gke_kubeconfig(name: str, endpoint: str, ca_data: str) -> str:
    """A kubeconfig that authenticates with gke-gcloud-auth-plugin (the deployer's gcloud credentials)."""
    return yaml.safe_dump({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": f"https://{endpoint}", "certificate-authority-data": ca_data}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [{"name": name, "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "gke-gcloud-auth-plugin",
            "installHint": "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin",
            "provideClusterInfo": True,
            "interactiveMode": "Never",
        }}}],
    }, sort_keys=False)


def node_service_account_id(cluster_name: str) -> str:
    """A service account id for the cluster's nodes: 6-30 characters, lowercase, no trailing hyphen."""
    return f"{cluster_name[:24].rstrip('-')}-nodes"


def master_authorized_networks(cluster: Cluster) -> dict | None:
    """Who may reach the control plane: the listed CIDRs, or (private endpoint) only the VPC; None leaves a public
    endpoint open to any address."""
    if not cluster.private_endpoint and not cluster.authorized_networks:
        return None
    # Google-owned public ranges (Cloud Shell, Cloud Build) are not the user's networks.
    config: dict = {"gcp_public_cidrs_access_enabled": False}
    if cluster.authorized_networks:
        config["cidr_blocks"] = [{"cidr_block": cidr, "display_name": f"authorized-{i}"}
                                 for i, cidr in enumerate(cluster.authorized_networks)]
    return config


class GkeCluster(PlatformCluster):
    """A VPC-native private GKE cluster with workload identity and tainted GPU node pools."""

    TYPE = "gpu-platform:gcp:GkeCluster"

    def __init__(self, name: str, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        cluster = config.cluster
        super().__init__(self.TYPE, name, {"clusterName": cluster.name, "region": cluster.region}, opts)
        prof = PROFILE
        extras = cluster.extras
        project = extras["project"]
        zones = extras["zones"]

        if "network" in extras or "subnetwork" in extras:
            network, subnetwork = extras.get("network"), extras.get("subnetwork")
            # The given subnetwork's secondary range names are unknown: GKE creates and manages its own.
            ip_allocation: dict = {}
        else:
            network, subnetwork = self._network(name, config, project)
            ip_allocation = {"cluster_secondary_range_name": POD_RANGE, "services_secondary_range_name": SERVICE_RANGE}

        self._nodes_account, nodes_ready = self._node_service_account(name, cluster, project)
        # One VPC per GPU NIC for each GPUDirect fabric the pools use, shared by its pools.
        self._nic_networks = {
            kind: gcp_gpudirect.nic_networks(name, cluster.name, project, cluster.region, prof.fabrics[kind],
                                          nics, pulumi.ResourceOptions(parent=self))
            for kind, nics in gcp_gpudirect.nic_counts(config).items()}
        gke = container.Cluster(
            f"{name}-gke",
            name=cluster.name,
            project=project,
            location=cluster.region,
            node_locations=zones,
            network=network,
            subnetwork=subnetwork,
            # Pools are separate resources, so changing one never touches the cluster.
            remove_default_node_pool=True,
            initial_node_count=1,
            # Even the short-lived default pool runs as the nodes' own account, never the Compute Engine default.
            node_config={"service_account": self._nodes_account.email, "oauth_scopes": OAUTH_SCOPES},
            release_channel={"channel": "REGULAR"},
            min_master_version=cluster.kubernetes_version,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy=ip_allocation,
            private_cluster_config={
                "enable_private_nodes": True,
                "enable_private_endpoint": cluster.private_endpoint,
                "master_ipv4_cidr_block": extras.get("masterIpv4CidrBlock", DEFAULT_MASTER_CIDR),
            },
            master_authorized_networks_config=master_authorized_networks(cluster),
            workload_identity_config={"workload_pool": f"{project}.svc.id.goog"},
            # Google Groups for RBAC: members of the security group's groups reach RBAC as the group emails the
            # teams' RoleBindings name.
            authenticator_groups_config={"security_group": extras["securityGroup"]} if "securityGroup" in extras
            else None,
            cluster_autoscaling=node_auto_provisioning(extras.get(NAP_KEY), self._nodes_account.email),
            datapath_provider="ADVANCED_DATAPATH",  # Dataplane V2 enforces NetworkPolicy
            # GPU NICs reach pods as Device networks, which need multi-networking (and Dataplane V2, above).
            enable_multi_networking=True if self._nic_networks else None,
            deletion_protection=config.protected,
            # nodeConfig describes only the removed default pool, and changing it would replace the cluster.
            opts=pulumi.ResourceOptions(parent=self, protect=config.protected, depends_on=nodes_ready,
                                        ignore_changes=["nodeConfig"]),
        )
        system = config.cluster.system_pool
        container.NodePool(
            f"{name}-system",
            name=SYSTEM_POOL,
            project=project,
            location=cluster.region,
            cluster=gke.name,
            node_locations=zones,
            initial_node_count=initial_per_zone(system.min_nodes, len(zones)),
            autoscaling={"total_min_node_count": system.min_nodes, "total_max_node_count": system.max_nodes,
                         "location_policy": "BALANCED"},
            management={"auto_repair": True, "auto_upgrade": True},
            node_config={"machine_type": system.instance_type, "image_type": "COS_CONTAINERD",
                         "service_account": self._nodes_account.email,
                         "oauth_scopes": OAUTH_SCOPES, "workload_metadata_config": {"mode": "GKE_METADATA"},
                         # GKE: node pool taints, updated in place (UpdateNodePool `taints`).
                         "taints": [{"key": SYSTEM_TAINT.key, "value": SYSTEM_TAINT.value,
                                     "effect": prof.taint_effects[SYSTEM_TAINT.effect]}]},
            # Pool names are unique in a cluster (see the GPU pools below); machine type changes are in place.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["initialNodeCount"], depends_on=nodes_ready,
                                        delete_before_replace=True),
        )
        self.pools = {pool.name: self._gpu_pool(name, config, pool, prof, gke, project, zones, nodes_ready)
                      for pool in config.gpu_pools}
        kubeconfig = pulumi.Output.all(gke.endpoint, gke.master_auth.cluster_ca_certificate).apply(
            lambda args: gke_kubeconfig(cluster.name, args[0], args[1]))
        self._finish(name, kubeconfig, gke.name)

    def _node_service_account(self, name: str, cluster: Cluster,
                              project: str) -> tuple[serviceaccount.Account, list[pulumi.Resource]]:
        """The nodes' own service account with only NODE_ROLES, instead of the Compute Engine default account
        (project Editor on most projects)."""
        child = pulumi.ResourceOptions(parent=self)
        account = serviceaccount.Account(
            f"{name}-nodes-sa", project=project, account_id=node_service_account_id(cluster.name),
            display_name=f"GKE nodes of {cluster.name}", opts=child)
        member = account.email.apply(lambda email: f"serviceAccount:{email}")
        grants = [projects.IAMMember(f"{name}-nodes-{role.split('/')[1].replace('.', '-').lower()}", project=project,
                                     role=role, member=member, opts=child)
                  for role in NODE_ROLES]
        # Nodes that boot before their grants exist cannot write logs or pull images and fail to register.
        return account, grants

    def _network(self, name: str, config: PlatformConfig, project: str) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
        """A custom-mode VPC, a node subnet with pod and service ranges, and Cloud NAT for private nodes' egress."""
        region, base = config.cluster.region, config.cluster.name
        child = pulumi.ResourceOptions(parent=self)
        vpc = compute.Network(f"{name}-vpc", name=f"{base}-vpc", project=project, auto_create_subnetworks=False,
                              routing_mode="REGIONAL", opts=child)
        subnet = compute.Subnetwork(
            f"{name}-nodes", name=f"{base}-nodes", project=project, region=region, network=vpc.id,
            ip_cidr_range=NODE_CIDR, private_ip_google_access=True,
            secondary_ip_ranges=[{"range_name": POD_RANGE, "ip_cidr_range": POD_CIDR},
                                 {"range_name": SERVICE_RANGE, "ip_cidr_range": SERVICE_CIDR}],
            opts=child)
        router = compute.Router(f"{name}-router", name=f"{base}-router", project=project, region=region,
                                network=vpc.id, opts=child)
        compute.RouterNat(f"{name}-nat", name=f"{base}-nat", project=project, region=region, router=router.name,
                          nat_ip_allocate_option="AUTO_ONLY",
                          source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
                          log_config={"enable": True, "filter": "ERRORS_ONLY"}, opts=child)
        return vpc.id, subnet.id

    def _gpu_pool(self, name: str, config: PlatformConfig, pool: GpuPool, prof: CloudProfile,
                  gke: container.Cluster, project: str, zones: list[str],
                  nodes_ready: list[pulumi.Resource]) -> GpuNodePool:
        pool_name = f"{name}-{pool.name}"
        node_pool = GpuNodePool(pool_name, GpuNodePoolArgs.from_config(config, pool, prof),
                                opts=pulumi.ResourceOptions(parent=self))
        labels = dict(node_pool.labels)
        if pool.driver == "operator":
            labels.update(prof.operator_driver_labels)
        node_config = {
            "machine_type": pool.instance.machine,
            "image_type": GPU_IMAGES[pool.driver],
            "guest_accelerators": [guest_accelerator(pool)],
            # Set explicitly: GKE adds the GPU taint itself only in some create orders.
            "taints": [{"key": t.key, "value": t.value, "effect": prof.taint_effects[t.effect]} for t in node_pool.taints],
            "labels": labels,
            "service_account": self._nodes_account.email,
            "oauth_scopes": OAUTH_SCOPES,
            "workload_metadata_config": {"mode": "GKE_METADATA"},
        }
        if pool.capacity_type == "spot":
            node_config["spot"] = True
        if pool.capacity_type == "reserved":
            node_config["reservation_affinity"] = {"consume_reservation_type": "ANY_RESERVATION"}
        fabric: dict = {}
        pool_zones = zones
        if pool.fabric in self._nic_networks:
            node_config["gvnic"] = {"enabled": True}  # GPUDirect needs gVNIC on the primary NIC too
            fabric = gcp_gpudirect.node_pool_settings(pool, self._nic_networks[pool.fabric], zones)
            pool_zones = fabric.pop("node_locations")
        queued: dict = {}
        if pool.queued:
            # Dynamic Workload Scheduler (GKE provisioningrequest guide): nodes come only through ProvisioningRequests,
            # as flex-start capacity, never from a reservation, from any zone that has them all, and without
            # auto-repair, which would recreate a node outside its request.
            node_config["flex_start"] = True
            node_config["reservation_affinity"] = {"consume_reservation_type": "NO_RESERVATION"}
            queued = {"queued_provisioning": {"enabled": True}}
        node_pool_resource = container.NodePool(
            f"{pool_name}-nodepool",
            name=pool.cloud_name,
            project=project,
            location=config.cluster.region,
            cluster=gke.name,
            node_locations=pool_zones,
            initial_node_count=initial_per_zone(pool.min_nodes, len(pool_zones)),
            # Total (not per-zone) limits keep minNodes/maxNodes meaning the whole pool; ANY lets spot capacity come
            # from whichever zone has it, BALANCED spreads on-demand nodes.
            autoscaling={"total_min_node_count": pool.min_nodes, "total_max_node_count": pool.max_nodes,
                         "location_policy": "ANY" if pool.capacity_type == "spot" or pool.queued else "BALANCED"},
            management={"auto_repair": not pool.queued, "auto_upgrade": True}, **queued, **fabric,
            # A surge node would be one more scarce GPU machine: upgrade by replacing one node at a time.
            upgrade_settings={"strategy": "SURGE", "max_surge": 0, "max_unavailable": 1},
            node_config=node_config,
            # Node pool names are unique in a cluster: a replacement must delete the old pool before creating its own.
            opts=pulumi.ResourceOptions(parent=node_pool, ignore_changes=GKE_MUTATED_FIELDS, depends_on=nodes_ready,
                                        delete_before_replace=True),
        )
        node_pool.finish({"nodePoolName": node_pool_resource.name})
        return node_pool
