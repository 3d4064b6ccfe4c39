"""llm nodes: prompts (plain, Liquid, variants, fragments, examples, instructions, media), output modes,
repairs, outcome policies with fallback models, allowed sets and inference checks."""
import json
import sys

import pytest

from pytest_aqven.codes import outcome_of
from pytest_aqven.project.loader import load_project

from ..engine_projects import agent, flow, inference, load, node, record, run, write

PROVIDER = '''
import json
from pathlib import Path

from pytest_aqven import ModelResponse, ProviderError
from pytest_aqven import ToolCall

SEEN = []
COUNTS = {}


def complete(request):
    """Answers from script.json: model -> list of responses, one per call (the last one repeats)."""
    SEEN.append(request)
    script = json.loads((Path(__file__).parent / "script.json").read_text())[request.model]
    n = COUNTS.get(request.model, 0)
    COUNTS[request.model] = n + 1
    answer = dict(script[min(n, len(script) - 1)])
    if answer.pop("raise", None):
        raise ProviderError("provider_error", "HTTP 503")
    if "tool_calls" in answer:
        answer["tool_calls"] = tuple(ToolCall(**c) for c in answer["tool_calls"])
    answer.setdefault("tokens_in", 10)
    answer.setdefault("cost_usd", 0.001)
    return ModelResponse(**answer)
'''

OK = {"text": '{"reply": "fine", "ids": ["a"]}'}


def project(tmp_path, package, *, prompt="Answer the customer.", script=None, agent_extra=None, inf_extra=None,
            ins=None, outs=None, extra_files=None):
    ins = ins or {"text": "Text", "ids": "Text[]"}
    outs = outs or {"reply": "Text", "ids": "Text[]"}
    files = {
        "provider.py": PROVIDER,
        "script.json": json.dumps(script or {"bot": [OK]}),
        "types/ask.yaml": record("A question", **{k: ("Json" if v in ("Image", "Image?") else v) for k, v in ins.items()}),
        "types/answer.yaml": record("An answer", reply="Text"),
        "agents/bot.yaml": agent("fake:bot", **(agent_extra or {})),
        "flows/qa/flow.yaml": flow(["answer"], {"reply": "$answer.out.reply"}, output="Reply"),
        "types/reply.yaml": record("A reply", reply="Text"),
        "flows/qa/nodes/answer/answer.node.yaml": node("llm", agent="bot",
                                                       in_=[{"name": k, "from": f"$input.{k}"} for k in ins]),
        "flows/qa/nodes/answer/answer.inference.yaml": inference(ins, outs, **(inf_extra or {})),
        "flows/qa/nodes/answer/answer.prompt.md": prompt,
        **(extra_files or {}),
    }
    return load(write(tmp_path, files, package))


def seen(package):
    return sys.modules[f"{package}.provider"].SEEN


ASK = {"text": "where is my parcel", "ids": ["a", "b"]}


def test_plain_text_is_one_user_message_with_inputs_and_output_fields(tmp_path):
    p = project(tmp_path, "plain", agent_extra={"instructions": "You are Lumen support."},
                inf_extra={"examples": [{"name": "one", "in": {"text": "hi"}, "out": {"reply": "hello", "ids": []}}]})
    result = run(p, "qa", ASK)
    assert result.error is None, result.error
    messages = seen("plain")[0].messages
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0].content == "You are Lumen support."
    assert json.loads(messages[1].content) == {"text": "hi"}
    assert messages[3].content.startswith("Answer the customer.\n\nInputs:\n- text: \"where is my parcel\"")
    assert "Output fields (answer with one JSON object):\n- reply (Text)" in messages[3].content


LIQUID = '''{% message system cache %}Answer as Lumen. {% include "fragments/tone" %}{% endmessage %}
{% message user %}{% case text %}{% when "hi" %}Greeting.{% else %}Question: {{ text }}{% endcase %}
Guide: {{ variants.guide }}
{{ output_format }}{% endmessage %}'''


def test_liquid_messages_fragments_case_variants_and_output_format(tmp_path):
    p = project(tmp_path, "liquidproj", prompt=LIQUID,
                inf_extra={"variants": {"guide": {"on": "$in.ids[0]", "cases": {"a": "alpha"}, "default": "other"}}},
                extra_files={"fragments/tone.md": "Be brief.",
                             "flows/qa/nodes/answer/answer.variants/guide/alpha.md": "Alpha guide for {{ text }}.",
                             "flows/qa/nodes/answer/answer.variants/guide/other.md": "Other guide."})
    result = run(p, "qa", ASK)
    assert result.error is None, result.error
    system, user = seen("liquidproj")[0].messages
    assert (system.role, system.content) == ("system", "Answer as Lumen. Be brief.")
    assert user.content.startswith("Question: where is my parcel\nGuide: Alpha guide for where is my parcel.\n"
                                   "Output fields (answer with one JSON object):")
    assert result.nodes[0].detail["variants"] == {"guide": "Alpha guide for where is my parcel."}
    run(p, "qa", {"text": "hi", "ids": ["z"]})
    assert "Greeting.\nGuide: Other guide." in seen("liquidproj")[1].messages[1].content


@pytest.mark.parametrize("prompt, problem", [
    ("{% message user %}{{ text }", "does not render"),
    ("stray {% message user %}{{ text }}{% endmessage %}", "outside its {% message %} blocks"),
    ("{% message robot %}x{% endmessage %}", "message takes a role"),
    ("{% message user %}{{ text }}{% endmessage %}{% message assistant %}ok{% endmessage %}", "end with a user message"),
    ('{% message user %}{% include "fragments/none" %}{% endmessage %}', "does not render"),
])
def test_a_prompt_that_does_not_render_is_prompt_invalid(tmp_path, prompt, problem):
    p = project(tmp_path, f"bad{abs(hash(prompt)) % 10**6}", prompt=prompt)
    result = run(p, "qa", ASK)
    assert result.error.code == "prompt_invalid" and problem in result.error.message


def test_an_inference_without_its_prompt_file_is_plan_missing(tmp_path):
    # aqven check stops such a run first (E_PROMPT_MISSING); the engine alone names the missing file too
    p = project(tmp_path, "noprompt")
    (p.root / "flows/qa/nodes/answer/answer.prompt.md").unlink()
    p = load_project(p.root)
    assert [d.code for d in p.diagnostics] == ["E_PROMPT_MISSING"]
    result = run(p, "qa", ASK)
    assert result.error.code == "PLAN_MISSING", result.error
    assert result.error.message == "node answer: inference answer has no prompt file answer.prompt.md"
    assert seen("noprompt") == []


def test_media_inputs_are_content_parts_of_the_last_user_message(tmp_path):
    ins = {"text": "Text", "photo": "Image"}
    p = project(tmp_path, "media", ins=ins, extra_files={"samples/lamp.png": "PNGDATA"})
    photo = {"$media": "image/png", "file": "@root/samples/lamp.png"}
    result = run(p, "qa", {"text": "broken", "photo": photo})
    assert result.error is None, result.error
    (message,) = seen("media")[0].messages
    text, image = message.content
    assert text.kind == "text" and "photo" not in text.text
    assert (image.kind, image.media_type, image.data, image.name) == ("image", "image/png", b"PNGDATA", "lamp.png")
    missing = run(p, "qa", {"text": "x", "photo": {"$media": "image/png", "file": "@root/samples/none.png"}})
    assert missing.error.code == "media_unavailable" and outcome_of("media_unavailable") == "infra_error"


@pytest.mark.parametrize("mode, answer", [
    ("tool", {"tool_calls": [{"id": "1", "name": "final_result", "arguments": {"reply": "fine", "ids": []}}],
              "finish_reason": "tool_calls"}),
    ("native", {"parsed": {"reply": "fine", "ids": []}}),
    ("prompted", {"text": '```json\n{"reply": "fine", "ids": []}\n```'}),
    ("auto", {"text": '{"reply": "fine", "ids": []}'}),       # a function provider: prompted
])
def test_output_modes(tmp_path, mode, answer):
    p = project(tmp_path, f"mode_{mode}", script={"bot": [answer]}, agent_extra={"output": {"mode": mode}})
    result = run(p, "qa", ASK)
    assert result.error is None, result.error
    request = seen(f"mode_{mode}")[0]
    assert request.output_mode == ("prompted" if mode == "auto" else mode)
    assert [t.name for t in request.tools] == (["final_result"] if mode == "tool" else [])
    assert request.output_schema["required"] == ["reply", "ids"]


def test_tool_mode_without_the_output_tool_is_repaired(tmp_path):
    script = {"bot": [{"text": ""}, {"tool_calls": [{"id": "1", "name": "final_result",
                                                    "arguments": {"reply": "ok", "ids": []}}]}]}
    p = project(tmp_path, "toolrepair", script=script, agent_extra={"output": {"mode": "tool"}})
    result = run(p, "qa", ASK)
    assert result.error is None
    assert [c.cause for c in result.nodes[0].calls] == ["no_structured_output", None]


def test_a_schema_repair_names_the_field_and_schema_valid_first_try_is_false(tmp_path):
    script = {"bot": [{"text": '{"reply": 3}'}, OK]}
    p = project(tmp_path, "repair", script=script)
    result = run(p, "qa", ASK)
    assert result.error is None
    calls = result.nodes[0].calls
    assert [(c.schema_valid, c.action, c.cause) for c in calls] == [(False, "repair", "schema_invalid"),
                                                                     (True, None, None)]
    feedback = seen("repair")[1].messages[-1].content
    assert "reply: Input should be a valid string" in feedback and "ids: Field required" in feedback
    assert result.schema_valid_first_try is False


def test_retries_exhausted_names_node_and_field(tmp_path):
    p = project(tmp_path, "exhausted", script={"bot": [{"text": '{"reply": 3, "ids": []}'}]})
    result = run(p, "qa", ASK)
    assert result.error.code == "MODEL_RETRIES_EXHAUSTED" and outcome_of(result.error.code) == "schema_invalid"
    assert "node answer" in result.error.message and "reply: Input should be a valid string" in result.error.message


REFUSE = {"refusal": "I cannot", "finish_reason": "refusal"}
CUT = {"text": '{"reply": "fi', "finish_reason": "length"}


@pytest.mark.parametrize("output, script, code, models", [
    ({"on_refusal": "retry"}, {"bot": [REFUSE, OK]}, None, ["fake:bot", "fake:bot"]),
    ({"on_refusal": "fail"}, {"bot": [REFUSE, OK]}, "refusal", ["fake:bot"]),
    ({"on_refusal": "fallback"}, {"bot": [REFUSE], "backup": [OK]}, None, ["fake:bot", "fake:backup"]),
    ({"on_truncated": "fallback"}, {"bot": [CUT], "backup": [CUT]}, "truncated", ["fake:bot", "fake:backup"]),
    ({"on_truncated": "fail"}, {"bot": [CUT]}, "truncated", ["fake:bot"]),
    ({"on_error": "retry"}, {"bot": [{"finish_reason": "error", "error": "bad call"}, OK]}, None,
     ["fake:bot", "fake:bot"]),
    ({"on_error": "retry", "retries": 0}, {"bot": [{"finish_reason": "error"}, OK]}, "provider_error", ["fake:bot"]),
    # a ProviderError comes after the provider's own transport retries: not retried, but a fallback moves on
    ({"on_error": "retry"}, {"bot": [{"raise": True}, OK]}, "provider_error", ["fake:bot"]),
    ({"on_error": "fallback"}, {"bot": [{"raise": True}], "backup": [OK]}, None, ["fake:bot", "fake:backup"]),
    ({"on_error": "fallback"}, {"bot": [{"finish_reason": "error", "error": "bad call"}], "backup": [OK]}, None,
     ["fake:bot", "fake:backup"]),
])
def test_outcome_policies(tmp_path, output, script, code, models):
    package = f"pol{abs(hash(json.dumps([output, script]))) % 10**8}"
    p = project(tmp_path, package, script=script,
                agent_extra={"output": output, "fallback_models": ["fake:backup"]})
    result = run(p, "qa", ASK)
    assert (result.error.code if result.error else None) == code
    trace = result.nodes[0]
    assert [c.model for c in trace.calls] == models
    assert trace.model == models[-1]                         # the model that answered (or failed) last
    if code is None:
        assert trace.detail["answered_by"] == models[-1] and result.models == {"answer": models[-1]}
        assert trace.calls[0].action in ("retry", "fallback")


def test_a_call_that_failed_is_never_unpriced(tmp_path):
    """A provider error gives no answer to bill: the call costs nothing, its source says it failed, and the
    run's spend is not a lower bound because of it (a priced answer after it still counts)."""
    p = project(tmp_path, "failedcall", script={"bot": [{"raise": True}], "backup": [OK]},
                agent_extra={"output": {"on_error": "fallback"}, "fallback_models": ["fake:backup"]})
    result = run(p, "qa", ASK)
    failed, answered = result.nodes[0].calls
    assert (failed.outcome, failed.cost_usd, failed.cost_source) == ("error", 0.0, "failed")
    assert result.unpriced_calls == 0 and result.cost_usd == pytest.approx(0.001)
    crashed = run(project(tmp_path / "crash", "crashcall", script={"bot": [{"raise": True}]}), "qa", ASK)
    assert crashed.error.code == "provider_error" and crashed.unpriced_calls == 0


def test_allowed_sets_keep_id_outputs_to_the_inputs_values(tmp_path):
    script = {"bot": [{"text": '{"reply": "x", "ids": ["zz"]}'}, {"text": '{"reply": "x", "ids": ["b"]}'}]}
    p = project(tmp_path, "allowed", script=script, inf_extra={"allowed_sets": [{"type": "ChunkId", "from": "$in.ids[*]"}]},
                ins={"text": "Text", "ids": "ChunkId[]"}, outs={"reply": "Text", "ids": "ChunkId[]"},
                extra_files={"types/chunk_id.yaml": {"apiVersion": "aqven/v1", "kind": "Type", "type": "id",
                                                     "description": "A chunk id", "allowed_set": "dynamic"}})
    result = run(p, "qa", ASK)
    assert result.error is None, result.error
    assert result.output == {"reply": "x"}
    assert "ids values outside the allowed set: zz (allowed: a, b)" in seen("allowed")[1].messages[-1].content
    assert "Allowed values of ids: a, b" in seen("allowed")[0].messages[-1].content


def test_allowed_sets_reach_ids_nested_in_records_lists_and_unions(tmp_path):
    """AQVEN's showcase restricts a citation's chunk id inside a reply (and a policy id inside a decision):
    an allowed set holds at every depth of the output, not only for a top-level field."""
    answers = ['{"reply": "x", "cites": [{"chunk_id": "a"}, {"chunk_id": "zz"}], "source": null}',
               '{"reply": "x", "cites": [{"chunk_id": "a"}], "source": {"kind": "kb", "chunk_id": "yy"}}',
               '{"reply": "x", "cites": [{"chunk_id": "b"}], "source": {"kind": "kb", "chunk_id": "a"}}']
    p = project(tmp_path, "allowednested", script={"bot": [{"text": a} for a in answers]},
                agent_extra={"output": {"retries": 2}},
                inf_extra={"allowed_sets": [{"type": "ChunkId", "from": "$in.ids[*]"}]},
                ins={"text": "Text", "ids": "ChunkId[]"}, outs={"reply": "Text", "cites": "Cite[]", "source": "Source?"},
                extra_files={"types/chunk_id.yaml": {"apiVersion": "aqven/v1", "kind": "Type", "type": "id",
                                                     "description": "A chunk id", "allowed_set": "dynamic"},
                             "types/cite.yaml": record("A citation", chunk_id="ChunkId"),
                             "types/source.yaml": {"apiVersion": "aqven/v1", "kind": "Type", "type": "union",
                                                   "description": "A source", "discriminator": "kind",
                                                   "variants": [{"name": "kb", "fields": [
                                                       {"name": "chunk_id", "type": "ChunkId"}]}]}})
    result = run(p, "qa", ASK)
    assert result.error is None, result.error
    calls = seen("allowednested")
    assert len(calls) == 3
    first = calls[0].messages[-1].content
    assert "Allowed values of cites.chunk_id: a, b" in first and "Allowed values of source.chunk_id: a, b" in first
    assert "cites.chunk_id values outside the allowed set: zz (allowed: a, b)" in calls[1].messages[-1].content
    assert "source.chunk_id values outside the allowed set: yy (allowed: a, b)" in calls[2].messages[-1].content
    defs = calls[0].output_schema["$defs"]     # the schema sent carries the set, so a model answering to it complies
    assert defs["Cite"]["properties"]["chunk_id"]["enum"] == defs["SourceKb"]["properties"]["chunk_id"]["enum"] == ["a", "b"]
    unrestricted = run(p, "qa", {"text": "t", "ids": []})
    assert "enum" not in json.dumps(seen("allowednested")[-1].output_schema), unrestricted.error


CHECKS = '''
from pytest_aqven import NoParams, Verdict


def polite(value, context, params: NoParams) -> Verdict:
    return Verdict(passed="please" in value.reply, reason="say please")
'''


@pytest.mark.parametrize("on_fail, code, calls, passed", [
    ("retry", None, 2, [False, True]),
    ("fail", "check_failed", 1, [False]),
    ("flag", None, 1, [False]),
])
def test_inference_checks_are_scored_with_the_experiment_evaluators(tmp_path, on_fail, code, calls, passed):
    script = {"bot": [{"text": '{"reply": "no", "ids": []}'}, {"text": '{"reply": "yes please", "ids": []}'}]}
    checks = [{"run": "@root.checks:polite", "on_fail": on_fail},
              {"use": "max_words", "with": {"field": "$out.reply", "max": 5}, "on_fail": "fail"}]
    p = project(tmp_path, f"chk_{on_fail}", script=script, inf_extra={"checks": checks},
                extra_files={"checks.py": CHECKS})
    result = run(p, "qa", ASK)
    assert (result.error.code if result.error else None) == code
    trace = result.nodes[0]
    assert len(trace.calls) == calls
    assert [c.passed for c in trace.checks if c.check == "@root.checks:polite"] == passed
    if on_fail == "retry":
        assert "check @root.checks:polite failed: say please" in seen(f"chk_{on_fail}")[1].messages[-1].content
        assert trace.calls[0].cause == "check @root.checks:polite" and result.schema_valid_first_try is True
    if code:
        assert outcome_of(code) == "model_fail"


def test_a_judge_check_of_an_inference_grades_each_answer_and_asks_again(tmp_path):
    """checks: [{inference, agent}] inside an inference: the judge's inputs bind by name to the node's in and out,
    a score under the threshold sends its rationale back to the model; the judge's calls are the attempt's."""
    script = {"bot": [{"text": '{"reply": "no", "ids": []}'}, {"text": '{"reply": "yes please", "ids": []}'}],
              "grader": [{"text": '{"rationale": "too curt", "score": 0.2}'},
                         {"text": '{"rationale": "kind", "score": 0.9}'}]}
    checks = [{"inference": "grade", "agent": "judge", "on_fail": "retry", "threshold": 0.8}]
    extra = {"agents/judge.yaml": agent("fake:grader"),
             "flows/grade.inference.yaml": inference({"text": "Text", "reply": "Text"},
                                                     {"rationale": "Text", "score": "Float"}),
             "flows/grade.prompt.md": "Grade the reply."}
    p = project(tmp_path, "judgechk", script=script, inf_extra={"checks": checks}, extra_files=extra)
    result = run(p, "qa", ASK)
    assert result.error is None, result.error
    requests = seen("judgechk")
    grades = [r for r in requests if r.model == "grader"]
    assert len(grades) == 2 and "no" in grades[0].messages[-1].content and ASK["text"] in grades[0].messages[-1].content
    answer = result.nodes[0]
    assert [(c.passed, c.reason) for c in answer.checks] == [(False, "too curt"), (True, "kind")]
    assert "check judge grade (judge) failed: too curt" in [r for r in requests if r.model == "bot"][1].messages[-1].content
    assert [n.node for n in result.nodes].count("answer__check1_grade") == 2
    assert result.cost_usd == pytest.approx(0.004) and result.output == {"reply": "yes please"}


def test_a_judge_check_of_an_inference_whose_input_nothing_binds_is_never_called(tmp_path):
    """The judge needs `tone`, which neither the node's in nor its out carries: an infrastructure error of the
    attempt (never check_failed, a counted model failure), and no judge call is made."""
    script = {"bot": [{"text": '{"reply": "yes please", "ids": []}'}], "grader": [{"text": '{"score": 0.1}'}]}
    extra = {"agents/judge.yaml": agent("fake:grader"),
             "flows/grade.inference.yaml": inference({"reply": "Text", "tone": "Text", "hint": "Text?"},
                                                     {"score": "Float"}),
             "flows/grade.prompt.md": "Grade the reply."}
    p = project(tmp_path, "judgeunbound", inf_extra={"checks": [{"inference": "grade", "agent": "judge", "on_fail": "fail"}]},
                script=script, extra_files=extra)
    result = run(p, "qa", ASK)
    assert result.error.code == "CHECK_INPUT_MISSING" and outcome_of(result.error.code) == "infra_error"
    assert result.error.message == ("node answer: check judge grade (judge) needs input tone (Text), which is missing "
                                    "in the in and out of node answer; the judge was not called")
    assert [r.model for r in seen("judgeunbound")] == ["bot"]


NAN_CHECK = '''
import math

from pytest_aqven import NoParams, Verdict


def unsure(value, context, params: NoParams) -> Verdict:
    return Verdict.model_construct(passed=math.nan, score=None, reason=None)
'''


def test_an_inference_check_whose_passed_is_nan_is_an_infrastructure_error(tmp_path):
    p = project(tmp_path, "nancheck", inf_extra={"checks": [{"run": "@root.checks:unsure", "on_fail": "fail"}]},
                script={"bot": [{"text": '{"reply": "x", "ids": []}'}]}, extra_files={"checks.py": NAN_CHECK})
    result = run(p, "qa", ASK)
    assert result.error.code == "CHECK_VALUE_INVALID" and "gave passed nan" in result.error.message


PY_PROMPT = '''
from types import SimpleNamespace


def render(text: str, ids: list) -> object:
    message = lambda role, text: SimpleNamespace(role=role, text=text)
    return SimpleNamespace(messages=(message("system", "Be short."), message("user", f"{text} / {len(ids)} ids")))
'''


def test_a_python_prompt_renders_the_messages(tmp_path):
    p = project(tmp_path, "pyprompt", inf_extra={"prompt": "render"},
                extra_files={"flows/qa/nodes/answer/answer.py": PY_PROMPT})
    result = run(p, "qa", ASK)
    assert result.error is None, result.error
    assert [(m.role, m.content) for m in seen("pyprompt")[0].messages] == [
        ("system", "Be short."), ("user", "where is my parcel / 2 ids")]
