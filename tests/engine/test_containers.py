"""Container nodes (call, parallel, map, loop, switch) and human and narrow nodes, one flow per policy path."""
import sys

import pytest

from pytest_aqven.codes import outcome_of
from pytest_aqven.experiments.attempt import root_cause

from ..engine_projects import agent, flow, inference, load, node, record, run, write

LIB = '''
import threading
import time

active = 0
peak = 0
lock = threading.Lock()


def draft(who: str, text: str) -> dict:
    time.sleep({"one": 0.03, "two": 0.01, "three": 0.02}[who])
    if f"fail-{who}" in text:
        raise RuntimeError(f"{who} failed")
    return {"text": f"{who}:{text}"}


async def slow_draft(who: str, text: str) -> dict:
    import asyncio
    await asyncio.sleep(5)
    return {"text": who}


def split(text: str) -> dict:
    return {"words": text.split()}


def shout(word: str, index: int) -> dict:
    global active, peak
    with lock:
        active += 1
        peak = max(peak, active)
    time.sleep(0.02)
    with lock:
        active -= 1
    if word == "bad":
        raise ValueError("bad word")
    return {"text": f"{index}:{word.upper()}"}


pairs = threading.Barrier(2, timeout=5)


def shout_pair(word: str, index: int) -> dict:
    pairs.wait()            # two items at a time, or this times out
    return shout(word, index)


def revise(previous: str | None) -> dict:
    return {"reply": (previous or "") + "+"}


def critique(reply: str, before: dict | None) -> dict:
    return {"score": min(1.0, len(reply) / 10), "seen_before": before is not None}


def two_of_three(state, params):
    from pytest_aqven.engine.policies import Done, Fail, Wait
    if state.pending:
        return Wait()
    kept = tuple(v for v in state.values if not v["text"].startswith("one"))
    return Done(kept) if len(kept) >= 2 else Fail("too few")


meeting = threading.Barrier(3, timeout=5)


def meet(who: str, text: str) -> dict:
    meeting.wait()          # returns only when the three branches run at the same time
    return {"text": who}


def stop_at(state, params) -> object:
    from pytest_aqven.engine.policies import Continue, Stop
    return Stop("three passes") if len(state.iterations) >= params["passes"] else Continue()


def mark_bad(item, error, params):
    from pytest_aqven.engine.policies import Default, Fail
    return Default({"text": f"<{error.code}>"}) if item == "refuse-bot" else Fail("unexpected")


def typed_default(item: bytes, error, params):
    from pytest_aqven.engine.policies import Default
    return Default({"text": f"<{type(item).__name__}:{type(error).__name__}:{error.index}>"})


def second_pass(state, params) -> int:
    return 1


def alpha(case: dict, text: str) -> dict:
    return {"text": f"{case['kind']}:{text}"}
'''

TEXT = [{"name": "text", "type": "Text"}]
TEXTS = "Text[]"


def parallel_flow(join: dict) -> dict:
    children = {f"flows/fan/nodes/drafts/{who}.node.yaml": node(
        "code", run="@root.lib:draft", in_=[{"name": "who", "value": who}, {"name": "text", "from": "$input.text"}],
        out=TEXT) for who in ("one", "two", "three")}
    return {
        "flows/fan/flow.yaml": flow(["drafts", "pick"], {"text": "$pick.out.words[0]"}),
        "flows/fan/nodes/drafts/drafts.node.yaml": node(
            "parallel", body={"one": "one", "two": "two", "three": "three"}, join=join,
            out=[{"name": "candidates", "type": TEXTS, "from": "$ok[*].text"},
                 {"name": "failed", "type": "Json", "from": "$failed"}]),
        "flows/fan/nodes/pick/pick.node.yaml": node(
            "code", run="@root.lib:split", in_=[{"name": "text", "value": "x"}], out=[{"name": "words", "type": TEXTS}]),
        **children,
    }


def by(result, node_id: str):
    return next(n for n in result.nodes if n.node == node_id)


# the models of the tests whose children are llm nodes: agents bot, one, two and three
PROVIDER = '''
import threading
import time

from pytest_aqven import ModelResponse, ProviderError

CALLS = []
ANSWERED = {who: threading.Event() for who in ("one", "two", "three")}
AFTER = {"three": "two", "one": "three"}     # two answers first, then three, then one


def complete(request):
    """Echoes the text as `<model>:<text>`; in the text, `refuse-<model>` makes that model refuse (the model's
    failure) and `down-<model>` fails the call as a server's 404 would (an infrastructure error)."""
    text = request.messages[-1].content
    CALLS.append(f"{request.model}:{text}")
    if request.model in AFTER:
        ANSWERED[AFTER[request.model]].wait(5)
        time.sleep(0.1)          # the engine has taken the answer before: one branch per join decision
    try:
        if f"down-{request.model}" in text:
            raise ProviderError("provider_error", f"HTTP 404: the model {request.model} does not exist")
        if f"refuse-{request.model}" in text:
            return ModelResponse(refusal="I cannot help with that", finish_reason="refusal")
        return ModelResponse(text='{"text": "%s:%s"}' % (request.model, text), tokens_in=5, tokens_out=5,
                             cost_usd=0.0)
    finally:
        if request.model in ANSWERED:
            ANSWERED[request.model].set()
'''

MODELS = {"provider.py": PROVIDER, **{f"agents/{who}.yaml": agent(f"fake:{who}") for who in ("bot", "one", "two", "three")}}


def make(tmp_path, files: dict, package: str):
    files = {"lib.py": LIB, "types/listing.yaml": record("Words", words="Text[]"), **MODELS, **files}
    return load(write(tmp_path, files, package))


def calls(package: str) -> list[str]:
    return sys.modules[f"{package}.provider"].CALLS


def on_models(files: dict, folder: str, children: dict[str, str], text: str) -> dict:
    """`files` with the code children named (child -> agent) made llm nodes of the inference draft, whose
    text comes from `text`."""
    files = {**files, f"{folder}/draft.inference.yaml": inference({"text": "Text"}, {"text": "Text"}),
             f"{folder}/draft.prompt.md": "{% message user %}{{ text }}{% endmessage %}"}
    for child, who in children.items():
        files[f"{folder}/{child}.node.yaml"] = node("llm", agent=who, inference="draft",
                                                    in_=[{"name": "text", "from": text}])
    return files


@pytest.mark.parametrize("join, text, expected", [
    ({"use": "all"}, "hi", ["one:hi", "two:hi", "three:hi"]),
    ({"use": "any"}, "hi", {"one:hi", "two:hi", "three:hi"}),       # one: the first to finish
    ({"use": "first_success"}, "hi", {"one:hi", "two:hi", "three:hi"}),
    ({"use": "quorum", "with": {"min_ok": 2, "on_error": "skip"}}, "hi", ["one:hi", "two:hi", "three:hi"]),
    ({"run": "@root.lib:two_of_three"}, "hi", ["two:hi", "three:hi"]),
])
def test_parallel_joins(tmp_path, join, text, expected):
    project = make(tmp_path, parallel_flow(join), f"par_{join.get('use') or 'custom'}")
    result = run(project, "fan", {"text": text})
    assert result.error is None, result.error
    drafts = next(n for n in result.nodes if n.node == "drafts")
    if isinstance(expected, set):        # which branch finishes first depends on the machine's load
        assert len(drafts.output["candidates"]) == 1 and drafts.output["candidates"][0] in expected
    else:
        assert drafts.output["candidates"] == expected
    branches = {n.branch: n for n in result.nodes if n.parent == "drafts"}
    assert set(branches) <= {"one", "two", "three"} and branches["two"].node == "drafts__two"


@pytest.mark.parametrize("join", [
    {"use": "all"},                                                     # the branch's own failure
    {"use": "quorum", "with": {"min_ok": 1}},                           # on_error fail (the default)
    {"use": "quorum", "with": {"min_ok": 3, "on_error": "skip"}},       # a bug is never skipped
])
def test_parallel_join_failures(tmp_path, join):
    project = make(tmp_path, parallel_flow(join), "parfail")
    result = run(project, "fan", {"text": "fail-one"})
    assert result.error.code == "code_invalid" and result.error.node == "drafts"
    assert result.error.message.startswith("node drafts: branch one: node one: @root.lib:draft raised RuntimeError")
    assert result.error.location == "lib.py:12"


def test_a_join_unmet_because_models_failed_is_their_failure(tmp_path):
    files = on_models(parallel_flow({"use": "quorum", "with": {"min_ok": 3, "on_error": "skip"}}),
                      "flows/fan/nodes/drafts", {w: w for w in ("one", "two", "three")}, "$input.text")
    result = run(make(tmp_path, files, "parunmet"), "fan", {"text": "refuse-one"})
    assert result.error.code == "E_JOIN_FAILED" and result.error.node == "drafts"
    # unmet because branch one refused: its error is the cause the attempt is classified by
    assert [c.code for c in result.error.causes] == ["refusal"]
    assert root_cause(result.error).code == "refusal" and "quorum 3 is unreachable" in result.error.message


def test_parallel_branches_run_concurrently(tmp_path):
    files = parallel_flow({"use": "all"})
    for who in ("one", "two", "three"):
        files[f"flows/fan/nodes/drafts/{who}.node.yaml"]["run"] = "@root.lib:meet"
    result = run(make(tmp_path, files, "parconc"), "fan", {"text": "hi"})
    assert result.error is None, result.error
    assert by(result, "drafts").output["candidates"] == ["one", "two", "three"]


def map_flow(on_item_error: dict, concurrency: int | None = 2, body: str = "shout_pair") -> dict:
    spec = {"over": "$split.out.words", "body": "shout", "on_item_error": on_item_error,
            "out": [{"name": "words", "type": TEXTS, "from": "$ok[*].text"}, {"name": "failed", "type": "Json", "from": "$failed"}]}
    if concurrency:
        spec["concurrency"] = concurrency
    return {
        "flows/each/flow.yaml": flow(["split", "loud"], {"text": "$split.out.words[0]"}),
        "flows/each/nodes/split/split.node.yaml": node("code", run="@root.lib:split",
                                                       in_=[{"name": "text", "from": "$input.text"}],
                                                       out=[{"name": "words", "type": TEXTS}]),
        "flows/each/nodes/loud/loud.node.yaml": node("map", **spec),
        "flows/each/nodes/loud/shout.node.yaml": node("code", run=f"@root.lib:{body}",
                                                      in_=[{"name": "word", "from": "$item"}, {"name": "index", "from": "$index"}],
                                                      out=TEXT),
    }


def on_bot(files: dict) -> dict:
    """map_flow's body on the model bot, the item its text."""
    return on_models(files, "flows/each/nodes/loud", {"shout": "bot"}, "$item")


@pytest.mark.parametrize("policy, words, failed", [
    ({"use": "skip"}, ["bot:a", "bot:c", "bot:d"], [1]),
    ({"use": "default", "with": {"value": {"text": "?"}}}, ["bot:a", "?", "bot:c", "bot:d"], [1]),
])
def test_map_item_errors_recovered(tmp_path, policy, words, failed):
    project = make(tmp_path, on_bot(map_flow(policy)), f"map_{policy['use']}")
    result = run(project, "each", {"text": "a refuse-bot c d"})
    assert result.error is None, result.error
    loud = next(n for n in result.nodes if n.node == "loud")
    assert loud.output["words"] == words
    assert [f["index"] for f in loud.output["failed"]] == failed and loud.output["failed"][0]["code"] == "refusal"
    assert {n.item for n in result.nodes if n.parent == "loud"} == {0, 1, 2, 3}


def test_map_runs_concurrency_items_at_a_time(tmp_path):
    project = make(tmp_path, map_flow({"use": "skip"}), "mappairs")
    result = run(project, "each", {"text": "a b c d"})
    assert by(result, "loud").output["words"] == ["0:A", "1:B", "2:C", "3:D"]
    assert sys.modules["mappairs.lib"].peak == 2          # concurrency 2: pairs meet, never three


def test_map_item_error_policy_gets_its_item_as_annotated_and_aqvens_map_item_error(tmp_path):
    project = make(tmp_path, on_bot(map_flow({"run": "@root.lib:typed_default"}, None)), "maptyped")
    result = run(project, "each", {"text": "a refuse-bot"})
    assert result.error is None, result.error
    assert by(result, "loud").output["words"] == ["bot:a", "<bytes:MapItemError:1>"]


def test_map_item_error_fail_stops_with_the_items_error(tmp_path):
    project = make(tmp_path, map_flow({"use": "fail"}, None, "shout"), "mapfail")
    result = run(project, "each", {"text": "a bad c"})
    assert result.error.code == "code_invalid" and "item 1" in result.error.message
    assert outcome_of(result.error.code) == "infra_error"


def test_map_over_a_non_list_is_an_error(tmp_path):
    files = map_flow({"use": "skip"})
    files["flows/each/nodes/loud/loud.node.yaml"]["over"] = "$split.out.words[0]"
    project = make(tmp_path, files, "mapnotlist")
    assert run(project, "each", {"text": "a b"}).error.code == "E_MAP_OVER_NOT_LIST"


def loop_flow(stop: list, select: dict, max_iter: int = 5) -> dict:
    return {
        "flows/poli/flow.yaml": flow(["polish"], {"text": "$polish.out.reply"}),
        "flows/poli/nodes/polish/polish.node.yaml": node(
            "loop", body=["revise", "critique"], init={"revise": [{"name": "previous", "from": "$input.text"}]},
            max_iter=max_iter, stop=stop, select=select,
            out=[{"name": "reply", "type": "Text", "from": "$iter.revise.out.reply"},
                 {"name": "score", "type": "Float", "from": "$iter.critique.out.score"},
                 {"name": "iterations", "type": "Int", "from": "$loop.iterations"},
                 {"name": "why", "type": "Text", "from": "$loop.stop_reason"}]),
        "flows/poli/nodes/polish/revise.node.yaml": node(
            "code", run="@root.lib:revise", in_=[{"name": "previous", "from": "$acc.revise.out.reply"}], out=[
                {"name": "reply", "type": "Text"}]),
        "flows/poli/nodes/polish/critique.node.yaml": node(
            "code", run="@root.lib:critique", in_=[{"name": "reply", "from": "$revise.out.reply"},
                                                   {"name": "before", "from": "$acc.critique.out"}],
            out=[{"name": "score", "type": "Float"}, {"name": "seen_before", "type": "Bool"}]),
    }


@pytest.mark.parametrize("stop, select, out", [
    ([{"use": "threshold", "with": {"path": "$iter.critique.out.score", "gte": 0.4}}], {"use": "last"},
     {"reply": "ab++", "score": 0.4, "iterations": 2, "why": "policy"}),
    ([], {"use": "best", "with": {"path": "$iter.critique.out.score"}},
     {"reply": "ab+++++", "score": 0.7, "iterations": 5, "why": "max_iter"}),
    ([{"run": "@root.lib:stop_at", "with": {"passes": 3}}], {"use": "last"},
     {"reply": "ab+++", "score": 0.5, "iterations": 3, "why": "policy"}),
])
def test_loop_init_acc_stop_and_select(tmp_path, stop, select, out):
    project = make(tmp_path, loop_flow(stop, select), f"loop{len(stop)}{select['use'] if 'use' in select else ''}")
    result = run(project, "poli", {"text": "ab"})
    assert result.error is None, result.error
    polish = by(result, "polish")
    assert polish.output == out
    critiques = [n for n in result.nodes if n.node == "polish__critique"]
    assert [c.iteration for c in critiques] == list(range(out["iterations"]))
    assert [c.output["seen_before"] for c in critiques][:2] == [False, True]     # $acc is null on pass 1


def test_loop_stagnation_stops_when_the_score_stops_rising(tmp_path):
    files = loop_flow([{"use": "stagnation", "with": {"path": "$iter.critique.out.score", "window": 1,
                                                      "min_delta": 0.02}}], {"use": "last"}, max_iter=20)
    project = make(tmp_path, files, "loopstag")
    result = run(project, "poli", {"text": "abcdefgh"})          # score reaches 1.0 at pass 2, then stays
    assert by(result, "polish").output["iterations"] == 3 and by(result, "polish").output["why"] == "policy"


def switch_flow() -> dict:
    return {
        "flows/sw/flow.yaml": flow(["shape", "route"], {"text": "$route.out.text"}),
        "flows/sw/nodes/shape/shape.node.yaml": node(
            "code", run="@root.lib:split", in_=[{"name": "text", "from": "$input.text"}], out=[{"name": "words", "type": TEXTS}]),
        "flows/sw/nodes/route/route.node.yaml": node(
            "switch", on="$input.text", cases={
                "a": {"node": "alpha", "bind": [{"name": "text", "from": "$alpha.out.text"}]},
                "b": {"bind": [{"name": "text", "value": "fixed"}]}},
            out=[{"name": "text", "type": "Text"}]),
        "flows/sw/nodes/route/alpha.node.yaml": node(
            "code", run="@root.lib:alpha", in_=[{"name": "case", "from": "$case"}, {"name": "text", "from": "$input.text"}],
            out=TEXT),
    }


def test_switch_on_a_value(tmp_path):
    project = make(tmp_path, switch_flow(), "swvalue")
    assert run(project, "sw", {"text": "b"}).output == {"text": "fixed"}
    result = run(project, "sw", {"text": "c"})
    assert result.error.code == "E_SWITCH_NO_CASE" and "'c'" in result.error.message


def test_switch_on_a_union_variant_gives_case_the_value(tmp_path):
    files = switch_flow()
    files["flows/sw/nodes/route/route.node.yaml"]["on"] = "$input"
    files["flows/sw/nodes/route/route.node.yaml"]["cases"] = {
        "alpha_kind": {"node": "alpha", "bind": [{"name": "text", "from": "$alpha.out.text"}]}}
    files["types/ask.yaml"] = record("A question", text="Text", kind="Text")
    project = make(tmp_path, files, "swunion")
    result = run(project, "sw", {"text": "x", "kind": "alpha_kind"})
    assert result.error is None, result.error
    assert result.output == {"text": "alpha_kind:x"}
    assert by(result, "route").detail["case"] == "alpha_kind"


def call_files() -> dict:
    return {
        "flows/outer/flow.yaml": flow(["panel"], {"text": "$panel.out.text"}),
        "flows/outer/nodes/panel/panel.node.yaml": node("call", flow="inner", in_=[{"name": "text", "from": "$input.text"}]),
        "flows/inner/flow.yaml": flow(["revise"], {"text": "$revise.out.reply"}),
        "flows/inner/nodes/revise/revise.node.yaml": node("code", run="@root.lib:revise",
                                                          in_=[{"name": "previous", "from": "$input.text"}],
                                                          out=[{"name": "reply", "type": "Text"}]),
        "flows/ping/flow.yaml": flow(["go"], {"text": "$go.out.text"}),
        "flows/ping/nodes/go/go.node.yaml": node("call", flow="pong", in_=[{"name": "text", "from": "$input.text"}]),
        "flows/pong/flow.yaml": flow(["back"], {"text": "$back.out.text"}),
        "flows/pong/nodes/back/back.node.yaml": node("call", flow="ping", in_=[{"name": "text", "from": "$input.text"}]),
    }


def test_call_runs_the_called_flow_with_its_input_bindings(tmp_path):
    project = make(tmp_path, call_files(), "callok")
    result = run(project, "outer", {"text": "hi"})
    assert result.output == {"text": "hi+"}
    assert [n.node for n in result.nodes] == ["panel", "panel__revise"]
    assert result.nodes[1].parent == "panel"


def test_a_call_cycle_is_stopped(tmp_path):
    project = make(tmp_path, call_files(), "callcycle")
    result = run(project, "ping", {"text": "hi"})
    assert result.error.code == "E_CALL_RECURSIVE" and "ping -> pong -> ping" in result.error.message


def human_files(on_timeout: dict | None = None) -> dict:
    spec = {"form": "Answer", "assignee": "lead", "timeout_seconds": 60, "on_timeout": on_timeout or {"policy": "fail"},
            "in": [{"name": "text", "from": "$input.text"}]}
    return {
        "flows/ask/flow.yaml": flow(["approve", "narrowed"], {"text": "$narrowed.out.text"}),
        "flows/ask/nodes/approve/approve.node.yaml": node("human", **spec),
        "flows/ask/nodes/narrowed/narrowed.node.yaml": node("narrow", from_="$approve.out", to="Answer"),
    }


def test_a_human_node_is_answered_from_the_case(tmp_path):
    project = make(tmp_path, human_files(), "humanok")
    result = run(project, "ask", {"text": "hi"}, node_outputs={"approve": {"text": "approved"}})
    assert result.output == {"text": "approved"}
    assert result.nodes[0].input == {"text": "hi"}


def test_a_human_node_without_an_answer_is_human_timed_out_never_a_wait(tmp_path):
    project = make(tmp_path, human_files(), "humanmissing")
    result = run(project, "ask", {"text": "hi"})
    assert result.error.code == "HUMAN_TIMED_OUT" and outcome_of("HUMAN_TIMED_OUT") == "infra_error"
    project = make(tmp_path / "d", human_files({"policy": "default", "value": {"text": "silence"}}), "humandefault")
    assert run(project, "ask", {"text": "hi"}).output == {"text": "silence"}


def test_a_wrong_answer_or_narrow_names_the_field(tmp_path):
    project = make(tmp_path, human_files(), "humanbad")
    result = run(project, "ask", {"text": "hi"}, node_outputs={"approve": {"txt": "x"}})
    assert result.error.code == "INPUT_INVALID" and "text: Field required" in result.error.message


def test_branches_still_running_when_the_join_decides_are_cancelled(tmp_path):
    files = parallel_flow({"use": "first_success"})
    files["flows/fan/nodes/drafts/one.node.yaml"]["run"] = "@root.lib:slow_draft"
    result = run(make(tmp_path, files, "parcancel"), "fan", {"text": "hi"})
    assert result.error is None, result.error
    assert by(result, "drafts__one").status == "cancelled"
    assert by(result, "drafts").output["candidates"] in (["two:hi"], ["three:hi"])


def test_map_custom_item_policy(tmp_path):
    project = make(tmp_path, on_bot(map_flow({"run": "@root.lib:mark_bad"})), "mapcustom")
    result = run(project, "each", {"text": "a refuse-bot c d"})
    assert result.error is None, result.error
    assert by(result, "loud").output["words"] == ["bot:a", "<refusal>", "bot:c", "bot:d"]


def test_loop_custom_select(tmp_path):
    project = make(tmp_path, loop_flow([], {"run": "@root.lib:second_pass"}, max_iter=3), "loopselect")
    result = run(project, "poli", {"text": "ab"})
    assert by(result, "polish").output == {"reply": "ab++", "score": 0.4, "iterations": 3, "why": "max_iter"}


def test_a_narrow_that_does_not_fit_names_the_node_and_field(tmp_path):
    files = human_files()
    files["flows/ask/nodes/narrowed/narrowed.node.yaml"]["from"] = "$approve.out.text"
    project = make(tmp_path, files, "narrowbad")
    result = run(project, "ask", {"text": "x"}, node_outputs={"approve": {"text": "ok"}})
    # the flow's bug, not the model's: an infrastructure error at the node's `to`, the value's kind, never the value
    assert result.error.code == "NARROW_INVALID" and result.error.node == "narrowed"
    assert outcome_of(result.error.code) == "infra_error"
    assert result.error.message == ("node narrowed: the value narrowed to Answer does not fit its declared type: it "
                                    "is a string, not Answer (at flows/ask/nodes/narrowed/narrowed.node.yaml:6)")
    assert result.error.public == result.error.message


def test_the_flow_input_is_validated_before_a_full_run(tmp_path):
    project = make(tmp_path, human_files(), "inputcheck")
    result = run(project, "ask", {"txt": "x"}, node_outputs={"approve": {"text": "ok"}})
    assert result.error.code == "INPUT_INVALID" and result.nodes == []
    assert "text: Field required" in result.error.message


# --- what a policy absorbs: the model's failures, never an infrastructure error ------------------------------
NOTE = "absorbs only the model's own failures)"
MAP_POLICIES = {"skip": {"use": "skip"}, "default": {"use": "default", "with": {"value": {"text": "?"}}},
                "custom": {"run": "@root.lib:mark_bad"}}


@pytest.mark.parametrize("policy", list(MAP_POLICIES))
def test_a_map_policy_never_absorbs_an_outage(tmp_path, policy):
    """The model bot is unknown to the server for item 1: the attempt is the provider's error, named by the map,
    the item and the node that called, and the items after it never run (concurrency 1)."""
    rule = MAP_POLICIES[policy]
    project = make(tmp_path, on_bot(map_flow(rule, concurrency=1)), f"mapdown_{policy}")
    result = run(project, "each", {"text": "a down-bot c d"})
    error = result.error
    assert error.code == "provider_error" and outcome_of(error.code) == "infra_error" and error.node == "loud"
    label = f"use: {rule['use']}" if "use" in rule else rule["run"]
    assert error.message == (f"node loud: item 1: node shout: HTTP 404: the model bot does not exist "
                             f"(on_item_error {label} {NOTE}")
    assert error.public.startswith("node loud: item 1: node shout: function provider raised provider_error")
    assert calls(f"mapdown_{policy}") == ["bot:a", "bot:down-bot"]
    shouts = [(n.item, n.status, n.error_code) for n in result.nodes if n.node == "loud__shout"]
    assert shouts == [(0, "ok", None), (1, "failed", "provider_error")] and by(result, "loud").status == "failed"


def test_a_map_policy_never_absorbs_a_bug_of_the_flow(tmp_path):
    project = make(tmp_path, map_flow({"use": "skip"}, None, "shout"), "mapbug")
    error = run(project, "each", {"text": "a bad c"}).error
    assert error.code == "code_invalid" and error.location == "lib.py:35"
    assert error.message == f"node loud: item 1: node shout: @root.lib:shout raised ValueError: bad word at lib.py:35 " \
                            f"(on_item_error use: skip {NOTE}"


@pytest.mark.parametrize("join, text, error", [
    # branch two answers first, then three, then one
    ({"use": "first_success"}, "down-two", f"branch two: node two: HTTP 404: the model two does not exist (join "
                                           f"use: first_success {NOTE}"),
    ({"use": "quorum", "with": {"min_ok": 2, "on_error": "skip"}}, "down-one",
     f"branch one: node one: HTTP 404: the model one does not exist (join use: quorum {NOTE}"),
    ({"run": "@root.lib:two_of_three"}, "down-one",
     f"branch one: node one: HTTP 404: the model one does not exist (join @root.lib:two_of_three {NOTE}"),
    ({"use": "any"}, "down-two", "branch two: node two: HTTP 404: the model two does not exist"),   # any: no note
])
def test_a_join_never_absorbs_an_outage(tmp_path, join, text, error):
    files = on_models(parallel_flow(join), "flows/fan/nodes/drafts", {w: w for w in ("one", "two", "three")},
                      "$input.text")
    result = run(make(tmp_path, files, f"pardown_{join.get('use', 'custom')}"), "fan", {"text": text})
    assert result.error.code == "provider_error" and result.error.node == "drafts"
    assert result.error.message == f"node drafts: {error}"


def test_a_join_never_absorbs_a_bug_of_the_flow(tmp_path):
    project = make(tmp_path, parallel_flow({"use": "quorum", "with": {"min_ok": 2, "on_error": "skip"}}), "parbug")
    error = run(project, "fan", {"text": "fail-one"}).error
    assert error.code == "code_invalid" and error.location == "lib.py:12"
    assert error.message.startswith("node drafts: branch one: node one: @root.lib:draft raised RuntimeError: one failed")


@pytest.mark.parametrize("join, text, candidates, failed", [
    ({"use": "first_success"}, "refuse-two", [["three:refuse-two"], ["one:refuse-two"]], ["two"]),
    ({"use": "quorum", "with": {"min_ok": 2, "on_error": "skip"}}, "refuse-one",
     [["two:refuse-one", "three:refuse-one"]], ["one"]),
    ({"run": "@root.lib:two_of_three"}, "refuse-one", [["two:refuse-one", "three:refuse-one"]], ["one"]),
    ({"use": "any"}, "refuse-one", [["two:refuse-one"]], []),       # one refuses last: cancelled before
])
def test_a_join_absorbs_the_models_failures(tmp_path, join, text, candidates, failed):
    files = on_models(parallel_flow(join), "flows/fan/nodes/drafts", {w: w for w in ("one", "two", "three")},
                      "$input.text")
    result = run(make(tmp_path, files, f"parrefuse_{join.get('use', 'custom')}"), "fan", {"text": text})
    assert result.error is None, result.error
    drafts = by(result, "drafts").output
    assert drafts["candidates"] in candidates
    assert [(f["key"], f["code"]) for f in drafts["failed"]] == [(key, "refusal") for key in failed]


def test_any_fails_with_the_first_branch_to_finish_when_it_refused(tmp_path):
    """`any` takes the first branch to finish: a refusal there is the model's counted failure, as before."""
    files = on_models(parallel_flow({"use": "any"}), "flows/fan/nodes/drafts",
                      {w: w for w in ("one", "two", "three")}, "$input.text")
    result = run(make(tmp_path, files, "parrefuse_anyfirst"), "fan", {"text": "refuse-two"})
    assert result.error.code == "refusal" and result.error.message.startswith("node drafts: branch two: node two:")


def looped_map(policy: dict) -> dict:
    """A loop whose pass splits a text and maps each word to the model bot: the input's words on the first pass,
    `x y` on the second, which select (last) picks."""
    return {
        "flows/poli/flow.yaml": flow(["polish"], {"text": "$polish.out.words[0]"}),
        "flows/poli/nodes/polish/polish.node.yaml": node(
            "loop", body=["split", "each"], init={"split": [{"name": "text", "from": "$input.text"}]},
            max_iter=2, select={"use": "last"},
            out=[{"name": "words", "type": TEXTS, "from": "$iter.each.out.words"}]),
        "flows/poli/nodes/polish/split.node.yaml": node("code", run="@root.lib:split",
                                                        in_=[{"name": "text", "value": "x y"}],
                                                        out=[{"name": "words", "type": TEXTS}]),
        "flows/poli/nodes/polish/each.node.yaml": node(
            "map", over="$split.out.words", body="shout", on_item_error=policy,
            out=[{"name": "words", "type": TEXTS, "from": "$ok[*].text"}]),
        **on_models({}, "flows/poli/nodes/polish", {"shout": "bot"}, "$item"),
    }


def test_a_loop_fails_on_an_outage_in_a_pass_select_would_not_pick(tmp_path):
    project = make(tmp_path, looped_map({"use": "skip"}), "loopdown")
    result = run(project, "poli", {"text": "a down-bot"})
    assert result.error.code == "provider_error" and result.error.node == "polish__each"    # the child that failed
    assert result.error.message == ("node polish: iteration 0: node each: item 1: node shout: HTTP 404: the model bot "
                                    f"does not exist (on_item_error use: skip {NOTE}")


def test_a_loop_keeps_the_models_failures_its_map_absorbed(tmp_path):
    project = make(tmp_path, looped_map({"use": "skip"}), "looprefuse")
    result = run(project, "poli", {"text": "a refuse-bot"})
    assert result.error is None, result.error
    assert by(result, "polish").output == {"words": ["bot:x", "bot:y"]}
    assert [n.detail.get("recovered_items") for n in result.nodes if n.node == "polish__each"] == [[1], []]
