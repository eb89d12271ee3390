"""cluster.region and cluster.kubernetesVersion against the per-cloud tables that go stale (CloudProfile.regions,
CloudProfile.kubernetes_versions): a well-formed value a table does not know yet is warned about, naming the table
and its date, since the cloud may well have added it since; a malformed one, or one the table knows has ended, is
refused."""
from __future__ import annotations

import re

from components.clouds.facts import KUBERNETES_VERSIONS_AS_OF, REGIONS_AS_OF, CloudProfile
from components.config.errors import Problems
from components.provisioning.kinds import kind_of

_VERSION = re.compile(r"1\.(?P<minor>\d{2})(\.\d+)?")
_FORMS = {"minor": "a minor version like \"1.35\"", "minor-or-patch": "a minor or patch version like \"1.35\" or "
          "\"1.35.2\"", "patch": "a minor version in the table or a full version like \"1.35.2\""}


def minor(version: str) -> str:
    """The Kubernetes minor of a minor or patch version: 1.35.2 -> 1.35."""
    return ".".join(version.split(".")[:2])


def region_check(path: str, region: str, prof: CloudProfile, problems: Problems) -> None:
    """A well-formed region (its format is checked before) that the region table does not list."""
    if prof.regions and region not in prof.regions:
        problems.warn(path, f"{region!r} is not in the {prof.service} region table (CloudProfile.regions, as of "
                            f"{REGIONS_AS_OF}); planned as given: check the name against the cloud's region list "
                            "before `pulumi up`")


def version_check(path: str, version: str, prof: CloudProfile, problems: Problems) -> bool:
    """cluster.kubernetesVersion of a cluster the stack creates, in the form the cloud's API takes; False if refused."""
    match = _VERSION.fullmatch(version)
    patch = version.count(".") == 2
    table = prof.kubernetes_versions
    known = f"{', '.join(table)} (CloudProfile.kubernetes_versions, as of {KUBERNETES_VERSIONS_AS_OF})"
    if match is None or (patch and prof.kubernetes_version_form == "minor"):
        problems.add(path, f"{version!r} is not a version {prof.service} takes: it takes "
                           f"{_FORMS[prof.kubernetes_version_form]}; known: {known}")
        return False
    oldest = min(int(m.split(".")[1]) for m in table)
    newest = max(int(m.split(".")[1]) for m in table)
    number = int(match.group("minor"))
    if number < oldest or (number <= newest and minor(version) not in table):
        problems.add(path, f"{version!r} is not a version {prof.service} offers here; allowed: {known}")
        return False
    if number > newest and prof.kubernetes_version_form == "patch" and not patch:
        problems.add(path, f"{version!r} is newer than the {prof.service} version table ({known}), which maps each "
                           f"minor to the full version {prof.service}'s API takes; give the full version, e.g. "
                           f"\"{version}.1\", as the cloud lists it")
        return False
    if number > newest:
        note = kind_of(prof.autoscaler).newer_minor_note
        autoscaler = f" ({note})" if note else ""
        problems.warn(path, f"{version!r} is newer than the {prof.service} version table {known}; planned as given: "
                            f"check {prof.service} offers it, and that the add-ons the stack pins support it"
                            f"{autoscaler}, before `pulumi up`")
    return True
