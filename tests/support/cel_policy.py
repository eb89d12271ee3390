"""A ValidatingAdmissionPolicy's CEL evaluated with cel-python as the API server evaluates it: variables in order,
then every validation; the messages of those that fail."""
from __future__ import annotations

from typing import Any

import pytest

celpy = pytest.importorskip("celpy", reason="cel-python (pyproject test extra) evaluates the policy's CEL")


def refused(spec: dict, activation: dict[str, Any]) -> list[str]:
    """`activation` maps the request's names (object, oldObject, request, namespaceObject) to plain JSON values."""
    env = celpy.Environment()
    variables = celpy.celtypes.MapType()
    bound = {name: celpy.json_to_cel(value) for name, value in activation.items()}

    def value(expression: str):
        return env.program(env.compile(expression)).evaluate({**bound, "variables": variables})

    for var in spec["variables"]:
        variables[celpy.celtypes.StringType(var["name"])] = value(var["expression"])
    failed = []
    for check in spec["validations"]:
        result = value(check["expression"])
        assert isinstance(result, celpy.celtypes.BoolType), (check["message"], result)
        if not result:
            failed.append(check["message"])
    return failed
