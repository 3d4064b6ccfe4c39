"""Diagnostics are honest and scoped: files that are not UTF-8 and YAML nested without end are
diagnostics (never a traceback), an expected_output the subject cannot produce is an error where it
is written, a node that did not load causes nothing else, and a collection error shows what stops
that experiment, each line once, while the other experiments still run."""
from __future__ import annotations

import time

import pytest

from pytest_aqven.api.check import check_project, check_root
from pytest_aqven.check.scope import collection_errors
from pytest_aqven.diagnostics import render_text
from pytest_aqven.project.loader import load_project

from ..compat_project import write_project
from .test_compat import edit


@pytest.mark.parametrize("rel, code", [
    ("flows/repair/nodes/draft/draft.prompt.md", "E_FILE_UNREADABLE"),
    ("flows/repair/nodes/triage/triage.variants/tone/spoken.md", "E_FILE_UNREADABLE"),
    ("datasets/drafts.yaml", "E_FILE_UNREADABLE"),
    ("code/rules.py", "E_CODE_REF_UNRESOLVED"),
])
def test_a_file_that_is_not_utf8_is_a_diagnostic(spoke, rel, code):
    (spoke / rel).write_bytes("Réparer".encode("latin-1") + b"\n")
    found = check_root(spoke)
    assert [d.code for d in found] == [code], render_text(found)
    assert "UTF-8" in found[0].message or "SyntaxError" in found[0].message


@pytest.mark.parametrize("text", [
    "cases:\n" + "".join("  " * i + "- \n" for i in range(1, 1000)),        # block style, depth 1,000
    "cases: " + "[" * 200_000 + "\n",                                        # a 200 KB line of brackets
], ids=["depth-1000", "200KB-brackets"])
def test_deeply_nested_yaml_is_a_diagnostic_within_a_second(spoke, text):
    (spoke / "datasets/drafts.yaml").write_text('apiVersion: "aqven/v1"\nkind: "Dataset"\n' + text, encoding="utf-8")
    start = time.process_time()         # CPU, not wall: a loaded machine stretches wall time, not this
    found = check_root(spoke)
    assert time.process_time() - start < 5          # well under a second; a quadratic parse takes minutes
    assert [d.code for d in found] == ["E_YAML_DEPTH"], render_text(found)
    assert found[0].file == "datasets/drafts.yaml" and found[0].line >= 3 and found[0].column is not None


def test_expected_output_that_the_subject_cannot_produce_is_an_error_at_its_position(spoke):
    edit(spoke, "datasets/repair_tickets.yaml", 'expected_output: {action: "advise"}', 'expected_output: {action: "shrug"}')
    edit(spoke, "datasets/drafts.yaml", 'expected_output: {reply: "We refund it."}', "expected_output: {reply: 5}")
    found = check_root(spoke)
    assert [d.render().splitlines()[0] for d in sorted(found, key=lambda d: d.sort_key())] == [
        "datasets/drafts.yaml:9:21: error E_EXPECTED_INVALID cases[1].expected_output.reply: experiment draft_writers: "
        "case refund_gift: expected_output does not fit the output Draft of flow drafting: reply: input should be a "
        "valid string",
        "datasets/repair_tickets.yaml:31:21: error E_EXPECTED_INVALID cases[1].expected_output.action: experiment "
        "repair_look: case saddle_height: expected_output does not fit the output Answer of flow repair: action: "
        "input should be 'fix', 'refund' or 'advise'",
    ]


def test_a_node_that_did_not_load_causes_nothing_else(spoke):
    """The variant slot `write` exists but its spec is invalid: one diagnostic, no E_FACTOR_NODE_UNKNOWN.
    aqven.spec's llm() validates the node as it builds it, as AQVEN's does: build() raises at that line."""
    edit(spoke, "experiments/draft_writers/flows/drafting/flow.py", 'agent="writer"', 'agent="Writer!"')
    found = check_root(spoke)
    assert [d.code for d in found] == ["E_FLOW_PY_INVALID"]
    assert "build() raised BuilderError: write: spec does not pass model LlmNode" in found[0].message


def test_collection_errors_are_the_experiments_own_and_those_it_depends_on(spoke):
    edit(spoke, "flows/repair/nodes/approve/approve.node.yaml", '"$lookup.out.part"', '"$lookup.out.parts"')
    project = load_project(spoke)
    project_level, own = check_project(project)
    look = collection_errors(project, project.experiments["repair_look"], project_level, own["repair_look"])
    drafts = collection_errors(project, project.experiments["draft_writers"], project_level, own["draft_writers"])
    assert [d.code for d in look] == ["E_REF_FIELD_UNKNOWN"]
    assert drafts == []          # it reads the draft inference of flow repair, not the approve node


def test_in_pytest_an_unrelated_error_does_not_stop_an_experiment(pytester):
    root = write_project(pytester.path / "spoke")
    edit(root, "flows/repair/nodes/approve/approve.node.yaml", '"$lookup.out.part"', '"$lookup.out.parts"')
    result = pytester.runpytest("spoke", "-p", "no:cacheprovider", "-p", "no:benchmark")
    result.assert_outcomes(errors=1, passed=10)  # draft_writers, brake_panel: 2 cases x 2 variants, a verdict each
    out = result.stdout.str()
    assert out.count("approve.node.yaml:20:3: error E_REF_FIELD_UNKNOWN") == 1
    assert "Traceback" not in out
