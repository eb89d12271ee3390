"""Wire values (as the engine sends them to providers) turned into plain JSON values."""
from __future__ import annotations

from typing import Any

# Signature keys of the Pulumi wire format.
_SIG = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_OUTPUT_SIG = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
SECRET = "[secret]"


def to_plain(value: Any) -> Any:
    """Secrets become a placeholder, resource references their URN, values known only after deployment the UNKNOWN
    marker (on the wire or as the SDK's own `Unknown` in resolved outputs), everything else stays."""
    if _is_sdk_unknown(value):
        return UNKNOWN
    if isinstance(value, dict):
        sig = value.get(_SIG)
        if sig == _SECRET_SIG:
            return SECRET
        if sig == _RESOURCE_SIG:
            return value.get("urn", "")
        if sig == _OUTPUT_SIG:
            if value.get("secret"):
                return SECRET
            return to_plain(value["value"]) if "value" in value else UNKNOWN
        return {k: to_plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    if hasattr(value, "urn") and hasattr(value, "__class__") and value.__class__.__module__.startswith("pulumi"):
        return "[resource]"
    return value


def _is_sdk_unknown(value: Any) -> bool:
    """`pulumi.output.Unknown`, what `Output.future(with_unknowns=True)` yields for a value a preview cannot know
    (e.g. a component property whose value was None). Matched by name so reading a saved plan never imports the SDK."""
    return type(value).__name__ == "Unknown" and type(value).__module__ == "pulumi.output"
