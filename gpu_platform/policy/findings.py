"""What one policy run found: findings, waived findings, exemption issues, and rules that could not run."""
from __future__ import annotations

from dataclasses import dataclass, field

from gpu_platform.policy.exemptions import Exemptions

SEVERITIES = ("low", "medium", "high", "critical")
# `--fail-on unknown`: mandatory findings fail, and so does a mandatory rule that could not decide.
UNKNOWN = "unknown"
FAIL_ON = (*SEVERITIES, UNKNOWN)
# The exit code of an invalid stack config, as for every command (cli.USAGE_ERROR).
CONFIG_ERROR = 2


@dataclass(frozen=True)
class Location:
    """A line in a file (1-based), for SARIF and editors."""

    path: str
    line: int = 1


@dataclass(frozen=True)
class Finding:
    """One violation a rule reported."""

    rule: str  # GPU001
    policy: str  # the SDK policy name, gpu001-...
    severity: str
    enforcement: str  # mandatory | advisory
    message: str
    urn: str = ""  # empty: about the stack as a whole
    resource: str = ""
    resource_type: str = ""
    subject: str = ""  # the pool or team it is about, when known
    location: Location | None = None
    waived_by: str = ""  # the exemption's config path, when an exemption waived it

    def fails(self, fail_on: str | None) -> bool:
        """Whether this finding fails the check: mandatory ones by default, else by severity threshold."""
        if self.waived_by:
            return False
        if fail_on in (None, UNKNOWN):
            return self.enforcement == "mandatory"
        return SEVERITIES.index(self.severity) >= SEVERITIES.index(fail_on)


@dataclass(frozen=True)
class Note:
    """A rule that did not apply to a resource, or could not run on a value unknown until deployment."""

    rule: str
    kind: str  # not-applicable | unknown
    reason: str
    urn: str = ""
    enforcement: str = "mandatory"

    def fails(self, fail_on: str | None) -> bool:
        """An undecided mandatory rule fails only under `--fail-on unknown`; otherwise it is a warning."""
        return fail_on == UNKNOWN and self.kind == "unknown" and self.enforcement == "mandatory"


@dataclass(frozen=True)
class ConfigProblem:
    """A stack config error (the stack cannot be planned, so no rule ran) or warning, at its dotted path."""

    path: str  # gpuPools[1].instanceType
    message: str
    warning: bool = False
    location: Location | None = None


@dataclass
class Report:
    """The outcome of checking one stack (or plan file)."""

    stack: str
    source: str  # the stack file or plan file checked
    findings: list[Finding] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    exemptions: Exemptions = field(default_factory=Exemptions)
    resources: int = 0
    config: list[ConfigProblem] = field(default_factory=list)

    @property
    def config_errors(self) -> list[ConfigProblem]:
        return [p for p in self.config if not p.warning]

    @property
    def config_warnings(self) -> list[ConfigProblem]:
        return [p for p in self.config if p.warning]

    def failing(self, fail_on: str | None = None) -> list[Finding]:
        return [f for f in self.findings if f.fails(fail_on)]

    @property
    def active(self) -> list[Finding]:
        return [f for f in self.findings if not f.waived_by]

    @property
    def waived(self) -> list[Finding]:
        return [f for f in self.findings if f.waived_by]

    def undecided(self, fail_on: str | None = None) -> list[Note]:
        """Rules that could not decide and fail the check under `fail_on`."""
        return [n for n in self.notes if n.fails(fail_on)]

    def exit_code(self, fail_on: str | None = None) -> int:
        if self.config_errors:
            return CONFIG_ERROR
        return 1 if self.failing(fail_on) or self.undecided(fail_on) else 0
