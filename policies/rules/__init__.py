"""Every rule of the pack, in id order: one module `gpu0NN_<slug>.py` per rule, each defining `RULE`."""
from __future__ import annotations

import importlib
import pkgutil

from policies.rule import Rule

MODULES = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name.startswith("gpu"))
RULES: list[Rule] = [importlib.import_module(f"{__name__}.{name}").RULE for name in MODULES]
POLICIES = [rule.policy for rule in RULES]
BY_ID = {rule.id: rule for rule in RULES}
