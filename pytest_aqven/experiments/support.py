"""What this version of the engine cannot run yet: named before any attempt, not found in every attempt.

`aqven check` accepts these (they are valid AQVEN); a series of an experiment that uses one would
only produce infrastructure errors, so collection stops with a diagnostic instead."""
from __future__ import annotations

from ..check.diagnostics import Diagnostic
from ..project.loader import Experiment, Project
from ..project.specs import LlmNode
from .checks import CheckInvalid
from .judges import compile_judge
from .plan import assemble

CODE = "E_RUNTIME_UNSUPPORTED"
HINT = "see docs/engine.md for what this version of pytest-aqven runs"
RUNS = {"llm", "code", "tool", "call", "parallel", "map", "loop", "switch", "human", "narrow"}


def runtime_gaps(project: Project, experiment: Experiment) -> list[Diagnostic]:
    spec, doc = experiment.spec, experiment.doc
    out: list[Diagnostic] = []
    for check in spec.checks:       # a judge runs as an llm node: the same gaps apply
        if check.is_judge:
            try:
                judge = compile_judge(check, project)
            except CheckInvalid:    # the series reports it on every attempt, with its reason
                continue
            node = judge.assembly.node(check.id)
            out += _llm_gaps(project, node, node.prompt_path, check.agent)
    seen: set[tuple] = set()
    for variant, assembly in assemble(project, experiment).items():
        # (node, its id, its flow, the variant's slots: nodes of the subject have them, those of a called flow not)
        todo = [(assembly.nodes.get(n) or assembly.flow.nodes.get(n), n, assembly.flow, assembly) for n in assembly.order]
        while todo:
            node, node_id, flow, slots = todo.pop()
            if node is None:                  # a node that did not load: its own diagnostic says why
                continue
            agent = slots.agents.get(node_id) if slots else None
            prompt = slots.prompts.get(node_id) if slots else None
            if (node.path, agent, prompt) in seen:
                continue
            seen.add((node.path, agent, prompt))
            if node.kind not in RUNS:
                out.append(node.doc.diag(CODE, ("node",), f"node {node_id}: {node.kind} nodes are not run yet", HINT))
                continue
            if isinstance(node.spec, LlmNode):
                out += _llm_gaps(project, node, prompt or node.prompt_path, agent or node.spec.agent)
            plugged = slots.flows.get(node_id) if slots else None
            todo += _inside(project, experiment, flow, node, plugged, slots)
    return out


def _inside(project: Project, experiment: Experiment, flow, node, plugged: str | None = None, slots=None) -> list:
    """The nodes a container runs (its children, by id in its flow) and the top-level nodes of a called flow
    (`plugged`: the flow a variant's flow factor puts in the call's slot)."""
    from ..check.flows import children

    if node.kind == "call":
        called = project.flow_for(experiment, plugged or node.spec.flow)
        if called is None:
            return []
        return [(called.nodes[n], n, called, None) for n in called.spec.order if n in called.nodes]
    # a container's children run with the variant's slots; an alternative's children may be alternatives too
    nodes = (slots.nodes if slots else {})
    return [(nodes.get(c) or flow.nodes[c], c, flow, slots) for _, c in children(node.spec)
            if c in nodes or c in flow.nodes]


def _llm_gaps(project: Project, node, prompt_path, agent_id: str) -> list[Diagnostic]:
    out = []
    for i, check in enumerate(node.inference.checks if node.inference is not None else []):
        if check.inference is not None:
            out.append(node.inference_doc.diag(CODE, ("checks", i, "inference"),
                                               f"node {node.id}: judge inference checks are not run yet", HINT))
    agent = project.agents.get(agent_id)
    if agent is not None and agent.spec.subagents:
        out.append(agent.doc.diag(CODE, ("subagents",), f"agent {agent_id}: agent subagents are not run yet", HINT))
    return out
