"""The rules of `aqven check` over a loaded project."""
from __future__ import annotations

from ..experiments.split import selected
from ..project.loader import Experiment, Project
from ..project.specs import (SERIES_METRICS, CompareQuestion, LlmNode, ThresholdQuestion, UnsupportedNode)
from .diagnostics import Diagnostic


def project_rules(project: Project) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    if project.spec is None:
        return out
    provider_ids = {p.id for p in project.spec.providers}
    for agent_id, agent in project.agents.items():
        if agent.spec.provider_id not in provider_ids:
            out.append(agent.doc.diag("E_PROVIDER_UNKNOWN", ("model",),
                                      f"agent {agent_id}: provider {agent.spec.provider_id} is not declared in aqven.yaml",
                                      f"declare it under providers or use one of: {', '.join(sorted(provider_ids))}"))
    for flow in project.flows.values():
        out += flow_rules(project, flow)
    for ds in project.datasets.values():
        seen: dict[str, int] = {}
        for i, case in enumerate(ds.spec.cases):
            if case.name in seen:
                out.append(ds.doc.diag("E_CASE_DUPLICATE", ("cases", i, "name"),
                                       f"case name {case.name} is already taken by cases[{seen[case.name]}] of dataset {ds.id}",
                                       "rename one of the cases: name is the case key and is unique in a dataset"))
            seen.setdefault(case.name, i)
        if ds.spec.flow is not None and ds.spec.flow not in project.flows:
            out.append(ds.doc.diag("E_FLOW_UNKNOWN", ("flow",), f"dataset {ds.id}: flow {ds.spec.flow} does not exist in the project",
                                   f"name a flow of the project ({', '.join(sorted(project.flows))})"))
    return out


def flow_rules(project: Project, flow) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for i, node_id in enumerate(flow.spec.order):
        if node_id not in flow.nodes:
            out.append(flow.doc.diag("E_NODE_UNKNOWN", ("order", i),
                                     f"flow {flow.id}: node {node_id} has no file nodes/{node_id}/{node_id}.node.yaml",
                                     f"create the node or name one of: {', '.join(sorted(flow.nodes)) or 'none yet'}"))
    for t, key in ((flow.spec.input, "input"), (flow.spec.output, "output")):
        if t not in project.types:
            out.append(flow.doc.diag("E_TYPE_UNKNOWN", (key,), f"flow {flow.id}: type {t} is not a type of the project",
                                     f"add types/<folder>/<snake_name>.yaml or name one of: {', '.join(sorted(project.types.specs))}"))
    for node in flow.nodes.values():
        if isinstance(node.spec, UnsupportedNode):
            out.append(node.doc.diag("E_NODE_KIND_UNSUPPORTED", ("node",),
                                     f"node {node.id}: {node.kind} nodes are not supported by pytest-aqven",
                                     "run this flow with the AQVEN engine, or replace the node with a code or llm node"))
        if isinstance(node.spec, LlmNode) and node.spec.agent not in project.agents:
            out.append(node.doc.diag("E_AGENT_UNKNOWN", ("agent",), f"node {node.id}: agent {node.spec.agent} does not exist in the project",
                                     f"name an agent of agents/ ({', '.join(sorted(project.agents))})"))
    return out


def experiment_rules(project: Project, exp: Experiment) -> list[Diagnostic]:
    spec, doc = exp.spec, exp.doc
    out: list[Diagnostic] = []
    if spec is None:
        return out
    e = f"experiment {exp.id}"
    flow = project.flow_for(exp, spec.subject.flow)
    if flow is None:
        out.append(doc.diag("E_FLOW_UNKNOWN", ("subject", "flow"),
                            f"{e}: flow {spec.subject.flow} is neither a flow of experiments/{exp.id}/flows nor a flow of the project",
                            f"name a flow of the project ({', '.join(sorted(project.flows))}) or add experiments/{exp.id}/flows/{spec.subject.flow}/flow.yaml"))
    elif spec.subject.from_ is not None:
        order = flow.spec.order
        for key, node in (("from", spec.subject.from_), ("to", spec.subject.to)):
            if node not in order:
                out.append(doc.diag("E_RANGE_INVALID", ("subject", key),
                                    f"{e}: range node {node} is not a top-level node of {flow.id}",
                                    f"set {key} to a node of the order ({', '.join(order)}); a nested node runs inside its container"))
        if spec.subject.from_ in order and spec.subject.to in order and order.index(spec.subject.from_) > order.index(spec.subject.to):
            out.append(doc.diag("E_RANGE_INVALID", ("subject", "from"),
                                f"{e}: range from {spec.subject.from_} comes after to {spec.subject.to} in the order of {flow.id}",
                                "swap from and to"))
    dataset = project.datasets.get(spec.cases.dataset)
    if dataset is None:
        out.append(doc.diag("E_DATASET_UNKNOWN", ("cases", "dataset"), f"{e}: dataset {spec.cases.dataset} does not exist in the project",
                            f"name a dataset of datasets/ ({', '.join(sorted(project.datasets))})"))
    else:
        chosen = selected(dataset.spec, spec.cases.tags)
        if not chosen:
            tags = ", ".join(f"{k}={v}" for k, v in spec.cases.tags.items())
            out.append(doc.diag("E_CASES_EMPTY", ("cases", "tags"),
                                f"{e}: tags {tags} select no case of dataset {dataset.id}",
                                "tag the cases of the dataset or relax the tag filter under cases.tags"))
        elif spec.plan.cases is not None and spec.plan.cases > len(chosen):
            out.append(doc.diag("W_PLAN_EXCEEDS_CASES", ("plan", "cases"),
                                f"{e}: plan.cases is {spec.plan.cases}, but dataset {dataset.id} has {len(chosen)} selected cases",
                                "add cases to the dataset or lower plan.cases: a series runs each selected case at most once per repeat"))
    check_ids = [c.id for c in spec.checks]
    for i, c in enumerate(spec.checks):
        if c.id in SERIES_METRICS:
            out.append(doc.diag("E_ID_DUPLICATE", ("checks", i, "id"), f"{e}: check id {c.id} is the name of a series metric",
                                "rename the check: a metric name means the series metric"))
        elif c.id in check_ids[:i]:
            out.append(doc.diag("E_ID_DUPLICATE", ("checks", i, "id"), f"{e}: check id {c.id} is used twice",
                                "give every check its own id"))
    variant_ids = [v.id for v in spec.variants]
    for i, v in enumerate(spec.variants):
        if v.id in variant_ids[:i]:
            out.append(doc.diag("E_ID_DUPLICATE", ("variants", i, "id"), f"{e}: variant id {v.id} is used twice",
                                "give every variant its own id"))
    q = spec.question
    metrics = []
    if isinstance(q, ThresholdQuestion):
        metrics.append((("question", "metric"), q.metric))
        if q.variant is not None and q.variant not in variant_ids:
            out.append(doc.diag("E_VARIANT_INVALID", ("question", "variant"),
                                f"{e}: question names variant {q.variant}, which is not declared under variants",
                                f"declare it or name one of: {', '.join(variant_ids)}"))
    elif isinstance(q, CompareQuestion):
        metrics.append((("question", "primary"), q.primary))
        metrics += [(("question", "guardrails", i, "metric"), g.metric) for i, g in enumerate(q.guardrails)]
        if len(spec.variants) < 2:
            out.append(doc.diag("E_VARIANT_INVALID", ("question", "kind"),
                                f"{e}: question {q.kind} compares two variants, but the experiment declares {len(spec.variants)}",
                                "declare a baseline and a candidate under variants"))
        for key in ("baseline", "candidate"):
            name = getattr(q, key)
            if name not in variant_ids and len(spec.variants) >= 2:
                out.append(doc.diag("E_VARIANT_INVALID", ("question", key),
                                    f"{e}: question names variant {name}, which is not declared under variants",
                                    f"declare it or name one of: {', '.join(variant_ids)}"))
    for path, metric in metrics:
        if metric not in check_ids and metric not in SERIES_METRICS:
            out.append(doc.diag("E_METRIC_UNKNOWN", path,
                                f"{e}: metric {metric} is neither a check id of the experiment nor a series metric",
                                f"name a check id ({', '.join(check_ids)}) or a series metric ({', '.join(SERIES_METRICS)})"))
    return out


def check_project(project: Project) -> tuple[list[Diagnostic], dict[str, list[Diagnostic]]]:
    """Project-level diagnostics, and each experiment's own."""
    per_experiment = {eid: list(exp.diagnostics) + experiment_rules(project, exp)
                      for eid, exp in project.experiments.items()}
    return list(project.diagnostics) + project_rules(project), per_experiment
