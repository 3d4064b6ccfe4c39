"""The one builder of the tests' AQVEN projects: `write_files` writes any project's files into a folder (every
file visible in the test that uses it); `write` and `make` give the small rate project below."""
from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

PROVIDER = '''
import hashlib
from pytest_aqven import ModelRequest, ModelResponse, ProviderError


def complete(request: ModelRequest) -> ModelResponse:
    """Answers from the case text: 'ok', 'wrong', 'refuse', 'cut', 'crash', 'junk', 'flaky'."""
    text = next(m.content for m in request.messages if m.role == "user")
    a = request.attempt
    if "crash" in text:
        raise ProviderError("provider_error", "HTTP 503 from the test provider")
    if "refuse" in text:
        return ModelResponse(refusal="I cannot help with that", finish_reason="refusal")
    if "cut" in text:
        return ModelResponse(text='{"label": "po', finish_reason="length")
    if "junk" in text:
        return ModelResponse(text="not json at all", tokens_in=10, tokens_out=3, cost_usd=0.0001)
    label = "positive"
    if "wrong" in text:
        label = "negative"
    if "flaky" in text:
        draw = hashlib.sha256(f"{a.case}|{a.repeat}|{a.variant}".encode()).digest()[0]
        label = "negative" if draw < 77 else "positive"
    return ModelResponse(text='{"label": "%s"}' % label, tokens_in=20, tokens_out=5, cost_usd=0.0002,
                         latency_ms=100.0)
'''

FILES = {
    "aqven.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Project"
        description: "A test project"
        package: "{package}"
        providers:
        - id: "fake"
          kind: "code"
          run: "@root.provider:complete"
          data_policy:
            allows_pii: false
            allows_sensitive: false
            retention: "zero"
        ''',
    "provider.py": PROVIDER,
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
    "agents/bot.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Agent"
        description: "The test model"
        model: "fake:bot-1"
        ''',
    "flows/rate/flow.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "Clean a review, then rate it"
        input: "Review"
        output: "Rating"
        order:
        - "clean"
        - "judge"
        returns:
        - name: "label"
          from: "$judge.out.label"
        ''',
    "flows/rate/nodes/clean/clean.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Strip the text"
        run: "clean"
        in:
        - name: "text"
          from: "$input.text"
        out:
        - name: "text"
          type: "Text"
        ''',
    "flows/rate/nodes/clean/clean.py": '''
        def clean(text: str) -> dict:
            if "bug" in text:
                raise RuntimeError("a bug in the flow's own code")
            return {"text": text.strip()}
        ''',
    "flows/rate/nodes/judge/judge.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "llm"
        description: "Rate the review"
        agent: "bot"
        in:
        - name: "text"
          from: "$clean.out.text"
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


def dataset(cases: list[tuple[str, str]], name: str = "reviews") -> dict[str, str]:
    """cases: (case name, review text); every expected label is positive."""
    lines = ['apiVersion: "aqven/v1"', 'kind: "Dataset"', 'flow: "rate"', "cases:"]
    for case, text in cases:
        lines += [f'- name: "{case}"', "  inputs:", f'    text: "{text}"', "  expected_output:",
                  '    label: "positive"']
    return {f"datasets/{name}.yaml": "\n".join(lines) + "\n"}


def experiment(name: str = "rate_ok", *, above: float = 0.5, margin: float = 0.0, cases: int | None = None,
               repeats: int = 2, extra: str = "") -> dict[str, str]:
    plan = f"plan:\n  repeats: {repeats}\n" + (f"  cases: {cases}\n" if cases else "")
    text = f'''apiVersion: "aqven/v1"
kind: "Experiment"
description: "The rater labels reviews right in more than {above:g} of attempts"
failure_mode: "mislabel"
subject:
  flow: "rate"
cases:
  dataset: "reviews"
variants:
- id: "bot"
checks:
- id: "label"
  kind: "binary"
  use: "expected"
question:
  kind: "threshold"
  metric: "label"
  above: {above}
  margin: {margin}
{plan}{extra}'''
    return {f"experiments/{name}/experiment.yaml": text}


def write_files(root: Path, files: Mapping[str, str | dict], package: str | None = None) -> Path:
    """Each file under root: a text dedented, without its leading newlines, "{package}" in it made `package`
    (when given); a dict dumped as YAML in its own key order."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            text = textwrap.dedent(content).lstrip("\n")
            text = text if package is None else text.replace("{package}", package)
        else:
            text = yaml.safe_dump(content, sort_keys=False, allow_unicode=True)
        path.write_text(text, encoding="utf-8")
    return root


def write(root: Path, files: Mapping[str, str | dict], package: str = "testproj") -> Path:
    """The rate project (FILES) with `files` added or replacing its own."""
    return write_files(root, {**FILES, **files}, package)


def make(root, case_list: int | list[tuple[str, str]] = 24, *, package: str = "testproj",
         experiments: Iterable[str] | Mapping[str, dict] = ("rate_ok",), files: Mapping[str, str | dict] | None = None,
         **exp) -> Path:
    """The rate project in root (a folder, or a pytester: its folder proj) with a dataset of `case_list` ("fine"
    cases, or (name, text) pairs) and `experiments`: names that all take the keywords `exp` of `experiment`, or
    name -> its own keywords; `files` last."""
    root = root.path / "proj" if hasattr(root, "path") else root
    assert not (exp and isinstance(experiments, Mapping)), "the keywords go with each experiment's name"
    exps = experiments if isinstance(experiments, Mapping) else {name: exp for name in experiments}
    written = dataset(cases(case_list) if isinstance(case_list, int) else case_list)
    for name, kw in exps.items():
        written.update(experiment(name, **kw))
    return write(root, {**written, **(files or {})}, package)


def cases(n: int, text: str = "fine", prefix: str = "case") -> list[tuple[str, str]]:
    return [(f"{prefix}_{i:02d}", text) for i in range(n)]
