import asyncio
from pathlib import Path

import pytest

from pytest_aqven.codes import outcome_of
from pytest_aqven.engine.runner import Assembly, Runner
from pytest_aqven.experiments.plan import assemble
from pytest_aqven.project.loader import load_project
from pytest_aqven.providers import registry

from .. import projects


@pytest.fixture
def project(tmp_path: Path):
    projects.make(tmp_path, 4, package="engineproj")
    p = load_project(tmp_path)
    assert p.diagnostics == []
    return p


def run(project, text: str, **kw):
    providers = {s.id: registry.build(s, package=project.package, root=project.root) for s in project.spec.providers}
    assembly = kw.pop("assembly", None) or Assembly(project.flows["rate"])
    return asyncio.run(Runner(project, providers).run(assembly, {"text": text}, {}, kw.get("node_outputs")))


def test_full_flow_runs_code_then_llm_and_returns_the_output_type(project):
    result = run(project, "  fine  ")
    assert result.error is None
    assert result.output == {"label": "positive"}
    clean, judge = result.nodes
    assert clean.output == {"text": "fine"} and clean.kind == "code"
    assert judge.model == "fake:bot-1" and judge.calls[0].tokens_in == 20
    assert result.cost_usd == pytest.approx(0.0002)
    assert result.latency_ms == pytest.approx(100.0 + clean.latency_ms)
    assert result.schema_valid_first_try is True


def test_a_code_node_is_looked_up_by_the_path_of_its_node_made_once(project):
    node = project.flows["rate"].nodes["clean"]
    assert node.py_path == node.path.parent / "clean.py"
    assert node.py_path is node.py_path            # not a new Path (and its hash) at every attempt
    run(project, "fine")
    assert [k for k in project.__dict__["_engine_cache"] if k[0] == "code"] == [("code", "clean", node.py_path)]

def test_a_range_takes_upstream_outputs_from_node_outputs(project):
    assembly = Assembly(project.flows["rate"], start="judge", end="judge")
    result = run(project, "ignored", assembly=assembly, node_outputs={"clean": {"text": "wrong"}})
    assert [n.node for n in result.nodes] == ["judge"]
    assert result.output == {"label": "negative"}


def test_a_range_without_its_fixture_is_an_input_error(project):
    assembly = Assembly(project.flows["rate"], start="judge", end="judge")
    result = run(project, "fine", assembly=assembly, node_outputs={})
    assert result.error.code == "INPUT_INVALID"
    assert "$clean.out.text" in result.error.message


@pytest.mark.parametrize("text, code, outcome", [
    ("refuse", "refusal", "refusal"),
    ("cut", "truncated", "model_fail"),
    ("junk", "MODEL_RETRIES_EXHAUSTED", "schema_invalid"),
    ("crash", "provider_error", "infra_error"),
    ("bug", "code_invalid", "infra_error"),
])
def test_call_outcomes_become_error_codes_and_attempt_outcomes(project, text, code, outcome):
    result = run(project, text)
    assert result.error.code == code
    assert outcome_of(code) == outcome


def test_a_schema_mismatch_is_repaired_once_and_recorded(project):
    result = run(project, "junk")
    judge = result.nodes[-1]
    assert result.error.node == "judge" and judge.status == "failed"
    assert [c.schema_valid for c in judge.calls] == [False, False]   # the answer and its one repair
    assert result.schema_valid_first_try is False
    assert result.cost_usd == pytest.approx(0.0002)                  # both calls are paid


def test_variants_put_their_values_in_the_slots(tmp_path):
    extra = 'varies:\n  what: "agent"\n  nodes:\n  - "judge"\n'
    files = {**projects.dataset(projects.cases(2)), **projects.experiment(extra="")}
    files["agents/other.yaml"] = projects.FILES["agents/bot.yaml"].replace("bot-1", "other-1")
    text = files["experiments/rate_ok/experiment.yaml"].replace(
        'variants:\n- id: "bot"\n', extra + 'variants:\n- id: "bot"\n- id: "other"\n  nodes:\n    judge: "other"\n')
    files["experiments/rate_ok/experiment.yaml"] = text
    projects.write(tmp_path, files, package="variantproj")
    p = load_project(tmp_path)
    assemblies = assemble(p, p.experiments["rate_ok"])
    assert assemblies["bot"].agents == {} and assemblies["other"].agents == {"judge": "other"}
    result = run(p, "fine", assembly=assemblies["other"])
    assert result.models == {"judge": "fake:other-1"}


def test_an_engine_bug_is_an_internal_infrastructure_error_not_a_crash(project, monkeypatch):
    from pytest_aqven.engine import prompts

    def broken(*args, **kwargs):
        raise KeyError("oops")
    monkeypatch.setattr(prompts, "render", broken)
    result = run(project, "fine")
    assert result.error.code == "INTERNAL" and "KeyError" in result.error.message
    assert outcome_of(result.error.code) == "infra_error"
    assert result.nodes[-1].status == "failed"


def test_the_snapshot_covers_every_file_of_an_alternative_node(tmp_path):
    from pytest_aqven.experiments.plan import plan, snapshot

    files = {**projects.dataset(projects.cases(4)), **projects.experiment()}
    text = files["experiments/rate_ok/experiment.yaml"].replace(
        'variants:\n- id: "bot"\n',
        'varies:\n  what: "use"\n  nodes:\n  - "judge"\nvariants:\n- id: "bot"\n- id: "alt"\n  nodes:\n    judge: "judge_alt"\n')
    files["experiments/rate_ok/experiment.yaml"] = text
    alt = "experiments/rate_ok/nodes/judge_alt/"
    files[alt + "judge_alt.node.yaml"] = projects.FILES["flows/rate/nodes/judge/judge.node.yaml"]
    files[alt + "judge_alt.inference.yaml"] = projects.FILES["flows/rate/nodes/judge/judge.inference.yaml"]
    files[alt + "judge_alt.prompt.md"] = "Rate it, briefly.\n"
    projects.write(tmp_path, files, package="snapproj")
    p = load_project(tmp_path)
    series = plan(p, p.experiments["rate_ok"], "dev")
    before = snapshot(p, series)
    (tmp_path / alt / "judge_alt.prompt.md").write_text("Rate it, at length.\n")
    after = snapshot(p, series)
    assert before["flows_sha256"] != after["flows_sha256"]
    assert {k for k in before if before[k] != after[k]} == {"flows_sha256", "experiment_folder_sha256"}


def test_user_code_gets_its_hinted_types_and_an_exact_scalar_as_it_is():
    import datetime

    from pytest_aqven.project import typesmodule

    def label(text: str, ratio: float, when: datetime.date, count: int, anything) -> None: ...
    text = "a review " * 3
    out = typesmodule.typed_arguments(label, {"text": text, "ratio": 3, "when": "2026-12-02", "count": 4,
                                              "anything": "2026-12-02"})
    assert out == {"text": text, "ratio": 3.0, "when": datetime.date(2026, 12, 2), "count": 4,
                   "anything": "2026-12-02"}
    assert out["text"] is text and type(out["ratio"]) is float
    # an exact str or int is given as it is, with no adapter made for it; 3 for a float is still validated
    assert {key[1] for key in typesmodule._ADAPTERS if key[0] == id(label)} == {"ratio", "when"}
