"""Generated AQVEN projects for the benchmarks, written into a temporary folder.

`code` experiments run a flow of one trivial code node (the engine's own cost per attempt); `agents`
experiments vary the agent of one llm node answered at once by a function provider (several variants).
The dataset holds exactly `cases` cases of the half `split` (the other half is left out by name).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from pytest_aqven.experiments.split import split_of

PACKAGE = "benchproj"

FILES = {
    "aqven.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Project"
        description: "A generated benchmark project"
        package: "benchproj"
        providers:
        - id: "fake"
          kind: "code"
          run: "@root.provider:complete"
          data_policy:
            allows_pii: false
            allows_sensitive: false
            retention: "zero"
        ''',
    "provider.py": '''
        import hashlib
        import os
        import time

        from pytest_aqven import ModelRequest, ModelResponse

        DELAY = float(os.environ.get("BENCH_PROVIDER_SECONDS", "0"))


        def complete(request: ModelRequest) -> ModelResponse:
            a = request.attempt
            if DELAY:
                time.sleep(DELAY)
            draw = hashlib.sha256(f"{request.model}|{a.case}|{a.repeat}".encode()).digest()[0]
            label = "negative" if draw < 40 else "positive"
            return ModelResponse(text='{"label": "%s"}' % label, tokens_in=20, tokens_out=5, cost_usd=0.0002,
                                 latency_ms=50.0)
        ''',
    "types/records/review.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "A review"
        fields:
        - name: "text"
          type: "Text"
        ''',
    "types/records/rating.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "A rating"
        fields:
        - name: "label"
          type: "Label"
        ''',
    "types/enums/label.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "enum"
        description: "Sentiment"
        values:
        - value: "positive"
        - value: "negative"
        ''',
    "flows/echo/flow.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "One trivial code node"
        input: "Review"
        output: "Rating"
        order:
        - "label"
        returns:
        - name: "label"
          from: "$label.out.label"
        ''',
    "flows/echo/nodes/label/label.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Label the review"
        run: "label"
        in:
        - name: "text"
          from: "$input.text"
        out:
        - name: "label"
          type: "Label"
        ''',
    "flows/echo/nodes/label/label.py": '''
        def label(text: str) -> dict:
            return {"label": "negative" if text.endswith("7") else "positive"}
        ''',
    "flows/rate/flow.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "Rate a review with a model"
        input: "Review"
        output: "Rating"
        order:
        - "judge"
        returns:
        - name: "label"
          from: "$judge.out.label"
        ''',
    "flows/rate/nodes/judge/judge.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "llm"
        description: "Rate the review"
        agent: "a"
        in:
        - name: "text"
          from: "$input.text"
        ''',
    "flows/rate/nodes/judge/judge.inference.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Inference"
        description: "The sentiment of a review"
        in:
        - name: "text"
          type: "Text"
        out:
        - name: "label"
          type: "Label"
        ''',
    "flows/rate/nodes/judge/judge.prompt.md": "Rate the sentiment of the review.\n",
}
AGENT = '''
    apiVersion: "aqven/v1"
    kind: "Agent"
    description: "Model {name}"
    model: "fake:{name}-1"
    '''


def case_names(n: int, split: str = "dev", dataset: str = "reviews") -> list[str]:
    names, i = [], 0
    while len(names) < n:
        name = f"case_{i:06d}"
        if split_of(PACKAGE, dataset, name) == split:
            names.append(name)
        i += 1
    return names


def dataset_yaml(names: list[str], flow: str) -> str:
    lines = ['apiVersion: "aqven/v1"', 'kind: "Dataset"', f'flow: "{flow}"', "cases:"]
    for name in names:
        lines += [f'- name: "{name}"', "  inputs:", f'    text: "review {name}"', "  expected_output:",
                  '    label: "positive"']
    return "\n".join(lines) + "\n"


def experiment_yaml(kind: str, cases: int, repeats: int, variants: int) -> str:
    head = '''apiVersion: "aqven/v1"
kind: "Experiment"
description: "A generated benchmark experiment"
failure_mode: "mislabel"
'''
    checks = '''checks:
- id: "label"
  kind: "binary"
  use: "expected"
'''
    plan = f"plan:\n  cases: {cases}\n  repeats: {repeats}\n"
    if kind == "code":
        return head + f'''subject:
  flow: "echo"
cases:
  dataset: "reviews"
variants:
- id: "code"
{checks}question:
  kind: "threshold"
  metric: "label"
  above: 0.5
  margin: 0.05
{plan}'''
    ids = "abcdefgh"[:variants]
    vs = "".join(f'- id: "{v}"\n  nodes:\n    judge: "{v}"\n' for v in ids)
    return head + f'''subject:
  flow: "rate"
varies:
  what: "agent"
  nodes:
  - "judge"
cases:
  dataset: "reviews"
variants:
{vs}{checks}question:
  kind: "noninferior"
  baseline: "a"
  candidate: "b"
  primary: "label"
  margin: 0.1
{plan}'''


def write(root: Path, *, kind: str = "code", cases: int = 500, repeats: int = 20, variants: int = 1,
          experiments: int = 1, split: str = "dev") -> Path:
    """A project at `root` with `experiments` experiments (exp_000, ...) of the given shape."""
    files = dict(FILES)
    for name in "abcdefgh"[:max(variants, 2)]:
        files[f"agents/{name}.yaml"] = AGENT.replace("{name}", name)
    files["datasets/reviews.yaml"] = dataset_yaml(case_names(cases, split), "echo" if kind == "code" else "rate")
    for i in range(experiments):
        files[f"experiments/exp_{i:03d}/experiment.yaml"] = experiment_yaml(kind, cases, repeats, variants)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def plain_tests(path: Path, n: int) -> Path:
    """A file of `n` trivial parametrized tests: the baseline an attempt is compared with."""
    path.write_text(f"import pytest\n\n\n@pytest.mark.parametrize('i', range({n}))\n"
                    "def test_trivial(i):\n    assert i >= 0\n")
    return path
