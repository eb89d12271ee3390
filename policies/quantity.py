"""Kubernetes resource quantities (apimachinery `resource.Quantity`), read exactly.

One parser for the pack and the project (the simulator reads plan quantities with it too), so `32Ki`, `1.5E3`,
`500m` or `2e-1` mean the same everywhere and anything else is refused with the value named, never a traceback.
Grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go): a signed decimal number followed by a binary SI suffix
(Ki Mi Gi Ti Pi Ei), a decimal SI suffix (m, none, k M G T P E) or a decimal exponent (e/E and a signed integer).
"""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

_BINARY = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}
_DECIMAL = {"m": Decimal("1e-3"), "": Decimal(1), "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"),
            "T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18")}
_QUANTITY = re.compile(r"([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[mkMGTPE]?)")
# Kubernetes caps exponents far below this; the cap keeps a hostile `1e999999999` from costing time or memory.
_MAX_EXPONENT = 64


class QuantityError(ValueError):
    """Not a Kubernetes quantity; the message says what is allowed."""


def parse(value: Any) -> Decimal:
    """The exact value of a quantity given as a YAML number or a Kubernetes quantity string."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity (a number, or a number with a suffix such as 500m or 32Ki)")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"{value!r} is not a finite quantity")
        return Decimal(repr(value))
    text = str(value).strip() if isinstance(value, str) else None
    match = _QUANTITY.fullmatch(text) if text else None
    if not match:
        raise QuantityError(f"{value!r} is not a Kubernetes quantity: a number with an optional suffix "
                            "(m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent such as e3)")
    number, suffix = Decimal(match.group(1)), match.group(2)
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    exponent = int(suffix[1:])
    if abs(exponent) > _MAX_EXPONENT:
        raise QuantityError(f"{value!r}: exponent {exponent} is out of range (at most {_MAX_EXPONENT})")
    return number.scaleb(exponent)
