"""What the checker knows of the built-ins: the `with:` models of AQVEN's eleven built-in evaluators
(the runtime's own, so the checker and the runner never disagree) and the built-in container policies."""
from __future__ import annotations

from ..experiments.evaluators import BUILTINS

EVALUATOR_PARAMS = {name: model for name, (_, model) in BUILTINS.items()}

# Built-in policies of containers, by where they are used (reference: project model §3.1).
POLICIES = {
    "join": ("all", "any", "first_success", "quorum"),
    "on_item_error": ("skip", "fail", "default"),
    "stop": ("threshold", "stagnation"),
    "select": ("last", "best"),
}
