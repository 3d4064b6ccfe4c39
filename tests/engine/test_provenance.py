"""Error provenance: a value that does not fit its declared type coming out of a code node, a container, a tool,
a narrow node or a flow's returns is the flow's bug (an infrastructure error naming the node, the field, the
declared type and where), never the model's `schema_invalid`. Engine runs first, then pytest runs of projects
with the wiring mistakes users make, which end in skipped attempts, an invalid verdict and no finding."""
import re

import pytest

from pytest_aqven.codes import outcome_of

from .. import projects
from ..engine_projects import flow, load, node, record, run, write

LIB = '''
def words(text: str) -> dict:
    if text == "list":
        return ["not", "a", "record"]
    return {"text": text, "count": "many"}


def parts(text: str) -> dict:
    return {"parts": text.split()}


def upper(part: str) -> dict:
    return {"text": part.upper()}


def lookup(key: str) -> dict:
    return {"found": key, "hits": None}
'''


def make(tmp_path, files: dict, package: str):
    return load(write(tmp_path, {"lib.py": LIB, **files}, package))


def error_of(result):
    assert result.error is not None and outcome_of(result.error.code) == "infra_error", result.error
    assert result.error.public == result.error.message      # no value in it: held-out runs show it
    return result.error


def test_a_code_node_value_of_the_wrong_type_names_node_field_type_and_return_line(tmp_path):
    project = make(tmp_path, {
        "flows/count/flow.yaml": flow(["words"], {"text": "$words.out.text"}),
        "flows/count/nodes/words/words.node.yaml": node(
            "code", run="@root.lib:words", in_=[{"name": "text", "from": "$input.text"}],
            out=[{"name": "text", "type": "Text"}, {"name": "count", "type": "Int"}]),
    }, "provcode")
    error = error_of(run(project, "count", {"text": "a b"}))
    assert error.code == "CODE_OUTPUT_INVALID" and error.node == "words"
    assert error.message == ("node words: the value @root.lib:words returned does not fit its declared type: count "
                             "is a string, not Int (at lib.py:4)")
    assert error.location == "lib.py:4"
    whole = error_of(run(project, "count", {"text": "list"}))
    assert "it is a list, not an object of its declared fields (at lib.py:3)" in whole.message


def test_a_code_node_that_leaves_out_a_field_says_it_is_missing(tmp_path):
    project = make(tmp_path, {
        "flows/count/flow.yaml": flow(["split"], {"text": "$split.out.text"}),
        "flows/count/nodes/split/split.node.yaml": node(
            "code", run="@root.lib:parts", in_=[{"name": "text", "from": "$input.text"}],
            out=[{"name": "parts", "type": "Text[]"}, {"name": "text", "type": "Text"}]),
    }, "provmissing")
    error = error_of(run(project, "count", {"text": "a b"}))
    assert error.code == "CODE_OUTPUT_INVALID"
    assert error.message.endswith("does not fit its declared type: text is missing (Text) (at lib.py:8)")


def switch_files(bind: list[dict]) -> dict:
    return {
        "flows/route/flow.yaml": flow(["pick"], {"text": "$pick.out.text"}),
        "flows/route/nodes/pick/pick.node.yaml": node(
            "switch", on="$input.text", cases={"default": {"node": "shout", "bind": bind}},
            out=[{"name": "text", "type": "Text"}]),
        "flows/route/nodes/pick/shout.node.yaml": node(
            "code", run="@root.lib:upper", in_=[{"name": "part", "from": "$input.text"}],
            out=[{"name": "text", "type": "Text"}]),
    }


def test_a_switch_case_that_does_not_bind_the_switch_out_is_the_flow_s_bug(tmp_path):
    project = make(tmp_path, switch_files([{"name": "reply", "from": "$shout.out.text"}]), "provswitch")
    error = error_of(run(project, "route", {"text": "hi"}))
    assert error.code == "CONTAINER_OUTPUT_INVALID" and error.node == "pick"
    assert error.message == ("node pick: the bind of case default does not fit its declared type: text is missing "
                             "(Text); reply is not declared (at flows/route/nodes/pick/pick.node.yaml:9)")


def test_a_map_out_that_does_not_fit_ok_names_the_out_field_line(tmp_path):
    project = make(tmp_path, {
        "flows/each/flow.yaml": flow(["split", "loud"], {"text": "$loud.out.first"}),
        "flows/each/nodes/split/split.node.yaml": node(
            "code", run="@root.lib:parts", in_=[{"name": "text", "from": "$input.text"}],
            out=[{"name": "parts", "type": "Text[]"}]),
        "flows/each/nodes/loud/loud.node.yaml": node(
            "map", over="$split.out.parts", body="up",
            out=[{"name": "first", "type": "Text", "from": "$ok"}]),
        "flows/each/nodes/loud/up.node.yaml": node(
            "code", run="@root.lib:upper", in_=[{"name": "part", "from": "$item"}], out=[{"name": "text", "type": "Text"}]),
    }, "provmap")
    error = error_of(run(project, "each", {"text": "a b"}))
    assert error.code == "CONTAINER_OUTPUT_INVALID" and error.node == "loud"
    assert error.message.startswith("node loud: its out does not fit its declared type: first is a list, not Text")
    assert error.message.endswith("(at flows/each/nodes/loud/loud.node.yaml:8)")


def test_a_tool_output_that_does_not_fit_its_out_fields(tmp_path):
    project = make(tmp_path, {
        "tools/find.yaml": {"apiVersion": "aqven/v1", "kind": "Tool", "description": "find a key", "effect": "read",
                            "run": "@root.lib:lookup", "in": [{"name": "key", "type": "Text"}],
                            "out": [{"name": "found", "type": "Text"}, {"name": "hits", "type": "Int"}]},
        "flows/ask/flow.yaml": flow(["find"], {"text": "$find.out.found"}),
        "flows/ask/nodes/find/find.node.yaml": node("tool", tool="find", in_=[{"name": "key", "from": "$input.text"}]),
    }, "provtool")
    error = error_of(run(project, "ask", {"text": "k"}))
    assert error.code == "TOOL_OUTPUT_INVALID" and error.node == "find"
    assert error.message == ("node find: the value tool find returned does not fit its declared type: hits is null, "
                             "not Int (at lib.py:16)")


def test_returns_that_do_not_fit_the_output_type_through_a_call_node_too(tmp_path):
    files = {
        "types/pair.yaml": record("Two words", first="Text", count="Int"),
        "flows/inner/flow.yaml": flow(["split"], {"first": "$split.out.parts[0]", "count": "$split.out.parts[1]"},
                                      output="Pair"),
        "flows/inner/nodes/split/split.node.yaml": node(
            "code", run="@root.lib:parts", in_=[{"name": "text", "from": "$input.text"}],
            out=[{"name": "parts", "type": "Text[]"}]),
        "flows/outer/flow.yaml": flow(["sub"], {"text": "$sub.out.first"}),
        "flows/outer/nodes/sub/sub.node.yaml": node("call", flow="inner", in_=[{"name": "text", "from": "$input.text"}]),
    }
    project = make(tmp_path, files, "provreturns")
    direct = error_of(run(project, "inner", {"text": "a b"}))
    assert direct.code == "RETURNS_INVALID"
    assert direct.message == ("flow inner: its returns (Pair) does not fit its declared type: count is a string, "
                              "not Int (at flows/inner/flow.yaml:11)")
    called = error_of(run(project, "outer", {"text": "a b"}))
    assert called.code == "RETURNS_INVALID" and called.node == "sub"


# --- through pytest: the wiring mistakes of real projects -----------------------------------------------------
SWITCH = {
    "flows/rate/flow.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "Clean a review, then rate it on its own route"
        input: "Review"
        output: "Rating"
        order:
        - "clean"
        - "route"
        returns:
        - name: "label"
          from: "$route.out.label"
        ''',
    "flows/rate/nodes/route/route.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "switch"
        description: "Every review goes to the judge"
        on: "$clean.out.text"
        cases:
          default:
            node: "judge"
            bind:
            - name: "verdict"
              from: "$judge.out.label"
        out:
        - name: "label"
          type: "Label"
        ''',
}

MAP = {
    "flows/rate/flow.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "Clean a review, then rate each sentence"
        input: "Review"
        output: "Rating"
        order:
        - "clean"
        - "each"
        returns:
        - name: "label"
          from: "$each.out.label"
        ''',
    "flows/rate/nodes/each/each.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "map"
        description: "Rate every sentence"
        over: "$clean.out.sentences"
        body: "judge"
        out:
        - name: "label"
          type: "Label"
          from: "$ok"
        ''',
    "flows/rate/nodes/clean/clean.py": '''
        def clean(text: str) -> dict:
            return {"text": text.strip(), "sentences": [text.strip()]}
        ''',
    # the base project's clean node, with the list the map goes over
    "flows/rate/nodes/clean/clean.node.yaml": projects.FILES["flows/rate/nodes/clean/clean.node.yaml"].replace(
        '          type: "Text"\n', '          type: "Text"\n        - name: "sentences"\n          type: "Text[]"\n'),
}

WORDS = {"flows/rate/nodes/clean/clean.py": '''
    def clean(text: str) -> dict:
        return {"text": len(text)}
    '''}

MISSING = {"flows/rate/nodes/clean/clean.py": '''
    def clean(text: str) -> dict:
        return {"cleaned": text.strip()}
    '''}


def _under(container: str, files: dict) -> dict:
    """The judge's three files moved under a container's folder (it becomes the container's child)."""
    moved = {}
    for name in ("judge.node.yaml", "judge.inference.yaml", "judge.prompt.md"):
        moved[f"flows/rate/nodes/{container}/{name}"] = projects.FILES[f"flows/rate/nodes/judge/{name}"]
    text = moved[f"flows/rate/nodes/{container}/judge.node.yaml"]
    if container == "each":
        moved[f"flows/rate/nodes/{container}/judge.node.yaml"] = text.replace('"$clean.out.text"', '"$item"')
    return {**moved, **files}


MISTAKES = {
    "code node, wrong type": (WORDS, "CODE_OUTPUT_INVALID: node clean: the value clean returned does not fit its "
                                     "declared type: text is an integer, not Text (at clean.py:2)"),
    "code node, missing field": (MISSING, "CODE_OUTPUT_INVALID: node clean: the value clean returned does not fit "
                                          "its declared type: text is missing (Text); cleaned is not declared "
                                          "(at clean.py:2)"),
}

# wiring mistakes aqven check sees before a token is spent: the experiment is a collection error, nothing runs
# (the engine's classification of the same mistakes, should one get past the check, is tested above)
STATIC_MISTAKES = {
    "switch without bind": (_under("route", SWITCH), "flows/rate/nodes/route/route.node.yaml:9:5: error "
                            "E_BINDING_MISSING cases.default.bind: node route: case default binds no value for out "
                            "field label of the switch"),
    "map out against $ok": (_under("each", MAP), "flows/rate/nodes/each/each.node.yaml:"),
}


def wired(pytester, files: dict) -> None:
    root = projects.make(pytester, 40, repeats=2, files=files, package="provenance")
    if any("nodes/route/" in f or "nodes/each/" in f for f in files):   # the judge moved into the container
        for name in ("judge.node.yaml", "judge.inference.yaml", "judge.prompt.md"):
            (root / "flows/rate/nodes/judge" / name).unlink()
        (root / "flows/rate/nodes/judge").rmdir()


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_a_wiring_mistake_is_skipped_attempts_an_invalid_verdict_and_no_finding(pytester, mistake, xdist):
    files, reason = MISTAKES[mistake]
    wired(pytester, files)
    result = pytester.runpytest("proj", "--aqven-holdout", "-rs", "-p", "no:cacheprovider", *xdist)
    out = result.stdout.str()
    # every attempt skipped with the error that names the node, the field, the type and the line; shown on a
    # held-out run because it carries no case data
    skipped = re.findall(r"SKIPPED \[(\d+)\] \S+: (.*)", out)
    assert skipped and {why for _, why in skipped} == {reason}, skipped
    outcomes = result.parseoutcomes()
    assert outcomes.get("xfailed", 0) == 0 and outcomes.get("skipped", 0) == sum(int(n) for n, _ in skipped) > 0
    assert "rate_ok (holdout, " in out and "): invalid - No finding: " in out
    assert "warning: every attempt of variant bot " in out and "failed the same way: the infrastructure error" in out
    assert "--aqven-holdout" not in out.split("next: ", 1)[-1].splitlines()[0]
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    root = pytester.path / "proj"
    assert not (root / "experiments/rate_ok/findings").exists() and not (root / "FINDINGS.md").exists()
    assert "Traceback" not in out and "schema_invalid" not in out


@pytest.mark.parametrize("mistake", list(STATIC_MISTAKES))
def test_a_wiring_mistake_the_check_sees_spends_nothing(pytester, mistake, xdist):
    files, diagnostic = STATIC_MISTAKES[mistake]
    wired(pytester, files)
    result = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider", *xdist)
    out = result.stdout.str()
    assert diagnostic in out and "xfailed" not in out and "passed" not in out.splitlines()[-1]
    assert result.ret != pytest.ExitCode.OK
    root = pytester.path / "proj"
    assert not (root / "experiments/rate_ok/findings").exists() and not (root / "FINDINGS.md").exists()
    assert "Traceback" not in out


def test_a_working_run_whose_every_answer_fails_the_schema_warns_and_never_points_at_held_out(pytester, xdist):
    """The model's own failure stays counted (schema_invalid, xfail), but a variant that failed that way on every
    attempt measured one failure, not the question: a warning, and a next step that fixes it first."""
    projects.make(pytester, projects.cases(30, "junk"), repeats=1, package="allschema")
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", *xdist)
    out = result.stdout.str()
    assert result.parseoutcomes().get("xfailed", 0) > 0 and "skipped" not in result.parseoutcomes()
    assert "rate_ok (dev, " in out and "): signal - Signal on dev" in out
    assert ("warning: every attempt of variant bot " in out and "failed the same way: schema_invalid at node judge "
            "(no answer fit its output fields); the metric measures that failure, not the question") in out
    nxt = next(line for line in out.splitlines() if line.startswith("  next: "))
    assert nxt.startswith("  next: fix the prompt, output fields or agent of node judge: every answer of variant bot "
                          "failed its output fields") and "--aqven-holdout" not in nxt


def test_the_words_of_a_mismatch_never_quote_the_value():
    """What a held-out run shows must carry no case data: kinds and declared types, never the value (a union's
    tag included, which pydantic's own words quote)."""
    from typing import Annotated, Literal, Union

    from pydantic import BaseModel, Field, ValidationError

    from pytest_aqven.engine.fit import mismatches

    class Refund(BaseModel):
        kind: Literal["refund"]

    class Other(BaseModel):
        kind: Literal["other"]

    class Out(BaseModel):
        route: Annotated[Union[Refund, Other], Field(discriminator="kind")]
        words: int
        status: Literal["answered", "escalated"]     # an enum type: its values are named, the value found is not
        level: Literal["low", "high"]

    with pytest.raises(ValidationError) as caught:
        Out.model_validate({"route": {"kind": "SECRET CASE TEXT"}, "words": "SECRET CASE TEXT",
                            "status": "SECRET CASE TEXT", "level": 3})
    words = mismatches(caught.value, [type("F", (), {"name": "route", "type": "Route"}),
                                      type("F", (), {"name": "words", "type": "Int"}),
                                      type("F", (), {"name": "status", "type": "AnswerStatus"}),
                                      type("F", (), {"name": "level", "type": "Level"})])
    assert words == ["route names no variant of its union (Route)", "words is a string, not Int",
                     "status is a string outside AnswerStatus (one of 'answered' or 'escalated')",
                     "level is an integer, not Level (one of 'low' or 'high')"]
