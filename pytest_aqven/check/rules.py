"""The rules of `aqven check` that need only the project (aqven.yaml's providers, types, agents, tools and
datasets); the rules that need a higher layer live in it (engine/flow_rules.py, experiments/experiment_rules.py,
providers/price_rules.py ...), and api/check.py runs them all in one order."""
from __future__ import annotations

import re
import unicodedata

from ..diagnostics import Diagnostic
from ..project.specs import FieldDecl, RecordTypeSpec, UnionTypeSpec
from .context import CheckContext, text_problem


def providers_and_agents(ctx: CheckContext) -> list[Diagnostic]:
    project = ctx.project
    out: list[Diagnostic] = []
    if project.spec is None or project.doc is None:     # aqven.yaml did not load: its own diagnostic says why
        return out
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


def type_rules(ctx: CheckContext) -> list[Diagnostic]:
    out = []
    for type_id, (spec, doc) in ctx.project.type_docs.items():
        fields: list[tuple[tuple[str | int, ...], FieldDecl]]
        if isinstance(spec, RecordTypeSpec):
            fields = [(("fields", i, "type"), f) for i, f in enumerate(spec.fields)]
        elif isinstance(spec, UnionTypeSpec):
            fields = [(("variants", j, "fields", i, "type"), f) for j, v in enumerate(spec.variants)
                      for i, f in enumerate(v.fields)]
        else:
            continue
        for path, f in fields:
            problem = ctx.types.problem(f.type)
            if problem:
                out.append(doc.diag("E_TYPE_UNKNOWN", path, f"type {type_id}: field {f.name}: {problem}",
                                    f"add types/<folder>/<snake_name>.yaml or name one of: {ctx.types.known_names()}"))
    return out


def _unknown(ctx: CheckContext, kind: str, name: str, known: dict) -> bool:
    return name not in known and not ctx.unreadable(kind, name)


def agent_rules(ctx: CheckContext) -> list[Diagnostic]:
    """What an agent names exists: tools, MCP servers, subagents (agent and inference), approved tools and
    the instructions file."""
    from ..project.inferences import load_inference
    project, out = ctx.project, []
    for agent_id, agent in project.agents.items():
        spec, doc, who = agent.spec, agent.doc, f"agent {agent_id}"
        for i, tool in enumerate(spec.tools):
            if _unknown(ctx, "tool", tool, project.tools):
                out.append(doc.diag("E_TOOL_UNKNOWN", ("tools", i), f"{who}: tool {tool} does not exist in the project",
                                    f"name a tool of tools/ ({', '.join(sorted(project.tools)) or 'none yet'})"))
        for i, server in enumerate(spec.mcp_servers):
            if _unknown(ctx, "mcp_server", server, project.mcp_servers):
                out.append(doc.diag("E_MCP_SERVER_UNKNOWN", ("mcp_servers", i),
                                    f"{who}: MCP server {server} does not exist in the project",
                                    f"name a server of mcp/ ({', '.join(sorted(project.mcp_servers)) or 'none yet'})"))
        for i, sub in enumerate(spec.subagents):
            if sub.agent == agent_id:
                out.append(doc.diag("E_AGENT_UNKNOWN", ("subagents", i, "agent"), f"{who}: subagent {sub.name} is the agent itself",
                                    "delegate to another agent"))
            elif _unknown(ctx, "agent", sub.agent, project.agents):
                out.append(doc.diag("E_AGENT_UNKNOWN", ("subagents", i, "agent"),
                                    f"{who}: subagent {sub.name}: agent {sub.agent} does not exist in the project",
                                    f"name an agent of agents/ ({', '.join(sorted(project.agents))})"))
            sink: list[Diagnostic] = []
            inference, _ = load_inference(project, sub.inference, sink)
            if inference is None and not sink:
                out.append(doc.diag("E_INFERENCE_UNKNOWN", ("subagents", i, "inference"),
                                    f"{who}: subagent {sub.name}: inference {sub.inference} has no file "
                                    f"{sub.inference}.inference.yaml in the project",
                                    "name the inference of an llm node, or write <id>.inference.yaml beside a node"))
        if spec.approval is not None:
            for i, tool in enumerate(spec.approval.tools):
                if tool not in spec.tools:
                    out.append(doc.diag("E_APPROVAL_TOOL_UNKNOWN", ("approval", "tools", i),
                                        f"{who}: approval names tool {tool}, which the agent does not have",
                                        f"name tools of the agent ({', '.join(spec.tools) or 'none'}) or add {tool} under tools"))
        name = spec.instructions_file
        if name is not None:
            base = project.root if name.startswith("@root/") else (project.root / doc.file).parent
            path = base / name.removeprefix("@root/")
            problem = text_problem(path)
            if problem:
                out.append(doc.diag("E_FILE_UNREADABLE", ("instructions",), f"{who}: instructions file {name} {problem}",
                                    f"write the instructions in {name} beside the agent, or inline"))
    return out


def tool_rules(ctx: CheckContext) -> list[Diagnostic]:
    project, out = ctx.project, []
    for tool_id, tool in project.tools.items():
        spec, doc, who = tool.spec, tool.doc, f"tool {tool_id}"
        for key in ("in_", "out"):
            for i, f in enumerate(getattr(spec, key)):
                problem = ctx.types.problem(f.type)
                if problem:
                    out.append(doc.diag("E_TYPE_UNKNOWN", (key.rstrip("_"), i, "type"), f"{who}: {problem}",
                                        f"add types/<folder>/<snake_name>.yaml or name one of: {ctx.types.known_names()}"))
        here = project.root / "tools" / f"{tool_id}.py"
        for path, ref in ((("run",), spec.run), (("wait", "poll"), spec.wait.poll if spec.wait else None)):
            if ref is not None:
                _, problem = ctx.resolver.resolve(ref, here)
                if problem:
                    out.append(doc.diag("E_CODE_REF_UNRESOLVED", path, f"{who}: {problem}",
                                        "write @root.<module>:<function> or <package>.<module>:<function>, and make "
                                        "the module import cleanly"))
        if spec.mcp is not None and _unknown(ctx, "mcp_server", spec.mcp.server, project.mcp_servers):
            out.append(doc.diag("E_MCP_SERVER_UNKNOWN", ("mcp", "server"), f"{who}: MCP server {spec.mcp.server} does not exist",
                                f"name a server of mcp/ ({', '.join(sorted(project.mcp_servers)) or 'none yet'})"))
        names = {f.name for f in spec.in_}
        for i, key in enumerate(spec.idempotency_key):
            if spec.run is not None and key not in names:
                out.append(doc.diag("E_BINDING_UNKNOWN", ("idempotency_key", i),
                                    f"{who}: idempotency_key names {key}, which is not an input of the tool",
                                    f"name inputs of the tool ({', '.join(sorted(names)) or 'none'})"))
    return out


# what a pytest node id cannot hold and give back: its separator, a parameter's brackets, a path's slashes,
# whitespace and control characters (-k, --lf and a node id given back would not find the case again)
NODE_ID_BREAKERS = re.compile(r"::|[\[\]/\\]|\s|[\x00-\x1f\x7f]")
NAME_HINT = ("name cases with letters, digits, `_`, `-` and `.`: a case's name is a part of its attempts' node ids "
             "(`<experiment file>::<variant>::<case>::<repeat>`)")


def dataset_rules(ctx: CheckContext) -> list[Diagnostic]:
    project, out = ctx.project, []
    for ds in project.datasets.values():
        seen: dict[str, int] = {}
        for i, case in enumerate(ds.spec.cases):
            breaker = NODE_ID_BREAKERS.search(case.name)
            if breaker is not None:
                out.append(ds.doc.diag("E_CASE_NAME_INVALID", ("cases", i, "name"),
                                       f"case name {case.name!r} of dataset {ds.id} holds {breaker.group()!r}, which a "
                                       "pytest node id cannot give back", NAME_HINT))
            key = unicodedata.normalize("NFC", case.name.strip())      # names that look the same are the same
            if key in seen:
                first = ds.spec.cases[seen[key]].name
                taken = f"is already taken by cases[{seen[key]}]" if first == case.name else \
                    f"is cases[{seen[key]}]'s {first!r} once Unicode-normalized and trimmed"
                out.append(ds.doc.diag("E_CASE_DUPLICATE", ("cases", i, "name"),
                                       f"case name {case.name} {taken} of dataset {ds.id}",
                                       "rename one of the cases: name is the case key and is unique in a dataset"))
            seen.setdefault(key, i)
        if ds.spec.flow is not None and ds.spec.flow not in project.flows and not ctx.unreadable("flow", ds.spec.flow):
            out.append(ds.doc.diag("E_FLOW_UNKNOWN", ("flow",), f"dataset {ds.id}: flow {ds.spec.flow} does not exist in the project",
                                   f"name a flow of the project ({', '.join(sorted(project.flows)) or 'none yet'}), or "
                                   "remove flow for a dataset that local flows of experiments run"))
    return out
