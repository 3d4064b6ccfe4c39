"""Which project-level diagnostics an experiment depends on: those of the files its subject reads.

A collection error shows the experiment's own diagnostics and only the project errors of what its
subject runs (its flows and the flows they call, the agents, tools, MCP servers, inferences, prompts
and dataset they use), plus those of files every experiment shares (aqven.yaml, types/, code outside
flows/). An error in an unrelated flow or agent never stops it."""
from __future__ import annotations

from ..diagnostics import Diagnostic
from ..project import specs
from ..project.inferences import inference_path
from ..project.model import Experiment, Flow, Project

SCOPED = ("flows/", "agents/", "tools/", "mcp/", "datasets/", "experiments/")


def _flows(project: Project, experiment: Experiment) -> list[Flow]:
    """The subject, the flows its call nodes reach, and the flows variants plug in."""
    spec = experiment.spec
    todo = [spec.subject.flow] if spec else []
    if spec and spec.varies is not None and spec.varies.what == "flow":
        todo += [v for variant in spec.variants for v in variant.nodes.values()]
    seen: dict[str, Flow] = {}
    while todo:
        flow_id = todo.pop()
        flow = project.flow_for(experiment, flow_id)
        if flow is None or flow_id in seen:
            continue
        seen[flow_id] = flow
        nodes = list(flow.nodes.values()) + list(experiment.alternatives.values())
        todo += [n.spec.flow for n in nodes if isinstance(n.spec, specs.CallNode)]
    return list(seen.values())


def dependencies(project: Project, experiment: Experiment) -> set[str]:
    """Relative paths (files, or folders ending in /) of the project files the experiment reads."""
    rel = project.rel
    out = {rel(experiment.folder) + "/"}
    agents: set[str] = set()
    if experiment.spec is not None:
        out.add(f"datasets/{experiment.spec.cases.dataset}.yaml")
        agents |= {c.agent for c in experiment.spec.checks if c.agent}
        for c in experiment.spec.checks:           # a judge's inference, its prompt and variants
            found = inference_path(project, c.inference) if c.inference else None
            if found is not None:
                out.add(rel(found).removesuffix(".inference.yaml"))
        if experiment.spec.varies is not None and experiment.spec.varies.what == "agent":
            agents |= {a for v in experiment.spec.variants for a in v.nodes.values()}
    nodes = list(experiment.alternatives.values())
    for flow in _flows(project, experiment):
        out.add(rel(flow.folder) + "/")
        nodes += flow.nodes.values()
    tools: set[str] = set()
    for node in nodes:
        if node.inference_doc is not None:
            out.add(node.inference_doc.file.removesuffix(".inference.yaml"))   # its prompt and variants too
        if isinstance(node.spec, specs.LlmNode):
            agents.add(node.spec.agent)
        if isinstance(node.spec, specs.ToolNode):
            tools.add(node.spec.tool)
    todo = list(agents)
    while todo:                                    # subagents of agents are used too
        agent_id = todo.pop()
        out |= {f"agents/{agent_id}.yaml", f"agents/{agent_id}/"}
        agent = project.agents.get(agent_id)
        if agent is not None:
            tools |= set(agent.spec.tools)
            out |= {f"mcp/{m}.yaml" for m in agent.spec.mcp_servers}
            todo += [s.agent for s in agent.spec.subagents if s.agent not in agents]
            agents |= {s.agent for s in agent.spec.subagents}
    for tool_id in tools:
        out.add(f"tools/{tool_id}.yaml")
        tool = project.tools.get(tool_id)
        if tool is not None and tool.spec.mcp is not None:
            out.add(f"mcp/{tool.spec.mcp.server}.yaml")
    return out


def depends(diagnostic: Diagnostic, deps: set[str]) -> bool:
    file = diagnostic.file
    if not file.startswith(SCOPED):
        return True                                # aqven.yaml, types/, code/, fragments/...: shared by all
    return any(file == d or (d.endswith("/") and file.startswith(d)) or
               (not d.endswith("/") and file.startswith(d + ".")) for d in deps)


def collection_errors(project: Project, experiment: Experiment, project_level: list[Diagnostic],
                      own: list[Diagnostic]) -> list[Diagnostic]:
    """The errors that stop this experiment: its own and those of what it depends on, each line once."""
    deps = dependencies(project, experiment)
    errors = [d for d in own if d.severity == "error"]
    errors += [d for d in project_level if d.severity == "error" and depends(d, deps)]
    unique = {d.render(): d for d in errors}
    return sorted(unique.values(), key=Diagnostic.sort_key)
