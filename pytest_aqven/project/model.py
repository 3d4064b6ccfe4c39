"""The loaded project: its flows, nodes, datasets, entities and experiments, as the loader reads them
(loader.py) and everything above reads them."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..diagnostics import Diagnostic
from . import specs
from .paths import PROJECT_FILE
from .types import Registry
from .yamlpos import YamlDoc, load_yaml


@dataclass
class Node:
    id: str                          # local id (file stem)
    spec: Any                        # a NodeSpec
    doc: YamlDoc
    path: Path                       # the .node.yaml
    inference: specs.InferenceSpec | None = None
    inference_doc: YamlDoc | None = None
    inference_path: Path | None = None    # the .inference.yaml (its code refs resolve beside it)
    prompt_path: Path | None = None
    scope: list[Path] = field(default_factory=list)   # where an inference it names is found after its own folder

    @property
    def levels(self) -> list[Path]:
        """Its own folder, then its scope: where the inferences it names (its own, its checks' judges) are found."""
        return [self.path.parent, *self.scope]

    @property
    def kind(self) -> str:
        return self.spec.node

    @cached_property
    def py_path(self) -> Path:      # once per node: every attempt's code reference is looked up by it
        return self.path.parent / (self.id + ".py")

    @property
    def inference_py_path(self) -> Path:
        """Where a bare function name of the inference (its checks, its prompt) lives: beside its file."""
        if self.inference_path is None:
            return self.py_path
        return self.inference_path.parent / (self.inference_path.name[: -len(".inference.yaml")] + ".py")


@dataclass
class Flow:
    id: str
    spec: specs.FlowSpec
    doc: YamlDoc
    folder: Path
    nodes: dict[str, Node] = field(default_factory=dict)   # every node, top-level and nested, by local id
    local_to: str | None = None                             # experiment id for a local flow
    unreadable: set[str] = field(default_factory=set)       # node ids whose file exists but did not load


@dataclass
class Dataset:
    id: str
    spec: specs.DatasetSpec
    doc: YamlDoc


@dataclass
class Entity:
    spec: Any
    doc: YamlDoc


@dataclass
class Experiment:
    id: str
    folder: Path
    doc: YamlDoc | None = None
    spec: specs.ExperimentSpec | None = None
    flows: dict[str, Flow] = field(default_factory=dict)          # local flows
    alternatives: dict[str, Node] = field(default_factory=dict)   # nodes/<alt>/ for `use`
    prompts: dict[str, Path] = field(default_factory=dict)        # prompts/<name>.md
    diagnostics: list[Diagnostic] = field(default_factory=list)
    unreadable: dict[str, set[str]] = field(default_factory=lambda: {"flow": set(), "alternative": set()})

    @property
    def file(self) -> Path:
        return self.folder / "experiment.yaml"


@dataclass
class RunnableExperiment(Experiment):
    """An experiment whose experiment.yaml loaded: what plans, runs, concludes and writes findings reads
    (`RunnableProject.experiment`). check/ reads any Experiment, broken or not."""
    doc: YamlDoc
    spec: specs.ExperimentSpec


class NotRunnable(ValueError):
    """A project or experiment whose file did not load was asked to run (aqven check says why)."""


@dataclass
class Project:
    root: Path
    spec: specs.ProjectSpec | None = None
    doc: YamlDoc | None = None
    types: Registry = field(default_factory=lambda: Registry({}))
    type_docs: dict[str, tuple[Any, YamlDoc]] = field(default_factory=dict)   # type id -> (spec, its file)
    agents: dict[str, Entity] = field(default_factory=dict)
    tools: dict[str, Entity] = field(default_factory=dict)
    mcp_servers: dict[str, Entity] = field(default_factory=dict)
    datasets: dict[str, Dataset] = field(default_factory=dict)
    flows: dict[str, Flow] = field(default_factory=dict)
    experiments: dict[str, Experiment] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)   # project-level (not of one experiment)
    # ids whose file exists but did not load (its own diagnostic says why): no "unknown" cascades
    unreadable: dict[str, set[str]] = field(default_factory=lambda: {"type": set(), "agent": set(), "dataset": set(),
                                                                      "flow": set(), "tool": set(),
                                                                      "mcp_server": set()})
    loaded_ns: int | None = None      # when loading began: a parsed file modified since may differ from its specs

    @property
    def package(self) -> str:
        return self.spec.package if self.spec else ""

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def flow_for(self, experiment: Experiment, flow_id: str) -> Flow | None:
        """A local flow of the experiment first, then a project flow (seed rule)."""
        return experiment.flows.get(flow_id) or self.flows.get(flow_id)

    def runnable_experiment(self, experiment_id: str) -> RunnableExperiment:
        """The experiment to plan, run or decide; KeyError: no such experiment."""
        experiment = self.experiments[experiment_id]
        if not isinstance(experiment, RunnableExperiment):
            raise NotRunnable(f"experiment {experiment_id}: experiment.yaml does not load (aqven check says why)")
        return experiment


@dataclass
class RunnableProject(Project):
    """A project whose aqven.yaml loaded (`runnable`): what runs its experiments reads (providers, research)."""
    spec: specs.ProjectSpec
    doc: YamlDoc


def package_of(root: Path) -> str | None:
    """The package aqven.yaml names, read quickly (no project load); None when it does not read."""
    try:
        data = load_yaml(Path(root) / PROJECT_FILE, Path(root)).data
    except Exception:      # aqven check reports what does not read
        return None
    package = data.get("package") if isinstance(data, dict) else None
    return package if isinstance(package, str) else None


def runnable(project: Project) -> RunnableProject:
    """The project, to run its experiments."""
    if not isinstance(project, RunnableProject):
        raise NotRunnable(f"{PROJECT_FILE} does not load (aqven check says why)")
    return project


def documents(project: Project) -> Iterator[YamlDoc]:
    """Every parsed document of the project's code-bearing files (aqven.yaml, tools, MCP servers, agents, flows,
    nodes, inferences, experiments with their local flows and alternatives); not types or datasets."""
    def flow_docs(flow: Flow) -> Iterator[YamlDoc]:
        yield flow.doc
        for node in flow.nodes.values():
            yield node.doc
            if node.inference_doc is not None:
                yield node.inference_doc

    if project.doc is not None:
        yield project.doc
    for entities in (project.tools, project.mcp_servers, project.agents):
        for entity in entities.values():
            yield entity.doc
    for flow in project.flows.values():
        yield from flow_docs(flow)
    for experiment in project.experiments.values():
        if experiment.doc is not None:
            yield experiment.doc
        for flow in experiment.flows.values():
            yield from flow_docs(flow)
        for node in experiment.alternatives.values():
            yield node.doc
            if node.inference_doc is not None:
                yield node.inference_doc
