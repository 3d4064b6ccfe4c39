"""`aqven check` as a library call: load the project, run every layer's rules in one order, return the
diagnostics. The rules live in the layer they need (check/ those of the project alone, then providers/, engine/,
experiments/, findings/); this module, at the top, assembles them."""
from __future__ import annotations

from functools import partial
from pathlib import Path

from ..check.context import CheckContext, internal_error
from ..check.paths import path_rules
from ..check.rules import agent_rules, dataset_rules, providers_and_agents, tool_rules, type_rules
from ..diagnostics import Diagnostic
from ..engine.flow_rules import FlowView, compile_flow
from ..experiments.experiment_rules import ExperimentRules, merge_case_findings
from ..findings.halves_rules import halves_rules
from ..findings.judges import why_unvalidated
from ..project.loader import Experiment, Flow, Project, RunnableExperiment, load_project
from ..providers.price_rules import price_rules
from ..providers.secret_rules import secret_rules
from ..series.cap import LOCAL_FILE, local_override_rules

__all__ = ["check_project", "check_root", "internal_error", "project_rules"]


def check_root(root: Path) -> list[Diagnostic]:
    """Every diagnostic of the project at `root` (the folder holding aqven.yaml), each once, unsorted."""
    try:
        project = load_project(root)
    except Exception as exc:  # a loader bug must reach the user as a diagnostic, never a traceback
        return [internal_error("aqven.yaml", "loading the project", exc)]
    project_diags, per_experiment = check_project(project)
    every = project_diags + [d for diags in per_experiment.values() for d in diags]
    return list({(d.sort_key(), d.message): d for d in every}.values())     # a shared one once


def project_rules(project: Project, ctx: CheckContext | None = None) -> list[Diagnostic]:
    ctx = ctx or CheckContext(project)
    out: list[Diagnostic] = []
    if project.spec is None:
        return out
    out += ctx.guarded("aqven.yaml", "checking providers and agents", lambda: providers_and_agents(ctx))
    out += ctx.guarded("aqven.yaml", "checking for literal secrets", lambda: secret_rules(ctx))
    out += ctx.guarded("types", "checking types", lambda: type_rules(ctx))
    out += ctx.guarded("agents", "checking agents", lambda: agent_rules(ctx))
    out += ctx.guarded("pyproject.toml", "checking prices", lambda: price_rules(ctx))
    out += ctx.guarded("tools", "checking tools", lambda: tool_rules(ctx))
    out += ctx.guarded("datasets", "checking datasets", lambda: dataset_rules(ctx))
    out += ctx.guarded("aqven.yaml", "checking paths", lambda: path_rules(ctx))
    out += ctx.guarded(LOCAL_FILE.as_posix(), "checking the local override", lambda: local_override_rules(project.root))
    for flow in project.flows.values():
        out += ctx.guarded(flow.doc.file, f"checking flow {flow.id}", partial(_flow_rules, ctx, project, flow))
    return out


def _flow_rules(ctx: CheckContext, project: Project, flow: Flow) -> list[Diagnostic]:
    return compile_flow(ctx, FlowView.of(flow, project.flows.get, project.unreadable["flow"]))


def _experiment(project: Project, exp: Experiment, ctx: CheckContext) -> tuple[list[Diagnostic], list]:
    if not isinstance(exp, RunnableExperiment):     # its experiment.yaml did not load: the loader's diagnostics say why
        return [], []
    rules = ExperimentRules(ctx, exp, lambda experiment, check: why_unvalidated(project, experiment, check))
    return rules.run(), rules.case_findings


def check_project(project: Project) -> tuple[list[Diagnostic], dict[str, list[Diagnostic]]]:
    """Project-level diagnostics, and each experiment's own. A problem of a dataset case that several
    experiments select is one diagnostic naming them all, with the count of the cases that share it."""
    ctx = CheckContext(project)
    project_level = list(project.diagnostics) + project_rules(project, ctx)    # first: shared files are theirs
    found = {eid: _experiment(project, exp, ctx) for eid, exp in project.experiments.items()}
    cases = merge_case_findings({eid: f[1] for eid, f in found.items()})
    per_experiment = {eid: list(exp.diagnostics) + found[eid][0] + cases[eid]
                      for eid, exp in project.experiments.items()}
    project_level += ctx.shared
    finding_diags, per_finding_experiment = _findings(project)
    for eid, diags in per_finding_experiment.items():
        per_experiment.setdefault(eid, []).extend(diags)
    halves_diags, per_halves_experiment = _halves(project)
    for eid, diags in per_halves_experiment.items():
        per_experiment.setdefault(eid, []).extend(diags)
    return project_level + finding_diags + halves_diags, per_experiment


def _halves(project: Project) -> tuple[list[Diagnostic], dict[str, list[Diagnostic]]]:
    """W_HALVES_MOVED of each experiment (findings/halves_rules.py); a bug there is an internal error."""
    try:
        return [], halves_rules(project)
    except Exception as exc:
        return [internal_error("experiments", "checking the halves of findings", exc)], {}


def _findings(project: Project) -> tuple[list[Diagnostic], dict[str, list[Diagnostic]]]:
    """E_FINDING_TAMPERED / W_FINDINGS_STALE (findings/finding_rules.py); a bug there is an internal error, never a traceback."""
    if project.spec is None:
        return [], {}
    from ..findings.finding_rules import finding_rules  # noqa: PLC0415  (decides findings again: numpy and scipy)
    try:
        return finding_rules(project)
    except Exception as exc:
        return [internal_error("FINDINGS.md", "checking findings", exc)], {}
