"""The vocabulary every layer shares: the outcomes of an attempt, every runtime error code (with the outcome it
gives, its class and the node kinds that raise it), the states of a series, of a claim on an attempt and of a
node in a trace, the verdicts of an experiment and of a cell, and the kinds of the ledger's and the scheduler's
answers. The one definition the engine, the statistics, the series, the reports and
docs/concepts.md read (tests/test_codes.py holds the package and the docs to it).

The rule (error provenance): only the model's own failures are counted outcomes. An llm node's answer that
never fits its output fields after repairs is `schema_invalid`; a value that does not fit its declared type
coming out of a code node, a container, a tool, a narrow node or a flow's `returns` is a bug of the flow,
an infrastructure error: the attempt is skipped and a verdict never measures the plumbing.

A leaf: it imports nothing of pytest_aqven, so every layer may import it. The enums are `StrEnum`s, so a
member equals its string; the tuples below hold the plain strings, which is what records and files carry."""
from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class Outcome(StrEnum):
    OK = "ok"
    MODEL_FAIL = "model_fail"
    SCHEMA_INVALID = "schema_invalid"
    REFUSAL = "refusal"
    INFRA_ERROR = "infra_error"
    BUDGET_CUT = "budget_cut"
    CANCELLED = "cancelled"


COUNTED = tuple(o.value for o in (Outcome.OK, Outcome.MODEL_FAIL, Outcome.SCHEMA_INVALID, Outcome.REFUSAL))
UNCOUNTED = tuple(o.value for o in (Outcome.INFRA_ERROR, Outcome.BUDGET_CUT, Outcome.CANCELLED))  # skipped attempts
OUTCOMES = COUNTED + UNCOUNTED
MODEL_FAILURES = COUNTED[1:]        # the counted outcomes that are not ok: a check of such an attempt fails


class ErrorClass(StrEnum):
    """Whose failure an error code reports: only the model's are counted."""
    MODEL = "model"          # the model's own answer: counted
    SPEND = "spend"          # the series' spend cap cut the attempt
    FLOW = "flow"            # a bug of the project: its code, wiring, types, prompts, checks or policies
    PROVIDER = "provider"    # a model provider or an outside service (an MCP server, a recording) failed
    ENGINE = "engine"        # pytest-aqven cannot run it, or its own bug
    SERIES = "series"        # the series' inputs changed while it ran


class SeriesState(StrEnum):
    AWAITING_APPROVAL = "awaiting_approval"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


OPEN_SERIES = (SeriesState.RUNNING.value, SeriesState.AWAITING_APPROVAL.value)    # a rerun may continue these


class ClaimState(StrEnum):
    """An attempt claimed by a runner: running until its record is saved."""
    RUNNING = "running"
    FINISHED = "finished"


class NodeState(StrEnum):
    """A node's status in an attempt's trace."""
    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    CANCELLED = "cancelled"


class CheckState(StrEnum):
    """A check's result in an attempt: only passed and failed are scored."""
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERROR = "error"


class VerdictState(StrEnum):
    """An experiment's verdict (stats/verdicts.py). Where there is none, a report says `open` (the series is
    unfinished) or `none` (a look's)."""
    CONFIRMED = "confirmed"
    REFUTED = "refuted"
    INCONCLUSIVE = "inconclusive"
    INVALID = "invalid"
    SIGNAL = "signal"


class CellVerdict(StrEnum):
    """A cell's: its interval against the bound or the margin (stats/edges.py gives pass, fail or unclear;
    reference and none complete AQVEN's words, a baseline's and a look's)."""
    PASS = "pass"
    FAIL = "fail"
    UNCLEAR = "unclear"
    REFERENCE = "reference"
    NONE = "none"


class LedgerKind(StrEnum):
    """The ledger's answer to a runner that asks to start an attempt (series/ledger.py Decision)."""
    START = "start"
    REUSED = "reused"
    WAIT = "wait"           # claimed by another runner, the first attempt runs alone, or near the cap
    PAUSED = "paused"
    HALTED = "halted"
    STOPPED = "stopped"


class SchedulerKind(StrEnum):
    """What became of an attempt the scheduler was asked to run (series/scheduler.py AttemptTurn)."""
    RAN = "ran"
    REUSED = "reused"
    HELD = "held"           # another runner holds its claim: the caller looks further ahead
    PAUSED = "paused"
    HALTED = "halted"
    STOPPED = "stopped"
    CANCELLED = "cancelled"
    SPENT = "spent"         # its held-out cases were spent by another series


class CallOutcome(StrEnum):
    """How one model call ended (the engine maps all but ok to an error code: engine/llm.py OUTCOME_CODES)."""
    OK = "ok"
    REFUSAL = "refusal"
    TRUNCATED = "truncated"
    ERROR = "error"


# what raises a code: AQVEN's ten node kinds, a flow itself (its inputs and returns), an experiment check or
# judge, or the series around the attempt
NODE_KINDS = ("llm", "code", "tool", "call", "loop", "parallel", "map", "switch", "human", "narrow")
RAISERS = NODE_KINDS + ("flow", "check", "series")
_CONTAINERS = ("loop", "parallel", "map", "switch")
_POLICIES = ("check", "llm") + _CONTAINERS      # where a check, join, stop, select or on_item_error runs
_MODEL_CALLS = ("llm", "check")                 # an llm node, or a judge of an experiment check


class Code(NamedTuple):
    outcome: str         # one of OUTCOMES but ok and cancelled (which no error code gives)
    error_class: ErrorClass
    raised_by: tuple[str, ...]      # of RAISERS
    meaning: str


def _codes(outcome: Outcome, error_class: ErrorClass, **codes: tuple[tuple[str, ...], str]) -> dict[str, Code]:
    return {code: Code(outcome.value, error_class, raised_by, meaning) for code, (raised_by, meaning) in codes.items()}


_LLM = ("llm",)
CODES: dict[str, Code] = {
    **_codes(Outcome.MODEL_FAIL, ErrorClass.MODEL,
             truncated=(_LLM, "the answer was cut off (finish reason length)"),
             check_failed=(_LLM, "an inference check with on_fail: fail rejected the answer")),
    **_codes(Outcome.SCHEMA_INVALID, ErrorClass.MODEL,
             MODEL_INVALID_JSON=(_LLM, "an llm node's answer is not JSON (no repair left)"),
             MODEL_SCHEMA_MISMATCH=(_LLM, "an llm node's answer does not fit its output fields or allowed sets "
                                          "(no repair left)"),
             MODEL_NO_STRUCTURED_OUTPUT=(_LLM, "in tool mode, the answer did not call final_result (no repair left)"),
             MODEL_RETRIES_EXHAUSTED=(_LLM, "an llm node's answers never fit its output fields after every repair")),
    **_codes(Outcome.REFUSAL, ErrorClass.MODEL, refusal=(_LLM, "the model refused to answer")),
    **_codes(Outcome.BUDGET_CUT, ErrorClass.SPEND,
             budget_exceeded=(("series",), "the attempt reached its share of the series' spend cap")),
    # the flow's own bugs: a value that does not fit its declared type, named by node, field and file:line
    **_codes(Outcome.INFRA_ERROR, ErrorClass.FLOW,
             CODE_OUTPUT_INVALID=(("code",), "a code node returned a value that does not fit its out fields"),
             CONTAINER_OUTPUT_INVALID=(_CONTAINERS, "the out of a parallel, map, loop or switch (a switch case's "
                                                    "bind) does not fit its declared fields"),
             TOOL_OUTPUT_INVALID=(("tool", "llm"), "a tool returned a value that does not fit its out fields"),
             NARROW_INVALID=(("narrow",), "a narrow node's value does not fit the type it narrows to"),
             RETURNS_INVALID=(("flow", "call"), "a flow's returns (of the subject, or of a flow a call node runs) "
                                                "do not fit its output type"),
             RETURNS_UNRESOLVED=(("flow", "call"), "a flow's returns name a value that no node produced"),
             INPUT_INVALID=(NODE_KINDS + ("flow",), "a node's or flow's input does not resolve or does not fit its "
                                                    "type (the case's inputs included)"),
             CHECK_VALUE_INVALID=(("check", "llm"), "a check (of an experiment or an inference) gave a value that "
                                                     "is not a finite number, or a passed that is not a boolean"),
             CHECK_INPUT_MISSING=(("check", "llm"), "a judge's input or a typed parameter of a run: check that is "
                                                     "not optional is null or missing (the judge is not called)"),
             E_POLICY_RAISED=(_POLICIES, "a check, join, stop, select or on_item_error function raised or returned "
                                         "the wrong kind of value"),
             E_POLICY_PARAMS=(_POLICIES, "a check's or policy's parameters do not fit it"),
             E_CODE_REF_UNRESOLVED=(("code", "tool"), "a run: reference names no importable function"),
             code_invalid=(("code", "tool", "llm"), "user code (a code node, a tool, an MCP tool) raised"),
             prompt_invalid=(_MODEL_CALLS, "a prompt does not render"),
             media_unavailable=(_LLM, "a media file a case names cannot be read"),
             HUMAN_TIMED_OUT=(("human",), "a human node has no answer in the case"),
             E_SWITCH_NO_CASE=(("switch",), "a switch has no case for its value"),
             E_MAP_OVER_NOT_LIST=(("map",), "a map's over is not a list"),
             E_MAP_ITEM_FAILED=(("map",), "a map's on_item_error policy failed the map"),
             E_JOIN_FAILED=(("parallel",), "a parallel's join failed"),
             E_JOIN_UNDECIDED=(("parallel",), "a parallel's join decided nothing after every branch"),
             E_CALL_RECURSIVE=(("call",), "a call node calls a flow that is already running"),
             E_CALL_DEPTH=(("call", "llm"), "calls or subagents are nested deeper than 8"),
             FLOW_NOT_FOUND=(("call",), "a call node names a flow that does not exist"),
             PLAN_MISSING=(_MODEL_CALLS, "an agent, inference or provider an llm node or judge needs is missing"),
             tool_unknown=(("tool", "llm"), "a tool or MCP server does not exist"),
             tool_job_failed=(("tool",), "a tool's job (its wait: poll) ended failed"),
             MODEL_TOOL_LOOP=(_LLM, "the model asked for tools 10 times without answering")),
    **_codes(Outcome.INFRA_ERROR, ErrorClass.ENGINE,
             MODEL_FEATURE_UNSUPPORTED=(NODE_KINDS, "something this version of pytest-aqven cannot run"),
             INTERNAL=(RAISERS, "a bug of pytest-aqven itself")),
    **_codes(Outcome.INFRA_ERROR, ErrorClass.PROVIDER,
             timeout=(("llm", "code", "tool", "check"), "a model call, user function or MCP server did not answer "
                                                        "within its time limit"),
             provider_error=(_MODEL_CALLS, "the provider failed the call (HTTP error, malformed response, a function "
                                           "provider raised)"),
             provider_key_missing=(_MODEL_CALLS, "the provider's API key is not set"),
             provider_config_invalid=(_MODEL_CALLS, "the provider's params do not fit it"),
             rate_limited=(_MODEL_CALLS, "the provider kept answering 429 past the retry policy"),
             answer_too_large=(_MODEL_CALLS, "the provider's answer is larger than max_answer_mb once decompressed "
                                             "(never retried)"),
             cassette_miss=(_MODEL_CALLS, "a replayed call has no recording")),
    **_codes(Outcome.INFRA_ERROR, ErrorClass.SERIES,
             inputs_changed=(("series",), "this process read other input files than the series recorded")),
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
    lines = ["| code | outcome | counted | class | raised by | meaning |", "|---|---|---|---|---|---|"]
    for code, c in CODES.items():
        raised_by = "any node" if set(NODE_KINDS) <= set(c.raised_by) else ", ".join(c.raised_by)
        lines.append(f"| `{code}` | {c.outcome} | {'yes' if counted(c.outcome) else 'no (skipped)'} | {c.error_class} "
                     f"| {raised_by} | {c.meaning} |")
    return "\n".join(lines)
