"""What the checker knows of the built-in evaluators: the `with:` models of AQVEN's eleven built-ins,
the runtime's own, so the checker and the runner never disagree. The built-in container policies and
their parameter models are the engine's too (`engine.policies.BUILTINS`)."""
from __future__ import annotations

from ..engine.evaluators import BUILTINS

EVALUATOR_PARAMS = {name: model for name, (_, model) in BUILTINS.items()}
