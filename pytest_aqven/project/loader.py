"""Load an AQVEN project (standard layout) into specs with positions and diagnostics."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..diagnostics import Diagnostic, DiagnosticError
from . import coderefs, specs
from .paths import PROJECT_FILE, find_root, outside  # noqa: F401  (find_root: the loader's name for callers)
from .types import Registry, pascal
from .validate import validate
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

    def inferences(self) -> dict[str, specs.InferenceSpec]:
        """Every inference of the project by id (its file stem): those the nodes read, then any other file."""
        found: dict[str, specs.InferenceSpec] = {}
        flows = [*self.flows.values(), *(f for e in self.experiments.values() for f in e.flows.values())]
        nodes = [n for f in flows if not f.doc.file.endswith("flow.py") for n in f.nodes.values()]
        nodes += [n for e in self.experiments.values() for n in e.alternatives.values()]
        for node in nodes:
            if node.inference is not None and node.inference_path is not None:
                found.setdefault(node.inference_path.name[: -len(".inference.yaml")], node.inference)
        for path in sorted(self.root.glob("**/*.inference.yaml")):
            stem = path.name[: -len(".inference.yaml")]
            if stem not in found and not any(part.startswith(".") for part in path.relative_to(self.root).parts):
                spec, _ = load_inference(self, stem, [])
                if spec is not None:
                    found[stem] = spec
        return found


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


def documents(project: Project):
    """Every parsed document of the project's code-bearing files (aqven.yaml, tools, MCP servers, agents, flows,
    nodes, inferences, experiments with their local flows and alternatives); not types or datasets."""
    def flow_docs(flow: Flow):
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


OUTSIDE_HINT = "keep the file inside the module root: copy it in instead of linking to a file elsewhere"


def _read(path: Path, root: Path, annotation, what: str, sink: list[Diagnostic]):
    problem = outside(root, path)
    if problem is not None:       # a symlink out of the project: never read
        sink.append(Diagnostic("E_PATH_OUTSIDE", path.relative_to(root).as_posix(), (), f"{what}: the file {problem}",
                               None, None, OUTSIDE_HINT))
        return None, None
    try:
        doc = load_yaml(path, root)
    except DiagnosticError as exc:
        sink.extend(exc.diagnostics)
        return None, None
    spec, diags = validate(doc, annotation, what)
    sink.extend(diags)
    return spec, doc


def _yaml_files(folder: Path, pattern: str = "*.yaml") -> list[Path]:
    return sorted(p for p in folder.glob(pattern) if p.is_file()) if folder.is_dir() else []


def load_project(root: Path) -> Project:
    root = root.resolve()
    loaded_ns = time.time_ns()
    sink: list[Diagnostic] = []
    spec, doc = _read(root / PROJECT_FILE, root, specs.ProjectSpec, "project", sink)
    project = (Project if spec is None or doc is None else RunnableProject)(root, spec, doc, diagnostics=sink,
                                                                            loaded_ns=loaded_ns)

    type_specs: dict[str, Any] = {}
    for path in _yaml_files(root / "types", "**/*.yaml"):
        type_id = pascal(path.stem)
        spec, doc = _read(path, root, specs.TypeSpec, f"type {type_id}", sink)
        if spec is None:
            project.unreadable["type"].add(type_id)
        elif type_id in type_specs:
            sink.append(doc.diag("E_ID_DUPLICATE", (), f"type {type_id}: the id is already taken by "
                                 f"{project.type_docs[type_id][1].file}",
                                 "rename one of the two files: a type's id is the PascalCase of its file name"))
        else:
            type_specs[type_id] = spec
            project.type_docs[type_id] = (spec, doc)
    project.types = Registry(type_specs, project.unreadable["type"])
    if project.spec is not None:
        from .typesmodule import TypesModule
        coderefs.register_types(project.package, root, TypesModule(project.package, project))

    agent_files = _yaml_files(root / "agents") + [p for p in _yaml_files(root / "agents", "*/*.yaml")
                                                  if p.stem == p.parent.name]
    for path in agent_files:
        spec, doc = _read(path, root, specs.AgentSpec, f"agent {path.stem}", sink)
        if spec is not None:
            project.agents[path.stem] = Entity(spec, doc)
        else:
            project.unreadable["agent"].add(path.stem)

    for kind, where, annotation in (("tool", "tools", specs.ToolSpec), ("mcp_server", "mcp", specs.McpServerSpec)):
        entities = project.tools if kind == "tool" else project.mcp_servers
        for path in _yaml_files(root / where):
            spec, doc = _read(path, root, annotation, f"{kind.replace('_', ' ')} {path.stem}", sink)
            if spec is not None:
                entities[path.stem] = Entity(spec, doc)
            else:
                project.unreadable[kind].add(path.stem)

    for path in _yaml_files(root / "datasets"):
        spec, doc = _read(path, root, specs.DatasetSpec, f"dataset {path.stem}", sink)
        if spec is not None:
            project.datasets[path.stem] = Dataset(path.stem, spec, doc)
        else:
            project.unreadable["dataset"].add(path.stem)

    for folder in sorted(p for p in (root / "flows").glob("*") if p.is_dir()) if (root / "flows").is_dir() else []:
        flow = load_flow(folder, root, sink, package=project.package)
        if flow is not None:
            project.flows[flow.id] = flow
        elif _is_flow_folder(folder):
            project.unreadable["flow"].add(folder.name)

    exp_root = root / "experiments"
    for folder in sorted(p for p in exp_root.glob("*") if p.is_dir()) if exp_root.is_dir() else []:
        if (folder / "experiment.yaml").is_file():
            project.experiments[folder.name] = load_experiment(folder, root, project.package)
    return project


def _is_flow_folder(folder: Path) -> bool:
    return any((folder / name).is_file() for name in ("flow.yaml", "flow.yml", "flow.py"))


def _node_files(folder: Path) -> list[Path]:
    """Node files, each folder's own node (nodes/<id>/<id>.node.yaml) first: it keeps its id on a clash."""
    files = _yaml_files(folder, "**/*.node.yaml")
    return sorted(files, key=lambda p: (p.name != f"{p.parent.name}.node.yaml", p))


def load_flow(folder: Path, root: Path, sink: list[Diagnostic], local_to: str | None = None,
              package: str = "") -> Flow | None:
    path = next((folder / n for n in ("flow.yaml", "flow.yml") if (folder / n).is_file()), None)
    if path is None:
        if (folder / "flow.py").is_file():
            return load_python_flow(folder, root, sink, local_to, package)
        return None
    spec, doc = _read(path, root, specs.FlowSpec, f"flow {folder.name}", sink)
    if spec is None:
        return None
    flow = Flow(folder.name, spec, doc, folder, local_to=local_to)
    scope = _flow_scope(folder, root, local_to)
    for node_path in _node_files(folder / "nodes"):
        node = load_node(node_path, root, sink, scope)
        if node is None:
            flow.unreadable.add(node_path.name[: -len(".node.yaml")])
        elif _unique(node, flow.nodes, f"flow {flow.id}", sink):
            flow.nodes[node.id] = node
    return flow


def load_python_flow(folder: Path, root: Path, sink: list[Diagnostic], local_to: str | None,
                     package: str) -> Flow | None:
    """A flow written as flow.py: `build()` returns the flow (aqven.spec's builders). Its keys are
    validated like a flow.yaml's, and each node like a .node.yaml; diagnostics point at flow.py."""
    from .pyflow import PythonFlowError, flow_documents
    file = folder / "flow.py"
    rel = file.relative_to(root).as_posix()
    try:
        flow_data, nodes_data = flow_documents(folder.name, file, package, root)
    except PythonFlowError as exc:
        sink.append(Diagnostic("E_FLOW_PY_INVALID", rel, (), f"flow {folder.name}: {exc}", exc.line, None, exc.hint))
        return None
    spec, diags = validate(YamlDoc(rel, flow_data), specs.FlowSpec, f"flow {folder.name} (flow.py)")
    sink.extend(diags)
    if spec is None:
        return None
    flow = Flow(folder.name, spec, YamlDoc(rel, flow_data), folder, local_to=local_to)
    for node_id, data in nodes_data.items():
        doc = YamlDoc(rel, data)
        node_spec, diags = validate(doc, specs.NodeSpec, f"node {node_id} (flow.py)")
        sink.extend(diags)
        if node_spec is None:
            flow.unreadable.add(node_id)
            continue
        # a node of a flow.py has no folder of its own: it reads like nodes/<id>/ of the flow (top level)
        flow.nodes[node_id] = _node(node_id, node_spec, doc, folder / "nodes" / node_id / f"{node_id}.node.yaml",
                                    root, sink, _flow_scope(folder, root, local_to))
    return flow


def _unique(node: Node, nodes: dict[str, Node], owner: str, sink: list[Diagnostic]) -> bool:
    """Node ids are file stems and must be unique in a flow (or in the nodes/ of an experiment)."""
    first = nodes.get(node.id)
    if first is None:
        return True
    sink.append(node.doc.diag("E_ID_DUPLICATE", (), f"{owner}: node id {node.id} is already taken by {first.doc.file}",
                              "rename one of the two files: a node's id is its file name and is unique in a flow"))
    return False


def _flow_scope(folder: Path, root: Path, local_to: str | None) -> list[Path]:
    """Where a node of this flow finds an inference it names, after its own folder: the flow's folder, the
    experiment's for a local flow, then the rest of the project (outside experiments/)."""
    return [folder, *([root / "experiments" / local_to] if local_to else []), root]


def load_node(path: Path, root: Path, sink: list[Diagnostic], scope: list[Path] | None = None) -> Node | None:
    node_id = path.name[: -len(".node.yaml")]
    spec, doc = _read(path, root, specs.NodeSpec, f"node {node_id}", sink)
    if spec is None:
        return None
    return _node(node_id, spec, doc, path, root, sink, scope if scope is not None else [root])


def _node(node_id: str, spec: Any, doc: YamlDoc, path: Path, root: Path, sink: list[Diagnostic],
          scope: list[Path]) -> Node:
    node = Node(node_id, spec, doc, path, scope=scope)
    if isinstance(spec, specs.LlmNode):
        stem = spec.inference or node_id
        beside = path.parent / f"{stem}.inference.yaml"
        found = [beside] if beside.is_file() else find_inference(stem, scope)
        inf_path = found[0] if found else None
        if inf_path is None:
            sink.append(doc.diag("E_INFERENCE_UNKNOWN", ("inference",) if spec.inference else ("node",),
                                 f"node {node_id}: inference {stem} has no file {stem}.inference.yaml",
                                 f"create {stem}.inference.yaml beside the node"))
        else:
            node.inference_path = inf_path
            node.inference, node.inference_doc = _read(inf_path, root, specs.InferenceSpec,
                                                       f"inference {stem}", sink)
            prompt = inf_path.parent / f"{stem}.prompt.md"
            node.prompt_path = prompt if prompt.is_file() else None
            if node.prompt_path is None and node.inference and node.inference.prompt is None:
                sink.append(Diagnostic("E_PROMPT_MISSING", node.doc.file, (),
                                       f"node {node_id}: inference {stem} has no prompt file {stem}.prompt.md",
                                       1, 1, f"write the prompt in {stem}.prompt.md beside {stem}.inference.yaml"))
    return node


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
    return _read(path, project.root, specs.InferenceSpec, f"inference {stem}", sink)


def load_experiment(folder: Path, root: Path, package: str = "") -> Experiment:
    sink: list[Diagnostic] = []
    spec, doc = _read(folder / "experiment.yaml", root, specs.ExperimentSpec, f"experiment {folder.name}", sink)
    exp = (Experiment if spec is None or doc is None else RunnableExperiment)(folder.name, folder, doc, spec,
                                                                              diagnostics=sink)
    for flow_folder in sorted(p for p in (folder / "flows").glob("*") if p.is_dir()) if (folder / "flows").is_dir() else []:
        flow = load_flow(flow_folder, root, sink, local_to=exp.id, package=package)
        if flow is not None:
            exp.flows[flow.id] = flow
        elif _is_flow_folder(flow_folder):
            exp.unreadable["flow"].add(flow_folder.name)
    for node_path in _node_files(folder / "nodes"):
        node = load_node(node_path, root, sink, [folder, root])
        if node is None:
            exp.unreadable["alternative"].add(node_path.name[: -len(".node.yaml")])
        elif _unique(node, exp.alternatives, f"experiment {exp.id}", sink):
            exp.alternatives[node.id] = node
    for prompt in sorted((folder / "prompts").glob("*.md")) if (folder / "prompts").is_dir() else []:
        exp.prompts[prompt.stem] = prompt
    return exp


def inference_flow(project, flow_id: str, node_id: str, agent: str, stem: str, description: str,
                   returns: list[dict] | None = None, levels=None, strict: bool = False):
    """An inference with an agent as a one-node flow of an llm node (a judge, a subagent), so it runs exactly
    as any llm node: prompt, output mode, retries, provider, pricing and trace. Its file is looked up in
    `levels` (loader.inference_path). LookupError: what is missing, or two files at one level."""
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
