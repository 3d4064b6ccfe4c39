"""The rules of `aqven check` over a loaded project: project-level ones here, flows in flows.py,
experiments (and their variants) in experiments.py."""
from __future__ import annotations

from ..project.loader import Experiment, Project
from ..project.specs import RecordTypeSpec
from .context import CheckContext, internal_error
from .diagnostics import Diagnostic
from .experiments import ExperimentRules
from .flows import FlowView, compile_flow

__all__ = ["check_project", "experiment_rules", "internal_error", "project_rules"]


def project_rules(project: Project, ctx: CheckContext | None = None) -> list[Diagnostic]:
    ctx = ctx or CheckContext(project)
    out: list[Diagnostic] = []
    if project.spec is None:
        return out
    out += ctx.guarded("aqven.yaml", "checking providers and agents", lambda: _providers_and_agents(ctx))
    out += ctx.guarded("types", "checking types", lambda: _types(ctx))
    out += ctx.guarded("datasets", "checking datasets", lambda: _datasets(ctx))
    for flow in project.flows.values():
        out += ctx.guarded(flow.doc.file, f"checking flow {flow.id}",
                           lambda flow=flow: compile_flow(ctx, FlowView.of(flow, project.flows.get,
                                                                           project.unreadable["flow"])))
    return out


def _providers_and_agents(ctx: CheckContext) -> list[Diagnostic]:
    project, out = ctx.project, []
    for i, provider in enumerate(project.spec.providers):
        if provider.kind == "code" and provider.run:
            _, problem = ctx.resolver.resolve(provider.run, project.root / "aqven.py")
            if problem:
                out.append(project.doc.diag("E_CODE_REF_UNRESOLVED", ("providers", i, "run"), f"provider {provider.id}: {problem}",
                                            "write @root.<module>:<function> or <package>.<module>:<function>, and "
                                            "make the module import cleanly"))
    provider_ids = {p.id for p in project.spec.providers}
    for agent_id, agent in project.agents.items():
        if agent.spec.provider_id not in provider_ids:
            out.append(agent.doc.diag("E_PROVIDER_UNKNOWN", ("model",),
                                      f"agent {agent_id}: provider {agent.spec.provider_id} is not declared in aqven.yaml",
                                      f"declare it under providers or use one of: {', '.join(sorted(provider_ids))}"))
    return out


def _types(ctx: CheckContext) -> list[Diagnostic]:
    out = []
    for type_id, (spec, doc) in ctx.project.type_docs.items():
        if not isinstance(spec, RecordTypeSpec):
            continue
        for i, f in enumerate(spec.fields):
            problem = ctx.types.problem(f.type)
            if problem:
                out.append(doc.diag("E_TYPE_UNKNOWN", ("fields", i, "type"), f"type {type_id}: field {f.name}: {problem}",
                                    f"add types/<folder>/<snake_name>.yaml or name one of: {ctx.types.known_names()}"))
    return out


def _datasets(ctx: CheckContext) -> list[Diagnostic]:
    project, out = ctx.project, []
    for ds in project.datasets.values():
        seen: dict[str, int] = {}
        for i, case in enumerate(ds.spec.cases):
            if case.name in seen:
                out.append(ds.doc.diag("E_CASE_DUPLICATE", ("cases", i, "name"),
                                       f"case name {case.name} is already taken by cases[{seen[case.name]}] of dataset {ds.id}",
                                       "rename one of the cases: name is the case key and is unique in a dataset"))
            seen.setdefault(case.name, i)
        if ds.spec.flow is not None and ds.spec.flow not in project.flows and not ctx.unreadable("flow", ds.spec.flow):
            out.append(ds.doc.diag("E_FLOW_UNKNOWN", ("flow",), f"dataset {ds.id}: flow {ds.spec.flow} does not exist in the project",
                                   f"name a flow of the project ({', '.join(sorted(project.flows)) or 'none yet'}), or "
                                   "remove flow for a dataset that local flows of experiments run"))
    return out


def experiment_rules(project: Project, exp: Experiment, ctx: CheckContext | None = None) -> list[Diagnostic]:
    if exp.spec is None:
        return []
    return ExperimentRules(ctx or CheckContext(project), exp).run()


def check_project(project: Project) -> tuple[list[Diagnostic], dict[str, list[Diagnostic]]]:
    """Project-level diagnostics, and each experiment's own."""
    ctx = CheckContext(project)
    per_experiment = {eid: list(exp.diagnostics) + experiment_rules(project, exp, ctx)
                      for eid, exp in project.experiments.items()}
    finding_diags, per_finding_experiment = _findings(project)
    for eid, diags in per_finding_experiment.items():
        per_experiment.setdefault(eid, []).extend(diags)
    return list(project.diagnostics) + project_rules(project, ctx) + finding_diags, per_experiment


def _findings(project: Project) -> tuple[list[Diagnostic], dict[str, list[Diagnostic]]]:
    """E_FINDING_TAMPERED / W_FINDINGS_STALE (check/findings.py); a bug there is an internal error, never a traceback."""
    if project.spec is None:
        return [], {}
    from .findings import finding_rules  # noqa: PLC0415  (decides findings again: numpy and scipy)
    try:
        return finding_rules(project)
    except Exception as exc:
        return [internal_error("FINDINGS.md", "checking findings", exc)], {}
