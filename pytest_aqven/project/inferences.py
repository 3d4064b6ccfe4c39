"""Where an inference named by id is found (the folders a node or a judge looks in, level by level), its
file read, and an inference with an agent run as a one-node flow (a judge, a subagent)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..diagnostics import Diagnostic
from . import specs
from .model import Experiment, Flow, Node, Project
from .paths import PROJECT_FILE
from .reading import read_spec
from .yamlpos import YamlDoc


def find_inference(stem: str, levels: list[Path]) -> list[Path]:
    """The files of an inference named by id at the first of `levels` (folders, each searched with its
    subfolders) that has one; two or more are ambiguous (a judge's is an error of aqven check; a node takes
    the first in path order, as before). The module root as a level is the project outside experiments/:
    another experiment's folder is never searched. findings/ and hidden folders never are."""
    for folder in levels:
        if not folder.is_dir():
            continue
        project = (folder / PROJECT_FILE).is_file()
        found = sorted(p for p in folder.rglob(f"{stem}.inference.yaml")
                       if _searched(p.relative_to(folder).parts[:-1], project))
        if found:
            return found
    return []


def _searched(parts: tuple[str, ...], project: bool) -> bool:
    if "findings" in parts or any(part.startswith(".") for part in parts):
        return False
    return not (project and parts[:1] == ("experiments",))


def level_names(project: Project, levels: list[Path]) -> str:
    """The folders an inference was looked up in, as messages name them."""
    return ", ".join(dict.fromkeys("the project outside experiments/" if p == project.root else project.rel(p)
                                   for p in levels))


def judge_levels(project: Project, experiment: Experiment) -> list[Path]:
    """Where a judge check of `experiment` finds its inference, as a node finds its files: the experiment's
    folder (its nodes, prompts and local flows), then the subject flow's (a project flow), then the project
    outside experiments/. Never another experiment's folder."""
    subject = experiment.spec.subject.flow if experiment.spec is not None else None
    flow = project.flows.get(subject) if subject is not None and subject not in experiment.flows else None
    return [experiment.folder, *([flow.folder] if flow is not None else []), project.root]


class InferenceAmbiguous(LookupError):
    def __init__(self, stem: str, found: list[Path], root: Path) -> None:
        self.stem, self.found = stem, found
        names = ", ".join(p.relative_to(root).as_posix() for p in found)
        super().__init__(f"inference {stem} has {len(found)} files at one level, {names}: which one is meant is "
                         "not clear")


def inference_path(project: Project, stem: str, levels: list[Path] | None = None, strict: bool = False
                   ) -> Path | None:
    """The file of an inference named by id, in `levels` (default: the project outside experiments/, as a
    subagent's, which may sit beside its agent).
    `strict` (an experiment's judge): InferenceAmbiguous when its level has two; else the first in path order."""
    found = find_inference(stem, levels if levels is not None else [project.root])
    if strict and len(found) > 1:
        raise InferenceAmbiguous(stem, found, project.root)
    return found[0] if found else None


def load_inference(project: Project, stem: str, sink: list[Diagnostic], levels: list[Path] | None = None,
                   strict: bool = False) -> tuple[Any, YamlDoc | None]:
    """An inference by id (see inference_path), or (None, None)."""
    path = inference_path(project, stem, levels, strict)
    if path is None:
        return None, None
    return read_spec(path, project.root, specs.InferenceSpec, f"inference {stem}", sink)


def inference_flow(project, flow_id: str, node_id: str, agent: str, stem: str, description: str,
                   returns: list[dict] | None = None, levels=None, strict: bool = False):
    """An inference with an agent as a one-node flow of an llm node (a judge, a subagent), so it runs exactly
    as any llm node: prompt, output mode, retries, provider, pricing and trace. Its file is looked up in
    `levels` (inference_path). LookupError: what is missing, or two files at one level."""
    found = inference_path(project, stem, levels, strict)
    if found is None:
        where = level_names(project, levels or [project.root])
        raise LookupError(f"inference {stem} has no file {stem}.inference.yaml in {where}")
    sink: list = []
    inference, doc = load_inference(project, stem, sink, levels, strict)
    if inference is None or doc is None:      # (never one alone)
        raise LookupError(f"inference {stem} does not load: " + "; ".join(d.message for d in sink))
    prompt = found.parent / f"{stem}.prompt.md"
    if not prompt.is_file() and inference.prompt is None:
        raise LookupError(f"inference {stem} has no prompt file {prompt.name}")
    llm = specs.LlmNode.model_validate({
        "apiVersion": "aqven/v1", "kind": "Node", "node": "llm", "description": description, "agent": agent,
        "inference": stem, "in": [{"name": f.name, "from": f"$input.{f.name}"} for f in inference.in_]})
    node = Node(node_id, llm, doc, found, inference, doc, inference_path=found,
                prompt_path=prompt if prompt.is_file() else None,
                scope=list(levels) if levels is not None else [project.root])
    flow_spec = specs.FlowSpec.model_validate({
        "apiVersion": "aqven/v1", "kind": "Flow", "description": description, "input": "Any", "output": "Any",
        "order": [node_id],
        "returns": returns or [{"name": f.name, "from": f"${node_id}.out.{f.name}"} for f in inference.out]})
    return Flow(flow_id, flow_spec, doc, found.parent, {node_id: node})


def project_inferences(project: Project) -> dict[str, specs.InferenceSpec]:
    """Every inference of the project by id (its file stem): those the nodes read, then any other file."""
    found: dict[str, specs.InferenceSpec] = {}
    flows = [*project.flows.values(), *(f for e in project.experiments.values() for f in e.flows.values())]
    nodes = [n for f in flows if not f.doc.file.endswith("flow.py") for n in f.nodes.values()]
    nodes += [n for e in project.experiments.values() for n in e.alternatives.values()]
    for node in nodes:
        if node.inference is not None and node.inference_path is not None:
            found.setdefault(node.inference_path.name[: -len(".inference.yaml")], node.inference)
    for path in sorted(project.root.glob("**/*.inference.yaml")):
        stem = path.name[: -len(".inference.yaml")]
        if stem not in found and not any(part.startswith(".") for part in path.relative_to(project.root).parts):
            spec, _ = load_inference(project, stem, [])
            if spec is not None:
                found[stem] = spec
    return found
