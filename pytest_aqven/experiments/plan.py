"""What a series of an experiment runs: cases of one half, variants assembled, checks, repeats."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..engine.runner import Assembly
from ..project.loader import Experiment, Project
from ..project.specs import CaseSpec, ExperimentSpec
from . import inputs
from . import split as splitting
from .factors import use_nodes

ENGINE_VERSION = "pytest-aqven/0.1"


class PlanError(ValueError):
    pass


@dataclass
class SeriesPlan:
    experiment: Experiment
    split: str
    cases: list[CaseSpec]
    available: int
    repeats: int
    variants: dict[str, Assembly] = field(default_factory=dict)   # in declaration order

    @property
    def spec(self) -> ExperimentSpec:
        return self.experiment.spec

    @property
    def attempts(self) -> int:
        return len(self.cases) * self.repeats * len(self.variants)


def assemble(project: Project, experiment: Experiment) -> dict[str, Assembly]:
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


def plan(project: Project, experiment: Experiment, split: str, cases: int | None = None,
         repeats: int | None = None) -> SeriesPlan:
    spec = experiment.spec
    dataset = project.datasets.get(spec.cases.dataset)
    if dataset is None:
        raise PlanError(f"dataset {spec.cases.dataset} does not exist in the project")
    wanted = cases if cases is not None else spec.plan.cases
    chosen, available = splitting.choose(project.package, dataset.id, dataset.spec, spec.cases.tags, split, wanted)
    return SeriesPlan(experiment, split, chosen, available, repeats or spec.plan.repeats, assemble(project, experiment))


def file_hash(path: Path) -> str:
    return "sha256-" + hashlib.sha256(path.read_bytes()).hexdigest()


def canonical_hash(value) -> str:
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256-" + hashlib.sha256(data.encode()).hexdigest()


def input_paths(project: Project, series: SeriesPlan) -> dict[str, list[Path]]:
    """Every file the series reads, by what it is (experiments/inputs.py says which)."""
    root = project.root
    flows = {}
    for variant, a in series.variants.items():
        plugged = [project.flow_for(series.experiment, f) for f in a.flows.values()]
        folders = [a.flow.folder, *(n.path.parent for n in a.nodes.values()),   # the flow, its alternatives
                   *(f.folder for f in plugged if f is not None)]                # and the flows in its slots
        flows[variant] = sorted({p for folder in folders for p in folder.rglob("*")
                                 if p.is_file() and "__pycache__" not in p.parts} | set(a.prompts.values()))
    shared = [p for folder in inputs.SHARED_FOLDERS for p in inputs._files(root / folder)] + [root / "aqven.yaml"]
    judges = {}
    for check in series.spec.checks:
        if check.is_judge:
            from .judges import judge_files
            judges[f"judge:{check.id}"] = sorted(judge_files(project, check.inference))
    return {
        "experiment": inputs._files(series.experiment.file.parent),
        "dataset": [root / "datasets" / f"{series.spec.cases.dataset}.yaml"],
        **{f"flow:{variant}": files for variant, files in flows.items()},
        **judges,
        "project": shared,
        "code": inputs.project_code(root),
        "modules": inputs.outside_modules(root, project.package),
    }


def snapshot(project: Project, series: SeriesPlan, paths: dict[str, list[Path]] | None = None) -> dict[str, str]:
    """Hashes of everything the series runs on; compared at the end to detect inputs that changed."""
    root = project.root
    paths = paths or input_paths(project, series)

    def named(p: Path) -> str:
        p = p.resolve()
        return p.relative_to(root.resolve()).as_posix() if root.resolve() in p.parents else p.as_posix()

    def hashes(files) -> dict[str, str]:
        return {named(p): file_hash(p) for p in files if p.is_file()}

    flows = {k.split(":", 1)[1]: canonical_hash(hashes(v)) for k, v in paths.items() if k.startswith("flow:")}
    judges = {k.split(":", 1)[1]: canonical_hash(hashes(v)) for k, v in paths.items() if k.startswith("judge:")}
    return {
        "experiment_sha256": file_hash(series.experiment.file),
        "experiment_folder_sha256": canonical_hash(hashes(paths["experiment"])),
        "dataset_sha256": file_hash(paths["dataset"][0]),
        "cases_sha256": canonical_hash([c.model_dump(mode="json") for c in series.cases]),
        "flows_sha256": canonical_hash(flows),
        "project_sha256": canonical_hash(hashes(paths["project"])),
        "code_sha256": canonical_hash(hashes(paths["code"])),
        "judges_sha256": canonical_hash(judges),
        "modules_sha256": canonical_hash(hashes(paths["modules"])),
        "modules": sorted(named(p) for p in paths["modules"]),
        "engine_version": ENGINE_VERSION,
    }


def fingerprints(paths: dict[str, list[Path]]) -> dict[str, list[int]]:
    """mtime and size of every input file at the start: a file edited and restored during the series shows."""
    return inputs.fingerprint(sorted({str(p.resolve()) for files in paths.values() for p in files}))
