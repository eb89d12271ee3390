"""The reclaimer's Kubernetes objects: namespace, least-privilege RBAC, the script as a ConfigMap, and the CronJob."""
from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_kubernetes.batch.v1 as batch
import pulumi_kubernetes.core.v1 as core
import pulumi_kubernetes.meta.v1 as meta
import pulumi_kubernetes.rbac.v1 as rbac

from components import namespaces
from components.config.model import PlatformConfig
from components.tenancy.isolation import pod_security_labels
from components.observability.reclaimer.job import ALERT
from components.scheduling.kinds import scheduler_kind

NAMESPACE = namespaces.PLATFORM
NAME = "gpu-reclaimer"
SCRIPT = Path(__file__).with_name("job.py")
MOUNT = "/opt/gpu-reclaimer"
# A public image pinned by digest: the script needs nothing but the standard library, so there is no image of our
# own to build, scan and publish, and the digest cannot move under us.
IMAGE = ("docker.io/library/python:3.12.11-slim-bookworm"
         "@sha256:519591d6871b7bc437060736b9f7456b8731f1499a57e22e6c285135ae657bf7")
NOBODY = 65534
RBAC_GROUP = "rbac.authorization.k8s.io"


def rules(scheduler: str) -> list[rbac.PolicyRuleArgs]:
    """What one run needs in a namespace and nothing more: read pods, act through the scheduler (its row's
    reclaim_rules), write Events. Namespaced resources only: the role is granted per opted-in namespace, never
    cluster-wide."""
    rules = [
        rbac.PolicyRuleArgs(api_groups=[""], resources=["pods"], verbs=["get"]),
        rbac.PolicyRuleArgs(api_groups=[""], resources=["events"], verbs=["create"]),
    ]
    for groups, resources, verbs in scheduler_kind(scheduler).reclaim_rules or ():
        rules.append(rbac.PolicyRuleArgs(api_groups=list(groups), resources=list(resources), verbs=list(verbs)))
    return rules


def opted_in(config: PlatformConfig) -> list[str]:
    return [t.name for t in config.teams if t.reclaim]


def environment(config: PlatformConfig, prometheus_url: str) -> dict[str, str]:
    reclaim = config.observability.reclaim
    return {
        "RECLAIM_PROMETHEUS_URL": prometheus_url,
        "RECLAIM_SCHEDULER": config.scheduler.kind,
        "RECLAIM_NAMESPACES": ",".join(opted_in(config)),
        "RECLAIM_DRY_RUN": "true" if reclaim.dry_run else "false",
        "RECLAIM_ALERT": ALERT,
    }


class Reclaimer(pulumi.ComponentResource):
    """A CronJob that deactivates (Kueue) or aborts (Volcano) workloads whose GPUs stayed idle, in opted-in teams."""

    TYPE = "gpu-platform:observability:Reclaimer"

    def __init__(self, name: str, config: PlatformConfig, prometheus_url: str,
                 namespaces: dict[str, pulumi.Resource], opts: pulumi.ResourceOptions | None = None):
        reclaim = config.observability.reclaim
        teams = opted_in(config)
        super().__init__(self.TYPE, name, {"namespace": NAMESPACE, "schedule": reclaim.schedule,
                                           "dryRun": reclaim.dry_run, "teams": teams, "image": IMAGE}, opts)
        child = pulumi.ResourceOptions(parent=self)
        # Its one pod already meets `restricted`: enforce it, so nothing weaker can ever run next to its token.
        namespace = core.Namespace(f"{name}-namespace", metadata=meta.ObjectMetaArgs(
            name=NAMESPACE, labels=pod_security_labels(config.cluster.kubernetes_minor, enforce="restricted")),
            opts=child)
        ns = namespace.metadata.name
        account = core.ServiceAccount(f"{name}-account", metadata=meta.ObjectMetaArgs(name=NAME, namespace=ns),
                                      opts=child)
        # One ClusterRole, granted only where a team opted in: a RoleBinding per such namespace, none cluster-wide,
        # so the API server itself refuses the reclaimer everywhere else (teams[].reclaim adds or drops a binding).
        role = rbac.ClusterRole(f"{name}-role", metadata=meta.ObjectMetaArgs(name=NAME),
                                rules=rules(config.scheduler.kind), opts=child)
        for team in teams:
            rbac.RoleBinding(
                f"{name}-binding-{team}", metadata=meta.ObjectMetaArgs(name=NAME, namespace=team),
                role_ref=rbac.RoleRefArgs(api_group=RBAC_GROUP, kind="ClusterRole", name=role.metadata.name),
                subjects=[rbac.SubjectArgs(kind="ServiceAccount", name=account.metadata.name, namespace=ns)],
                opts=pulumi.ResourceOptions(parent=self, depends_on=[namespaces[team]]))
        script = core.ConfigMap(f"{name}-script", metadata=meta.ObjectMetaArgs(name=NAME, namespace=ns),
                                data={SCRIPT.name: SCRIPT.read_text()}, opts=child)
        env = [core.EnvVarArgs(name=k, value=v) for k, v in environment(config, prometheus_url).items()]
        container = core.ContainerArgs(
            name="reclaimer", image=IMAGE, image_pull_policy="IfNotPresent",
            # -I: isolated mode, no user site-packages or PYTHON* variables: the standard library only.
            command=["python3", "-I", f"{MOUNT}/{SCRIPT.name}"], env=env,
            resources=core.ResourceRequirementsArgs(requests={"cpu": "50m", "memory": "64Mi"},
                                                    limits={"memory": "128Mi"}),
            security_context=core.SecurityContextArgs(
                allow_privilege_escalation=False, read_only_root_filesystem=True,
                capabilities=core.CapabilitiesArgs(drop=["ALL"])),
            volume_mounts=[core.VolumeMountArgs(name="script", mount_path=MOUNT, read_only=True)],
        )
        pod = core.PodSpecArgs(
            service_account_name=account.metadata.name, restart_policy="Never",
            node_selector={"kubernetes.io/os": "linux"},
            security_context=core.PodSecurityContextArgs(
                run_as_non_root=True, run_as_user=NOBODY, run_as_group=NOBODY,
                seccomp_profile=core.SeccompProfileArgs(type="RuntimeDefault")),
            containers=[container],
            volumes=[core.VolumeArgs(name="script", config_map=core.ConfigMapVolumeSourceArgs(
                name=script.metadata.name, default_mode=0o444))],
        )
        self.cron_job = batch.CronJob(
            f"{name}-cronjob",
            metadata=meta.ObjectMetaArgs(name=NAME, namespace=ns),
            spec=batch.CronJobSpecArgs(
                schedule=reclaim.schedule,
                # One pass at a time, and a missed pass is skipped rather than caught up on.
                concurrency_policy="Forbid", starting_deadline_seconds=300,
                successful_jobs_history_limit=3, failed_jobs_history_limit=3,
                job_template=batch.JobTemplateSpecArgs(spec=batch.JobSpecArgs(
                    # A failed pass is not retried blindly: the next scheduled pass starts from fresh data.
                    backoff_limit=0, active_deadline_seconds=300, ttl_seconds_after_finished=86400,
                    template=core.PodTemplateSpecArgs(
                        metadata=meta.ObjectMetaArgs(labels={"app.kubernetes.io/name": NAME}), spec=pod),
                )),
            ),
            opts=child,
        )
        self.register_outputs({"cronJob": self.cron_job.metadata.name, "dryRun": reclaim.dry_run, "teams": teams})
