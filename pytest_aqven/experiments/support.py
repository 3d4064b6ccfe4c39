"""What this version of the engine cannot run yet: named before any attempt, not found in every attempt.

`aqven check` accepts these (they are valid AQVEN); a series of an experiment that uses one would
only produce infrastructure errors, so collection stops with a diagnostic instead."""
from __future__ import annotations

from ..check.diagnostics import Diagnostic
from ..engine.prompts import is_template
from ..project.loader import Experiment, Project
from ..project.specs import CodeNode, LlmNode
from .checks import CheckInvalid
from .judges import compile_judge
from .plan import assemble

CODE = "E_RUNTIME_UNSUPPORTED"
HINT = "this version of pytest-aqven runs code and llm nodes with plain-text prompts"


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
    if spec.varies is not None and spec.varies.what == "flow":
        out.append(doc.diag(CODE, ("varies", "what"), "the flow factor is not run yet", HINT))
        return out
    seen: set[str] = set()
    for variant, assembly in assemble(project, experiment).items():
        for node_id in assembly.order:
            node = assembly.nodes.get(node_id) or assembly.flow.nodes.get(node_id)
            if node is None or str(node.path) in seen:     # a node that did not load: its own diagnostic says why
                continue
            seen.add(str(node.path))
            if not isinstance(node.spec, (CodeNode, LlmNode)):
                out.append(node.doc.diag(CODE, ("node",), f"node {node_id}: {node.kind} nodes are not run yet", HINT))
                continue
            if isinstance(node.spec, LlmNode):
                out += _llm_gaps(project, node, assembly.prompts.get(node_id, node.prompt_path),
                                 assembly.agents.get(node_id, node.spec.agent))
    return out


def _llm_gaps(project: Project, node, prompt_path, agent_id: str) -> list[Diagnostic]:
    out = []
    if node.inference is not None and node.inference.prompt is not None:
        out.append(node.inference_doc.diag(CODE, ("prompt",), f"node {node.id}: Python prompts are not run yet", HINT))
    if prompt_path is not None and is_template(prompt_path.read_text(encoding="utf-8", errors="replace")):
        out.append(Diagnostic(CODE, project.rel(prompt_path), (), f"node {node.id}: Liquid prompt templates are not run yet",
                              1, 1, HINT))
    return out
