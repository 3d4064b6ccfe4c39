"""Every runtime error code of an attempt and the outcome it gives: the one definition the engine, the
statistics, the reports and docs/concepts.md read (tests/test_codes.py holds the package and the docs to it).

The rule (error provenance): only the model's own failures are counted outcomes. An llm node's answer that
never fits its output fields after repairs is `schema_invalid`; a value that does not fit its declared type
coming out of a code node, a container, a tool, a narrow node or a flow's `returns` is a bug of the flow,
an infrastructure error: the attempt is skipped and a verdict never measures the plumbing.

A leaf: it imports nothing of pytest_aqven, so every layer may import it."""
from __future__ import annotations

from typing import NamedTuple

COUNTED = ("ok", "model_fail", "schema_invalid", "refusal")        # outcomes every metric counts
UNCOUNTED = ("infra_error", "budget_cut", "cancelled")              # skipped attempts: no metric counts them
OUTCOMES = COUNTED + UNCOUNTED


class Code(NamedTuple):
    outcome: str         # one of OUTCOMES but ok and cancelled (which no error code gives)
    meaning: str


def _codes(outcome: str, **meanings: str) -> dict[str, Code]:
    return {code: Code(outcome, meaning) for code, meaning in meanings.items()}


CODES: dict[str, Code] = {
    # the model's failures: counted
    **_codes("model_fail",
             truncated="the answer was cut off (finish reason length)",
             check_failed="an inference check with on_fail: fail rejected the answer"),
    **_codes("schema_invalid",
             MODEL_INVALID_JSON="an llm node's answer is not JSON (no repair left)",
             MODEL_SCHEMA_MISMATCH="an llm node's answer does not fit its output fields or allowed sets "
                                   "(no repair left)",
             MODEL_NO_STRUCTURED_OUTPUT="in tool mode, the answer did not call final_result (no repair left)",
             MODEL_RETRIES_EXHAUSTED="an llm node's answers never fit its output fields after every repair"),
    **_codes("refusal", refusal="the model refused to answer"),
    # the spend cap: not counted
    **_codes("budget_cut", budget_exceeded="the attempt reached its share of the series' spend cap"),
    # the flow's own bugs: a value that does not fit its declared type, named by node, field and file:line
    **_codes("infra_error",
             CODE_OUTPUT_INVALID="a code node returned a value that does not fit its out fields",
             CONTAINER_OUTPUT_INVALID="the out of a parallel, map, loop or switch (a switch case's bind) does "
                                      "not fit its declared fields",
             TOOL_OUTPUT_INVALID="a tool returned a value that does not fit its out fields",
             NARROW_INVALID="a narrow node's value does not fit the type it narrows to",
             RETURNS_INVALID="a flow's returns (of the subject, or of a flow a call node runs) do not fit its "
                             "output type",
             RETURNS_UNRESOLVED="a flow's returns name a value that no node produced",
             INPUT_INVALID="a node's or flow's input does not resolve or does not fit its type (the case's inputs "
                           "included)",
             CHECK_VALUE_INVALID="an experiment check gave a value that is not a finite number",
             E_POLICY_RAISED="a check, join, stop, select or on_item_error function raised or returned the wrong "
                             "kind of value",
             E_POLICY_PARAMS="a check's or policy's parameters do not fit it",
             E_CODE_REF_UNRESOLVED="a run: reference names no importable function",
             code_invalid="user code (a code node, a tool, an MCP tool) raised",
             prompt_invalid="a prompt does not render",
             media_unavailable="a media file a case names cannot be read",
             timeout="a model call, user function or MCP server did not answer within its time limit",
             HUMAN_TIMED_OUT="a human node has no answer in the case",
             E_SWITCH_NO_CASE="a switch has no case for its value",
             E_MAP_OVER_NOT_LIST="a map's over is not a list",
             E_MAP_ITEM_FAILED="a map's on_item_error policy failed the map",
             E_JOIN_FAILED="a parallel's join failed",
             E_JOIN_UNDECIDED="a parallel's join decided nothing after every branch",
             E_CALL_RECURSIVE="a call node calls a flow that is already running",
             E_CALL_DEPTH="calls or subagents are nested deeper than 8",
             FLOW_NOT_FOUND="a call node names a flow that does not exist",
             PLAN_MISSING="an agent, inference or provider an llm node or judge needs is missing",
             tool_unknown="a tool or MCP server does not exist",
             tool_job_failed="a tool's job (its wait: poll) ended failed",
             MODEL_TOOL_LOOP="the model asked for tools 10 times without answering",
             MODEL_FEATURE_UNSUPPORTED="something this version of pytest-aqven cannot run",
             INTERNAL="a bug of pytest-aqven itself",
             # providers
             provider_error="the provider failed the call (HTTP error, malformed response, a function provider "
                            "raised)",
             provider_key_missing="the provider's API key is not set",
             provider_config_invalid="the provider's params do not fit it",
             rate_limited="the provider kept answering 429 past the retry policy",
             answer_too_large="the provider's answer is larger than max_answer_mb once decompressed (never retried)",
             cassette_miss="a replayed call has no recording",
             inputs_changed="this process read other input files than the series recorded"),
}


def outcome_of(code: str | None) -> str:
    """The outcome an error code gives; no code is ok, and a code not defined here is an infrastructure
    error (never counted: tests/test_codes.py fails on any code the package uses but does not define)."""
    if code is None:
        return "ok"
    found = CODES.get(code)
    return found.outcome if found is not None else "infra_error"


def counted(outcome: str) -> bool:
    return outcome in COUNTED


def markdown_table() -> str:
    """The table of docs/concepts.md (tests/test_codes.py compares them)."""
    lines = ["| code | outcome | counted | meaning |", "|---|---|---|---|"]
    for code, (outcome, meaning) in CODES.items():
        lines.append(f"| `{code}` | {outcome} | {'yes' if counted(outcome) else 'no (skipped)'} | {meaning} |")
    return "\n".join(lines)
