"""Which judge a judge check is, which llm nodes a series measured, and whether the experiment a judge's
`validated_by` names vouches for it: a standing, confirmed held-out finding that measured the same judge
(agent, model, inference and the sha256 of its prompt). Without one, a verdict resting on the judge is at most
a signal, and its sentence says which condition failed."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..experiments.plan import file_hash
from ..project.inferences import inference_path, judge_levels
from ..project.model import Experiment, Project, RunnableExperiment
from ..project.specs import LlmNode
from .fields import IDENTITY

if TYPE_CHECKING:
    pass


def _prompt_sha(path: Path | None) -> str | None:
    """The sha256 of a prompt text file; None for a prompt rendered by Python (then agent, model and inference
    identify the judge)."""
    return file_hash(path) if path is not None and path.is_file() else None


def _model(project: Project, agent: str) -> str | None:
    entity = project.agents.get(agent)
    return entity.spec.model if entity is not None else None


def identity(project: Project, experiment: Experiment, check) -> dict:
    """A judge check as the finding records it (LookupError when its inference is missing or ambiguous)."""
    path = inference_path(project, check.inference, judge_levels(project, experiment), strict=True)
    if path is None:
        raise LookupError(f"inference {check.inference} has no file")
    return {"check": check.id, "inference": check.inference, "agent": check.agent,
            "model": _model(project, check.agent), "inference_file": project.rel(path),
            "prompt_sha256": _prompt_sha(path.parent / f"{check.inference}.prompt.md"),
            "validated_by": check.validated_by}


def llm_nodes(project: Project, experiment: RunnableExperiment, assembly) -> list[dict]:
    """Every llm node a variant runs (its subject's with the variant's agents and prompts in the slots, and
    those of the flows it calls) with the judge identity of each: a calibration experiment measures them."""
    from ..experiments.plan import flows_run

    out = {}
    for flow in flows_run(project, experiment, assembly):
        own = flow is assembly.flow
        for node_id, node in flow.nodes.items():
            node = assembly.nodes.get(node_id, node) if own else node
            if not isinstance(node.spec, LlmNode):
                continue
            agent = assembly.agents.get(node_id, node.spec.agent) if own else node.spec.agent
            prompt = assembly.prompts.get(node_id, node.prompt_path) if own else node.prompt_path
            key = node_id if own else f"{flow.id}.{node_id}"
            out[key] = {"node": key, "agent": agent, "model": _model(project, agent),
                        "inference": node.spec.inference or node.id, "prompt_sha256": _prompt_sha(prompt)}
    return [out[k] for k in sorted(out)]


def _about(question: dict, variants: list[dict]) -> list:
    """The variants a claim is about: a threshold's tested variants, a comparison's candidate."""
    if question.get("kind") == "threshold":
        return [question["variant"]] if question.get("variant") else [v["id"] for v in variants]
    return [question.get("candidate")]


def spoken_for(project: Project, experiment: Experiment, judges: list[dict], variants: list[dict],
               question: dict) -> list[dict]:
    """The judges a finding speaks for, by identity (`scope.judges`): its judge checks and, when the experiment
    is a calibration (a judge check of the project names it in validated_by), the llm nodes on that judge's
    inference in the variants its claim is about. FINDINGS.md counts the looks of a question per such set."""
    calibrated = {c.inference for e in project.experiments.values() if e.spec is not None
                  for c in e.spec.checks if c.is_judge and c.validated_by == experiment.id}
    nodes = [n for v in variants if v["id"] in _about(question, variants) for n in v["llm_nodes"]
             if n["inference"] in calibrated]
    out = {tuple(str(j.get(k)) for k in IDENTITY): {k: j.get(k) for k in IDENTITY} for j in [*judges, *nodes]}
    return [out[key] for key in sorted(out)]


def _same(a: dict, b: dict) -> bool:
    return all(a.get(k) == b.get(k) for k in IDENTITY)


def _measured(finding: dict, judge: dict) -> bool | None:
    """Did the finding measure this judge: as one of its judge checks, or as an llm node of a variant its
    claim is about (a threshold's tested variants, a comparison's candidate)? None: it does not record it."""
    about = _about(finding.get("method", {}).get("question", {}), finding.get("variants", []))
    nodes = [n for v in finding.get("variants", []) if v["id"] in about for n in v.get("llm_nodes") or []]
    recorded = [*(finding.get("judges") or []), *nodes]
    if not any("prompt_sha256" in r for r in recorded):
        return None
    return any(_same(r, judge) for r in recorded)


def why_not_validated(project: Project, judge: dict, findings: list[dict]) -> str | None:
    """None when the experiment `judge["validated_by"]` names vouches for the judge, else the condition that
    failed, in words that complete "judge <check> ...". `findings`: the findings that stand (files.read_findings)."""
    target = judge.get("validated_by")
    if target is None:
        from ..stats.wording import NO_VALIDATED_BY  # noqa: PLC0415  (numpy: not when aqven check collects)
        return NO_VALIDATED_BY
    experiment = project.experiments.get(target)
    if experiment is None:
        return f"is not validated: validated_by names {target}, which is no experiment of the project"
    held_out = [f for f in findings if f["experiment"] == target and f["scope"]["split"] == "holdout"]
    if not held_out:
        return f"is not validated: {target}, its validated_by, has no held-out finding"
    measured = [f for f in held_out if _measured(f, judge)]
    if not measured:
        if all(_measured(f, judge) is None for f in held_out):
            return (f"is not validated: the held-out findings of {target}, its validated_by, do not record which "
                    "judge they measured (written before pytest-aqven recorded it)")
        return (f"is not validated: the held-out findings of {target}, its validated_by, measured another judge, "
                f"not agent {judge['agent']} ({judge['model']}) on inference {judge['inference']} with this prompt")
    latest = max(measured, key=lambda f: (f["scope"]["finished_at"], f["series"]))
    if latest["state"] != "confirmed":
        return f"is not validated: the latest held-out finding of {target}, its validated_by, is {latest['state']}"
    changed = stale(project, experiment, latest)
    if changed:
        return (f"is not validated: the confirmed finding of {target}, its validated_by, is stale: its {changed} "
                "changed since")
    return None


def why_unvalidated(project: Project, experiment: Experiment, check) -> str | None:
    """W_JUDGE_UNVALIDATED's reason (experiments/experiment_rules.py, handed this by api/check.py): why the judge of
    `check` has no standing, confirmed held-out finding of its validated_by for this very judge, or None."""
    from .files import read_findings  # noqa: PLC0415  (findings decide again: numpy)

    findings = [f for _, f in read_findings(project.root, project.package)]
    return why_not_validated(project, identity(project, experiment, check), findings)


def stale(project: Project, experiment: Experiment, finding: dict) -> str | None:
    """What changed since the finding of `experiment` was written that it speaks for (its question and its
    cases: experiment.yaml, the dataset), or None. Its judge is compared apart (IDENTITY)."""
    inputs = finding.get("inputs") or {}
    if inputs.get("experiment_sha256") != file_hash(experiment.file):
        return "experiment.yaml"
    dataset = project.root / "datasets" / f"{experiment.spec.cases.dataset}.yaml" if experiment.spec else None
    if dataset is None or not dataset.is_file() or inputs.get("dataset_sha256") != file_hash(dataset):
        return "dataset"
    return None


def unvalidated(project: Project, experiment: RunnableExperiment) -> dict[str, str]:
    """Judge check id -> why it is not validated, for every judge check of `experiment` that is not."""
    from .files import read_findings

    judges = [c for c in experiment.spec.checks if c.is_judge]
    if not judges:
        return {}
    findings = [f for _, f in read_findings(project.root, project.package)] if any(c.validated_by for c in judges) \
        else []
    out = {}
    for check in judges:
        try:
            judge = identity(project, experiment, check)
        except LookupError as exc:
            out[check.id] = f"is not validated: {exc}"
            continue
        why = why_not_validated(project, judge, findings)
        if why is not None:
            out[check.id] = why
    return out
