"""`aqven.policies`: every public name of AQVEN's `aqven.policies`: the contracts of checks and of
custom container policies, and the built-ins by slot."""
from __future__ import annotations

from typing import Callable

from . import control, evaluators
from .contracts import (POLICY_CONFIG, BranchResult, Continue, Default, Done, EvalContext, Evaluator, Fail,
                        ItemDecision, ItemErrorPolicy, JoinDecision, JoinPolicy, JoinState, LoopState, NoParams,
                        RefPath, SelectPolicy, Skip, Slot, Stop, StopDecision, StopPolicy, Verdict, Wait)

BUILTINS: dict[Slot, dict[str, Callable[..., object]]] = {
    Slot.JOIN: {"all": control.join_all, "any": control.join_any, "first_success": control.first_success,
                "quorum": control.quorum},
    Slot.STOP: {"threshold": control.threshold, "stagnation": control.stagnation},
    Slot.SELECT: {"last": control.last, "best": control.best},
    Slot.ITEM_ERROR: {"skip": control.skip, "fail": control.fail, "default": control.default},
    Slot.EVALUATOR: {"not_empty": evaluators.not_empty, "max_words": evaluators.max_words,
                     "language": evaluators.language, "no_pii": evaluators.no_pii, "regex": evaluators.regex,
                     "unique_items": evaluators.unique_items, "ids_in_allowed_set": evaluators.ids_in_allowed_set,
                     "citations_in_sources": evaluators.citations_in_sources, evaluators.EXPECTED_CHECK:
                     evaluators.expected, "cost_usd": evaluators.cost_usd, "latency_ms": evaluators.latency_ms},
}


def builtin(slot: Slot, policy_id: str) -> Callable[..., object] | None:
    return BUILTINS[Slot(slot)].get(policy_id)


__all__ = ["BUILTINS", "POLICY_CONFIG", "BranchResult", "Continue", "Default", "Done", "EvalContext", "Evaluator",
           "Fail", "ItemDecision", "ItemErrorPolicy", "JoinDecision", "JoinPolicy", "JoinState", "LoopState",
           "NoParams", "RefPath", "SelectPolicy", "Skip", "Slot", "Stop", "StopDecision", "StopPolicy", "Verdict",
           "Wait", "builtin", "control", "evaluators"]
