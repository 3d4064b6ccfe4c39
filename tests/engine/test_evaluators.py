"""AQVEN's eleven built-in evaluators: semantics and failure reasons."""
import pytest
from pydantic import BaseModel, ValidationError

from pytest_aqven.engine.evaluators import BUILTINS, EvalContext

OUT = {
    "reply": {"text": "Hello Anna, your lamp ships today.", "empty": "  "},
    "items": [{"id": "a"}, {"id": "b"}, {"id": "a"}],
    "ids": ["k1", "k3"],
    "cites": [{"id": "k1", "quote": "ships today"}, {"id": "k2", "quote": "money back"}],
    "intent": "refund",
}
IN = {"locale": "en-GB", "ru": "ru", "allowed": ["k1", "k2"],
      "chunks": [{"id": "k1", "body": "It ships today."}, {"id": "k2", "body": "No refunds after 30 days."}]}


class Out(BaseModel):
    reply: dict
    items: list
    ids: list
    cites: list
    intent: str


def run(name, params, expected_output=None, **ctx):
    fn, model = BUILTINS[name]
    context = EvalContext(inputs=IN, expected_output=expected_output, **ctx)
    return fn(Out(**OUT), context, model.model_validate(params))


@pytest.mark.parametrize("name, params, passed, reason", [
    ("expected", {}, False, "there is no expected_output to compare with"),
    ("not_empty", {"field": "$out.reply.text"}, True, None),
    ("not_empty", {"field": "$out.reply.empty"}, False, "$out.reply.empty is empty"),
    ("not_empty", {"field": "$out.nothing"}, False, "$out.nothing is empty"),
    ("max_words", {"field": "$out.reply.text", "max": 6}, True, None),
    ("max_words", {"field": "$out.reply.text", "max": 5}, False, "$out.reply.text: 6 words, at most 5 allowed"),
    ("language", {"field": "$out.reply.text", "locale": "$in.locale"}, True, None),
    ("language", {"field": "$out.reply.text", "locale": "$in.ru"}, False,
     "$out.reply.text is not in language ru: alphabet letter share 0.00"),
    ("language", {"field": "$out.reply.text", "locale": "$in.missing"}, True, "language — is not supported by this check"),
    ("no_pii", {"fields": ["$out.reply.text"]}, True, None),
    ("regex", {"field": "$out.reply.text", "pattern": "ships? today"}, True, None),
    ("regex", {"field": "$out.reply.text", "pattern": "^Bye"}, False, "$out.reply.text does not match ^Bye"),
    ("unique_items", {"field": "$out.items", "key": "id"}, False, "$out.items: key id is duplicated"),
    ("ids_in_allowed_set", {"field": "$out.ids", "allowed": "$in.allowed"}, False,
     "$out.ids: values outside the allowed set: k3"),
    ("ids_in_allowed_set", {"field": "$out.ids[0]", "allowed": "$in.allowed"}, True, None),
    ("citations_in_sources", {"citations": "$out.cites", "sources": "$in.chunks", "id": "id", "quote": "quote",
                              "text": "body"}, False, "quotes not found in sources: k2"),
])
def test_builtin(name, params, passed, reason):
    verdict = run(name, params)
    assert (verdict.passed, verdict.reason) == (passed, reason)


def test_expected_compares_listed_fields_or_all_keys():
    assert run("expected", {"fields": ["intent"]}, {"intent": "refund", "other": 1}).passed
    assert run("expected", {}, {"intent": "refund", "other": 1}).reason == "fields differ from expected_output: other"
    assert run("expected", {"fields": ["tier"]}, {"intent": "refund"}).reason == "expected_output lacks the fields tier"
    assert run("expected", {"fields": ["tier"]}, "refund").reason == "expected_output is not an object with the fields tier"


def test_no_pii_names_the_detectors_that_fired():
    fn, model = BUILTINS["no_pii"]
    value = {"t": "mail anna@example.com or call +44 20 7946 0958 from 10.0.0.1"}
    verdict = fn(value, EvalContext(inputs={}), model.model_validate({"fields": ["$out.t"]}))
    assert verdict.reason == "personal data found: email, ip_address, phone"
    only = fn(value, EvalContext(inputs={}), model.model_validate({"fields": ["$out.t"], "detectors": ["iban"]}))
    assert only.passed


def test_cost_and_latency_are_scores():
    assert run("cost_usd", {}, cost_usd=0.012).score == 0.012
    assert run("latency_ms", {}, latency_ms=340).score == 340.0


def test_parameters_are_strict():
    with pytest.raises(ValidationError):
        BUILTINS["regex"][1].model_validate({"field": "$out.x", "pattern": "a", "flags": "i"})
    with pytest.raises(ValidationError):
        BUILTINS["max_words"][1].model_validate({"field": "out.x", "max": 3})


def test_built_in_checks_run_on_the_loop_and_regex_keeps_its_thread_and_time_limit(monkeypatch):
    """Built-ins are ours and linear in the value: no thread hop. `regex` runs the user's pattern, which can
    backtrack for ages, so it goes through usercode.call like user code. A built-in's bug is the check's error."""
    import asyncio
    import dataclasses

    from pytest_aqven.engine.checks import CheckRaised
    from pytest_aqven.experiments.checks import compile_check
    from pytest_aqven.project import usercode
    from pytest_aqven.project.specs import ExperimentCheck

    threaded = []
    real = usercode.call

    async def spy(fn, *args, **kwargs):
        threaded.append(fn.__name__)
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(usercode, "call", spy)

    def check(**fields):
        return compile_check(ExperimentCheck.model_validate({"kind": "binary", **fields}), None, None)

    expected = check(id="e", use="expected")
    pattern = check(id="r", use="regex", **{"with": {"field": "$out.label", "pattern": "^a$"}})
    context = EvalContext(inputs={}, expected_output={"label": "a"})

    def boom(value, context, params):
        raise ValueError("broken")

    async def main():
        scored = await expected.score({"label": "a"}, context), await pattern.score({"label": "b"}, context)
        with pytest.raises(CheckRaised, match="check e: evaluator use: expected raised ValueError: broken"):
            await dataclasses.replace(expected, fn=boom).score({"label": "a"}, context)
        return scored

    passed, failed = asyncio.run(main())
    assert (passed.state, failed.state) == ("passed", "failed")
    assert threaded == ["regex"]
