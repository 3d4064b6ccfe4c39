"""Seeded fuzzing of `aqven check`: mutate the files of a valid project (delete, duplicate and retype
keys, rename references, swap values, break the YAML, drop or copy files) and require that every run
ends with its count line and exit 0 or 1: never a traceback, never a checker bug (E_CHECK_INTERNAL)."""
from __future__ import annotations

import contextlib
import copy
import io
import os
import random
import re

import pytest
import yaml

from pytest_aqven.cli import main

from .showcase import Showcase

SEED = int(os.environ.get("AQVEN_FUZZ_SEED", "20240611"))     # another seed explores further
MUTATIONS = 1200
COUNT_LINE = re.compile(r"^errors: \d+, warnings: \d+$")
BREAKERS = [": :", "[", "]", "{", "&anchor ", "*alias", "!!python/object:os.system ", "---\n", "\t", "- ", "? ",
            "'", '"', "%YAML 1.1\n", "\x00", "key: value: other", "|\n  block", "\ufeff"]
ODD_VALUES = [None, True, 0, -1, 3.5, "", "x" * 70, [], {}, ["a", "b"], {"k": "v"}, "$", "$input.", "$x.out",
              "@root.nowhere:fn", "UPPER", "with space", 10**12, "Text[]?", "../../etc/passwd"]


def _paths(data, prefix=()):
    """Every key path of a document, mapping keys and list items alike."""
    yield prefix
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, prefix + (i,))


def _get(data, path):
    for seg in path:
        data = data[seg]
    return data


def _strings(data):
    return [v for p in _paths(data) for v in [_get(data, p)] if isinstance(v, str)]


class Mutator:
    def __init__(self, rng: random.Random, showcase: Showcase, files: list[str], vocabulary: list[str]):
        self.rng = rng
        self.showcase = showcase
        self.files = files
        self.vocabulary = vocabulary       # every string of the valid project: ids, refs, types

    def mutate(self, rel: str, text: str) -> tuple[str, str]:
        """(new text, what was done) for one file."""
        rng = self.rng
        if not rel.endswith(".yaml"):
            return text[: rng.randrange(len(text) + 1)] + rng.choice(BREAKERS), "cut a text file"
        kind = rng.choice(["delete", "retype", "rename", "swap", "duplicate", "break", "break", "structure"])
        if kind == "break":
            at = rng.randrange(len(text) + 1)
            return text[:at] + rng.choice(BREAKERS) + text[at:], f"inserted YAML breaker at {at}"
        if kind == "duplicate":
            lines = text.splitlines(keepends=True)
            i = rng.randrange(len(lines))
            return "".join(lines[: i + 1] + [lines[i]] + lines[i + 1:]), f"duplicated line {i + 1}"
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError:           # already broken by a stacked mutation: break it some more
            return text + rng.choice(BREAKERS), "broke a broken file"
        paths = [p for p in _paths(data) if p]
        if not paths:
            return text + rng.choice(BREAKERS), "broke an empty document"
        path = rng.choice(paths)
        parent = _get(data, path[:-1])
        if kind == "delete":
            del parent[path[-1]]
        elif kind == "retype":
            parent[path[-1]] = rng.choice(ODD_VALUES)
        elif kind == "rename":
            strings = [p for p in paths if isinstance(_get(data, p), str)]
            if strings:
                path = rng.choice(strings)
                old = _get(data, path)
                new = rng.choice([old + "x", old[:-1], rng.choice(self.vocabulary), old.upper(), old.replace("_", "")])
                _get(data, path[:-1])[path[-1]] = new
        elif kind == "swap":
            other = rng.choice(paths)
            try:
                a, b = _get(data, path), _get(data, other)
                parent[path[-1]], _get(data, other[:-1])[other[-1]] = b, a
            except (KeyError, IndexError, TypeError):
                pass
        else:  # structure: a key moves to another mapping, or a new unknown key appears
            value = copy.deepcopy(parent[path[-1]])      # a copy: a mapping moved into itself is no cycle
            target = _get(data, rng.choice([p for p in _paths(data) if isinstance(_get(data, p), (dict, list))] or [()]))
            if isinstance(target, dict):
                target[rng.choice([str(path[-1]), "agents", "arm", "unknown_key"])] = value
            elif isinstance(target, list):
                target.append(value)
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True), f"{kind} at {path}"

    def step(self) -> tuple[str, str | None, str]:
        """Apply one mutation; return (file, its old text or None if it did not exist, description)."""
        rng = self.rng
        rel = rng.choice([f for f in self.files if self.showcase.path(f).exists()])
        path = self.showcase.path(rel)
        old = path.read_text(encoding="utf-8")
        roll = rng.random()
        if roll < 0.05 and rel != "aqven.yaml":      # without aqven.yaml there is no project: exit 2 by design
            path.unlink()
            return rel, old, f"deleted {rel}"
        if roll < 0.08:
            target = rng.choice(["experiments/reply_look/arms/a/flow.yaml", "experiments/reply_look/nodes/polish/polish.node.yaml",
                                 "flows/support_case/nodes/extra/extra.node.yaml", "experiments/reply_look/prompts/p.md",
                                 "datasets/copy.yaml", "agents/copy.yaml", "types/records/copy.yaml",
                                 "experiments/reply_look/flows/support_case/flow.yaml"])
            dest = self.showcase.path(target)
            existed = dest.read_text(encoding="utf-8") if dest.exists() else None
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(old, encoding="utf-8")
            return target, existed, f"copied {rel} to {target}"
        new, what = self.mutate(rel, old)
        path.write_text(new, encoding="utf-8")
        return rel, old, f"{rel}: {what}"


def run_check(root) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(["check", str(root)])
    return code, out.getvalue()


ALTERNATIVES = {   # a fourth experiment, so that mutations reach the use factor, alternatives and local flows
    "experiments/reply_alternatives/experiment.yaml": """\
apiVersion: "aqven/v1"
kind: "Experiment"
description: "A shorter polish keeps the reply as good"
subject:
  flow: "support_case"
  from: "polish"
  to: "polish"
varies:
  what: "use"
  nodes:
  - "polish"
cases:
  dataset: "support_case_cases"
variants:
- id: "as_written"
- id: "short"
  nodes:
    polish: "short_polish"
question:
  kind: "compare"
  baseline: "as_written"
  candidate: "short"
  primary: "success_rate"
""",
    "experiments/reply_alternatives/nodes/short_polish/short_polish.node.yaml": """\
apiVersion: "aqven/v1"
kind: "Node"
node: "llm"
description: "A shorter polish"
agent: "mistral"
inference: "polish"
in:
- name: "draft"
  from: "$draft.out.reply"
- name: "resolution"
  from: "$resolve.out.resolution"
- name: "locale"
  from: "$prepare.out.locale"
""",
}


@pytest.mark.slow
def test_fuzzed_projects_never_crash_the_checker(tmp_path):
    showcase = Showcase(tmp_path / "lumen")
    for rel, text in ALTERNATIVES.items():
        showcase.write(rel, text)
    assert run_check(showcase.root) == (0, "errors: 0, warnings: 0\n")
    files = sorted(p.relative_to(showcase.root).as_posix() for p in showcase.root.rglob("*")
                   if p.is_file() and p.suffix in (".yaml", ".md"))
    vocabulary = sorted({s for rel in files if rel.endswith(".yaml")
                         for s in _strings(yaml.safe_load(showcase.read(rel)))}
                        | {"use", "prompt", "flow", "agent", "look", "threshold", "compare", "short_polish"})
    rng = random.Random(SEED)
    mutator = Mutator(rng, showcase, files, vocabulary)
    tried, errors_seen = 0, set()
    for n in range(MUTATIONS):
        # one to three mutations stacked, then undone, so every run starts from the valid project
        undo = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            rel, old, what = mutator.step()
            undo.append((rel, old, what))
        tried += len(undo)
        code, out = run_check(showcase.root)
        story = f"seed {SEED}, run {n}: " + "; ".join(w for _, _, w in undo)
        lines = out.splitlines()
        assert code in (0, 1), story + "\n" + out
        assert lines and COUNT_LINE.match(lines[-1]), story + "\n" + out
        assert "Traceback" not in out and "E_CHECK_INTERNAL" not in out, story + "\n" + out
        errors_seen |= {line.split()[2] for line in lines if " error E_" in line}
        for rel, old, _ in reversed(undo):
            path = showcase.path(rel)
            if old is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(old, encoding="utf-8")
    print(f"fuzz seed {SEED}: {tried} mutations in {MUTATIONS} runs, {len(errors_seen)} error codes reached")
    assert tried >= 1000
    assert run_check(showcase.root) == (0, "errors: 0, warnings: 0\n")     # the undo really restored it
    assert len(errors_seen) >= 15, sorted(errors_seen)                      # the mutations reach many rules
