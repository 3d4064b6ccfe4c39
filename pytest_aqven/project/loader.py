"""Load an AQVEN project (standard layout) into specs with positions and diagnostics: the project file, types,
agents, tools, datasets, flows (flow.yaml and flow.py), their nodes and experiments (the model they load into:
model.py; one file read: reading.py; inferences looked up by id: inferences.py)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..diagnostics import Diagnostic
from . import coderefs, specs
from .inferences import find_inference
from .model import (
    Dataset,
    Entity,
    Experiment,
    Flow,
    Node,
    NotRunnable,
    Project,
    RunnableExperiment,
    RunnableProject,
    package_of,
    runnable,
)
from .paths import PROJECT_FILE, find_root
from .reading import read_spec, yaml_files
from .types import Registry, pascal
from .typesmodule import TypesModule
from .validate import validate
from .yamlpos import YamlDoc

# the names the rooms above import from here (plugin/, api/check.py, api/decide.py, api/plan.py)
__all__ = ["Experiment", "Flow", "NotRunnable", "PROJECT_FILE", "Project", "RunnableExperiment", "find_root",
           "load_experiment", "load_flow", "load_node", "load_project", "package_of", "runnable"]


def load_project(root: Path) -> Project:
    root = root.resolve()
    loaded_ns = time.time_ns()
    sink: list[Diagnostic] = []
    spec, doc = read_spec(root / PROJECT_FILE, root, specs.ProjectSpec, "project", sink)
    project = (Project if spec is None or doc is None else RunnableProject)(root, spec, doc, diagnostics=sink,
                                                                            loaded_ns=loaded_ns)

    type_specs: dict[str, Any] = {}
    for path in yaml_files(root / "types", "**/*.yaml"):
        type_id = pascal(path.stem)
        spec, doc = read_spec(path, root, specs.TypeSpec, f"type {type_id}", sink)
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
        coderefs.register_types(project.package, root, TypesModule(project.package, project))

    agent_files = yaml_files(root / "agents") + [p for p in yaml_files(root / "agents", "*/*.yaml")
                                                  if p.stem == p.parent.name]
    for path in agent_files:
        spec, doc = read_spec(path, root, specs.AgentSpec, f"agent {path.stem}", sink)
        if spec is not None:
            project.agents[path.stem] = Entity(spec, doc)
        else:
            project.unreadable["agent"].add(path.stem)

    for kind, where, annotation in (("tool", "tools", specs.ToolSpec), ("mcp_server", "mcp", specs.McpServerSpec)):
        entities = project.tools if kind == "tool" else project.mcp_servers
        for path in yaml_files(root / where):
            spec, doc = read_spec(path, root, annotation, f"{kind.replace('_', ' ')} {path.stem}", sink)
            if spec is not None:
                entities[path.stem] = Entity(spec, doc)
            else:
                project.unreadable[kind].add(path.stem)

    for path in yaml_files(root / "datasets"):
        spec, doc = read_spec(path, root, specs.DatasetSpec, f"dataset {path.stem}", sink)
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
    files = yaml_files(folder, "**/*.node.yaml")
    return sorted(files, key=lambda p: (p.name != f"{p.parent.name}.node.yaml", p))


def load_flow(folder: Path, root: Path, sink: list[Diagnostic], local_to: str | None = None,
              package: str = "") -> Flow | None:
    path = next((folder / n for n in ("flow.yaml", "flow.yml") if (folder / n).is_file()), None)
    if path is None:
        if (folder / "flow.py").is_file():
            return load_python_flow(folder, root, sink, local_to, package)
        return None
    spec, doc = read_spec(path, root, specs.FlowSpec, f"flow {folder.name}", sink)
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
    spec, doc = read_spec(path, root, specs.NodeSpec, f"node {node_id}", sink)
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
            node.inference, node.inference_doc = read_spec(inf_path, root, specs.InferenceSpec,
                                                       f"inference {stem}", sink)
            prompt = inf_path.parent / f"{stem}.prompt.md"
            node.prompt_path = prompt if prompt.is_file() else None
            if node.prompt_path is None and node.inference and node.inference.prompt is None:
                sink.append(Diagnostic("E_PROMPT_MISSING", node.doc.file, (),
                                       f"node {node_id}: inference {stem} has no prompt file {stem}.prompt.md",
                                       1, 1, f"write the prompt in {stem}.prompt.md beside {stem}.inference.yaml"))
    return node



def load_experiment(folder: Path, root: Path, package: str = "") -> Experiment:
    sink: list[Diagnostic] = []
    spec, doc = read_spec(folder / "experiment.yaml", root, specs.ExperimentSpec, f"experiment {folder.name}", sink)
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


