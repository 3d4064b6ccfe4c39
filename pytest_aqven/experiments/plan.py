"""What a series of an experiment runs: cases of one half, variants assembled, checks, repeats."""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..engine.runner import Assembly
from ..engine.sources import LIVE, Sources
from ..project.model import Flow, Project, RunnableExperiment
from ..project.paths import outside
from ..project.specs import CallNode, CaseSpec, ExperimentSpec
from ..providers import prices
from . import inputs, split as splitting
from .factors import use_nodes

if TYPE_CHECKING:
    from ..project.model import Node

ENGINE_VERSION = "pytest-aqven/0.1"


class PlanError(ValueError):
    pass


@dataclass
class SeriesPlan:
    experiment: RunnableExperiment
    split: str
    cases: list[CaseSpec]
    available: int
    repeats: int
    variants: dict[str, Assembly] = field(default_factory=dict)   # in declaration order
    sources: Sources = LIVE        # the inputs as read at the series start (lifecycle sets it): attempts read these

    @property
    def spec(self) -> ExperimentSpec:
        return self.experiment.spec

    @property
    def attempts(self) -> int:
        return len(self.cases) * self.repeats * len(self.variants)


def assemble(project: Project, experiment: RunnableExperiment) -> dict[str, Assembly]:
    spec = experiment.spec
    flow = project.flow_for(experiment, spec.subject.flow)
    if flow is None:
        raise PlanError(f"flow {spec.subject.flow} is neither a flow of the experiment nor of the project")
    what = spec.varies.what if spec.varies else None
    out = {}
    for variant in spec.variants:
        a = Assembly(flow, start=spec.subject.from_, end=spec.subject.to)
        for node_id, value in variant.nodes.items():
            if what == "agent":
                a.agents[node_id] = value
            elif what == "prompt":
                a.prompts[node_id] = experiment.prompts[value]
            elif what == "flow":
                a.flows[node_id] = value
            elif what != "use":
                raise PlanError(f"variant {variant.id}: varies.what {what} is not run by this version of pytest-aqven")
        if what == "use" and variant.nodes:
            nodes, replaced = use_nodes(flow.nodes, list(flow.spec.order),
                                        {slot: experiment.alternatives[alt] for slot, alt in variant.nodes.items()},
                                        experiment.alternatives)
            a.nodes = {k: nodes[k] for k in replaced}
        out[variant.id] = a
    return out


def plan(project: Project, experiment: RunnableExperiment, split: str, cases: int | None = None,
         repeats: int | None = None, *, skip: Collection[str] = (), names: list[str] | None = None) -> SeriesPlan:
    """`skip`: case names left out (held-out cases already spent); `names`: exactly these cases, as a series
    recorded them (the end of a series compares its inputs with the start's)."""
    spec = experiment.spec
    dataset = project.datasets.get(spec.cases.dataset)
    if dataset is None:
        raise PlanError(f"dataset {spec.cases.dataset} does not exist in the project")
    wanted = cases if cases is not None else spec.plan.cases
    if names is not None:
        by_name = {c.name: c for c in splitting.selected(dataset.spec, spec.cases.tags)}
        chosen, available = [by_name[n] for n in names if n in by_name], len(names)
    else:
        chosen, available = splitting.choose(project.package, dataset.id, dataset.spec, spec.cases.tags, split,
                                             wanted, skip)
    return SeriesPlan(experiment, split, chosen, available, repeats or spec.plan.repeats, assemble(project, experiment))


def half(project: Project, experiment: RunnableExperiment, split: str) -> list[str]:
    """The names of every case the experiment selects in one half, in file order."""
    spec = experiment.spec
    dataset = project.datasets.get(spec.cases.dataset)
    if dataset is None:
        raise PlanError(f"dataset {spec.cases.dataset} does not exist in the project")
    return [c.name for c in splitting.choose(project.package, dataset.id, dataset.spec, spec.cases.tags, split,
                                             None)[0]]


def file_hash(path: Path) -> str:
    return "sha256-" + hashlib.sha256(path.read_bytes()).hexdigest()


def bytes_hash(data: bytes) -> str:
    return "sha256-" + hashlib.sha256(data).hexdigest()


def canonical_hash(value: Any) -> str:
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256-" + hashlib.sha256(data.encode()).hexdigest()


def flows_run(project: Project, experiment: RunnableExperiment, a: Assembly) -> list[Flow]:
    """The variant's flow, the flows in its slots, and every flow their call nodes call, transitively."""
    todo = [a.flow, *(f for f in (project.flow_for(experiment, i) for i in a.flows.values()) if f is not None)]
    nodes = list(a.nodes.values())
    seen: dict[tuple, Flow] = {}
    while todo or nodes:
        if todo:
            flow = todo.pop()
            if (flow.local_to, flow.id) in seen:
                continue
            seen[(flow.local_to, flow.id)] = flow
            nodes += flow.nodes.values()
            continue
        node = nodes.pop()
        if isinstance(node.spec, CallNode):
            called = project.flow_for(experiment, node.spec.flow)
            if called is not None:
                todo.append(called)
    return list(seen.values())


def _inference_files(project: Project, node: Node) -> set[Path]:
    """An llm node's inference, prompt and variant texts, wherever the inference lives, and those of the judges
    of its checks (found as the node's own inference, Node.levels)."""
    if node.inference_doc is None:
        return set()
    inference = project.root / node.inference_doc.file
    stem = inference.name[: -len(".inference.yaml")]
    variants = inference.parent / f"{stem}.variants"
    judges = {p for check in (node.inference.checks if node.inference else []) if check.inference
              for p in _named_inference_files(project, check.inference, node.levels)}
    return {inference, *([node.prompt_path] if node.prompt_path else []),
            *(p for p in variants.rglob("*") if p.is_file()), *judges}


def _named_inference_files(project: Project, stem: str, levels: list[Path] | None = None) -> set[Path]:
    """An inference named by id (a judge's, a subagent's): its file, prompt and variant texts."""
    from ..project.inferences import inference_path

    found = inference_path(project, stem, levels)
    if found is None:
        return set()
    variants = found.parent / f"{stem}.variants"
    return {p for p in (found, found.parent / f"{stem}.prompt.md") if p.is_file()} | {
        p for p in variants.rglob("*") if p.is_file()}


def _instruction_files(project: Project) -> list[Path]:
    """The files agents name as their instructions (`./x.md`, `@root/x.md`), wherever they are."""
    out = []
    for entity in project.agents.values():
        rel = entity.spec.instructions_file
        if rel:
            out.append(project.root / rel.removeprefix("@root/") if rel.startswith("@root/")
                       else (project.root / entity.doc.file).parent / rel)
    return out


def input_paths(project: Project, series: SeriesPlan) -> dict[str, list[Path]]:
    """Every file the series reads, by what it is (experiments/inputs.py says which)."""
    root = project.root
    flows = {}
    for variant, a in series.variants.items():
        run = flows_run(project, series.experiment, a)
        folders = [f.folder for f in run] + [n.path.parent for n in a.nodes.values()]   # and the slots' alternatives
        files = {p for folder in folders for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
        for node in [n for f in run for n in f.nodes.values()] + list(a.nodes.values()):
            files |= _inference_files(project, node)       # a shared inference may live in another flow
        flows[variant] = sorted(files | set(a.prompts.values()))
    shared = [p for folder in inputs.SHARED_FOLDERS for p in inputs._files(root / folder)] + [root / "aqven.yaml"]
    declared = prices.load(root)
    if declared.declared and declared.file is not None:   # the prices of the calls, so the spend and the cost metrics
        shared.append(declared.file)
    shared += [p for p in _instruction_files(project) if p.is_file() and p not in shared]
    subagents = {p for entity in project.agents.values() for sub in entity.spec.subagents     # any agent may run
                 for p in _named_inference_files(project, sub.inference)}
    shared += sorted(subagents - set(shared))
    judges = {}
    for check in series.spec.checks:
        if check.is_judge:
            from .judges import judge_files
            stem = cast(str, check.inference)     # a judge check has one
            judges[f"judge:{check.id}"] = sorted(judge_files(project, series.experiment, stem))
    paths = {
        "experiment": inputs._files(series.experiment.file.parent),
        "dataset": [root / "datasets" / f"{series.spec.cases.dataset}.yaml"],
        **{f"flow:{variant}": files for variant, files in flows.items()},
        **judges,
        "project": shared,
        "code": inputs.project_code(root),
        "modules": inputs.outside_modules(project),
    }
    # a file the project names that resolves outside it is never read (the run refuses it, aqven check says so),
    # so it is no input either; outside modules are the exception: imported code, hashed so that an edit shows
    return {key: group if key == "modules" else [p for p in group if outside(root, p) is None]
            for key, group in paths.items()}


def snapshot(project: Project, series: SeriesPlan, paths: dict[str, list[Path]] | None = None,
             data: dict[Path, bytes] | None = None) -> dict[str, str | list[str] | None]:
    """Hashes of everything the series runs on: of `data` (the bytes read at its start, by resolved path)
    when given, else of the files as they are now (the end compares the two)."""
    root = project.root.resolve()
    paths = paths or input_paths(project, series)

    def named(p: Path) -> str:
        p = p.resolve()
        return p.relative_to(root).as_posix() if root in p.parents else p.as_posix()

    def digest(p: Path) -> str | None:
        if data is not None:
            held = data.get(p.resolve())
            return None if held is None else bytes_hash(held)
        return file_hash(p) if p.is_file() else None

    def hashes(files: Iterable[Path]) -> dict[str, str]:
        return {named(p): h for p in files for h in [digest(p)] if h is not None}

    flows = {k.split(":", 1)[1]: canonical_hash(hashes(v)) for k, v in paths.items() if k.startswith("flow:")}
    judges = {k.split(":", 1)[1]: canonical_hash(hashes(v)) for k, v in paths.items() if k.startswith("judge:")}
    return {
        "experiment_sha256": digest(series.experiment.file),
        "experiment_folder_sha256": canonical_hash(hashes(paths["experiment"])),
        "dataset_sha256": digest(paths["dataset"][0]) if paths["dataset"] else None,
        "cases_sha256": canonical_hash([c.model_dump(mode="json") for c in series.cases]),
        "flows_sha256": canonical_hash(flows),
        "project_sha256": canonical_hash(hashes(paths["project"])),
        "code_sha256": canonical_hash(hashes(paths["code"])),
        "judges_sha256": canonical_hash(judges),
        "modules_sha256": canonical_hash(hashes(paths["modules"])),
        "modules": sorted(named(p) for p in paths["modules"]),
        "engine_version": ENGINE_VERSION,
    }


PARSED = (".yaml", ".yml", ".py")     # parsed at load time or imported; every other input is held as bytes


@dataclass
class Snapshot:
    """The inputs of a series as this process read them at the series start."""
    hashes: dict                      # what the series records and its finding carries
    fingerprints: dict[str, list[int]]
    sources: Sources                  # the text the engine reads during attempts
    stale: list[str]                  # parsed or imported inputs modified after the project was loaded


def take(project: Project, series: SeriesPlan) -> Snapshot:
    """Read every input once: stat it (an edit after this shows at the end), read its bytes, hash those.
    Call it after the code the series runs is imported (import_code): a module edited after the project
    was loaded may have been imported from other bytes than those hashed, and so may a YAML file
    parsed at load time; both are `stale`."""
    paths = input_paths(project, series)
    files = sorted({p.resolve() for group in paths.values() for p in group})
    marks = inputs.fingerprint([str(p) for p in files])
    data: dict[Path, bytes] = {}
    for p in files:
        try:
            data[p] = p.read_bytes()
        except OSError:
            continue                  # gone (or a folder): not hashed, and the end sees it missing
    hashes = snapshot(project, series, paths, data)
    held = {p: b for p, b in data.items() if p.suffix not in PARSED}
    loaded, now = project.loaded_ns, time.time_ns()
    # a YAML file is stale when the bytes read now are not the bytes the loader parsed (compared by content:
    # a file restored with its old mtime, `cp -p`, is caught too); an imported module when it was modified
    # since the project was loaded (a future mtime, a clock skew or an archive, says nothing about an edit)
    parsed = {(project.root / doc.file).resolve(): doc.sha256 for doc in _parsed_documents(project) if doc.sha256}
    stale = sorted(
        project.rel(p) if project.root in p.parents else str(p) for p in files
        if (p in parsed and p in data and bytes_hash(data[p]) != parsed[p])
        or (p.suffix == ".py" and loaded is not None and str(p) in marks and loaded <= marks[str(p)][0] <= now))
    return Snapshot(hashes, marks, Sources(held), stale)


def _parsed_documents(project: Project):
    from ..project.model import documents
    yield from documents(project)
    yield from (d.doc for d in project.datasets.values())
    yield from (doc for _, doc in project.type_docs.values())


def import_code(project: Project, series: SeriesPlan) -> None:
    """Import every module the code references of the series name (its flows' nodes, Python prompts,
    inference checks, tools), now, so that every attempt of this process runs the code the snapshot
    hashes (a module first imported mid-series would run its bytes of then). A reference that does not
    resolve is left to the attempt, which reports it."""
    from ..project import coderefs
    nodes = []
    for a in series.variants.values():
        nodes += [n for f in flows_run(project, series.experiment, a) for n in f.nodes.values()] + list(a.nodes.values())
    refs = []
    for node in nodes:
        run = getattr(node.spec, "run", None)
        if isinstance(run, str):
            refs.append((run, node.py_path))
        inference = node.inference
        if inference is not None:
            if inference.prompt:
                refs.append((inference.prompt, node.inference_py_path))
            refs += [(c.run, node.inference_py_path) for c in inference.checks if c.run]
    refs += [(e.spec.run, project.root / "tools" / f"{tool_id}.py") for tool_id, e in project.tools.items()
             if getattr(e.spec, "run", None)]
    for ref, here in refs:
        try:
            coderefs.resolve(ref, package=project.package, root=project.root, here=here)
        except Exception:  # noqa: BLE001 - the user's module: its error is the attempt's to report
            continue
