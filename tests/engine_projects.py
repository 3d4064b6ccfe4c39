"""Flows written for engine tests from Python dicts: one project folder per test, every file visible here."""
from __future__ import annotations

import asyncio
from pathlib import Path

from pytest_aqven.engine.runner import Assembly, Runner
from pytest_aqven.project.loader import load_project
from pytest_aqven.providers import registry

from . import projects

PROJECT = {"apiVersion": "aqven/v1", "kind": "Project", "description": "Engine tests",
           "providers": [{"id": "fake", "kind": "code", "run": "@root.provider:complete",
                          "data_policy": {"allows_pii": False, "allows_sensitive": False, "retention": "zero"}}]}


def record(description: str, **fields: str) -> dict:
    return {"apiVersion": "aqven/v1", "kind": "Type", "type": "record", "description": description,
            "fields": [{"name": n, "type": t} for n, t in fields.items()]}


def node(kind: str, description: str = "a node", **fields) -> dict:
    body = {"apiVersion": "aqven/v1", "kind": "Node", "node": kind, "description": description}
    for key, value in fields.items():
        body[key.rstrip("_")] = value
    return body


def flow(order: list[str], returns: dict[str, str], input: str = "Ask", output: str = "Answer", **extra) -> dict:
    return {"apiVersion": "aqven/v1", "kind": "Flow", "description": "a flow", "input": input, "output": output,
            "order": order, "returns": [{"name": k, "from": v} for k, v in returns.items()], **extra}


def agent(model: str = "fake:bot", **extra) -> dict:
    return {"apiVersion": "aqven/v1", "kind": "Agent", "description": "an agent", "model": model, **extra}


def inference(ins: dict[str, str], outs: dict[str, str], **extra) -> dict:
    return {"apiVersion": "aqven/v1", "kind": "Inference", "description": "an inference",
            "in": [{"name": n, "type": t} for n, t in ins.items()],
            "out": [{"name": n, "type": t} for n, t in outs.items()], **extra}


def write(root: Path, files: dict[str, object], package: str) -> Path:
    """`files` over a project with the types Ask and Answer and one code provider that raises (a test that
    calls a model writes its own provider.py)."""
    return projects.write_files(root, {
        "aqven.yaml": {**PROJECT, "package": package}, "types/ask.yaml": record("A question", text="Text"),
        "types/answer.yaml": record("An answer", text="Text"),
        "provider.py": "def complete(request):\n    raise RuntimeError('no model in this test')\n", **files}, package)


def load(root: Path):
    project = load_project(root)
    assert project.diagnostics == [], [str(d) for d in project.diagnostics]
    return project


def run(project, flow_id: str, inputs, *, start=None, end=None, node_outputs=None, context=None, **assembly):
    providers = {s.id: registry.build(s, package=project.package, root=project.root) for s in project.spec.providers}
    plan = Assembly(project.flows[flow_id], start=start, end=end, **assembly)
    return asyncio.run(Runner(project, providers).run(plan, inputs, context or {}, node_outputs))
