"""A project shaped like the seeds' support_case: parallel drafts, a call to a judge-panel flow (judges in
parallel, a tie-break), a polish loop of revise and critique, a switch, a tool node, a human approval
answered from the case and a narrow. Used by the engine tests and by bench/bench_engine.py."""
from __future__ import annotations

import json
from pathlib import Path

from .engine_projects import agent, flow, inference, node, record, write

PROVIDER = '''
import json


def complete(request):
    """A deterministic model per node: drafts, judges, a tie-break, revise and critique."""
    ask = next(m.content for m in request.messages if m.role == "user")
    data = {}
    for line in ask.splitlines():          # the plain-text prompt's inputs: "- name: <json>"
        name, _, value = line.removeprefix("- ").partition(": ")
        try:
            data[name] = json.loads(value)
        except json.JSONDecodeError:
            pass
    node = request.node
    if node in ("gpt", "mistral", "gemini"):
        if node == "gemini" and "refuse" in ask:
            return {"refusal": "I cannot draft this", "finish_reason": "refusal", "tokens_in": 30}
        answer = {"reply": f"{node} draft"}
    elif node in ("deepseek", "qwen", "llama"):
        split = "split" in ask
        answer = {"reason": "closest to the policy", "pick": {"deepseek": 0, "qwen": 1, "llama": 2}[node] if split else 0}
    elif node == "tie_break":
        answer = {"reason": "most complete", "pick": 1}
    elif node == "revise":
        answer = {"reply": (data.get("previous") or "") + " (revised)"}
    elif node == "critique":
        answer = {"note": "clearer", "score": min(1.0, 0.5 + 0.2 * data.get("reply", "").count("revised"))}
    else:
        raise ValueError(f"no model for node {node}")
    return {"text": json.dumps(answer), "tokens_in": 100, "tokens_out": 20, "cost_usd": 0.0001, "latency_ms": 50.0}
'''

CODE = '''
def prepare(text: str) -> dict:
    return {"summary": text.strip(), "kind": "defect" if "broken" in text else "question"}


def aggregate(picks: list[int]) -> dict:
    top = max(set(picks), key=picks.count)
    return {"pick": top, "agreed": picks.count(top) * 2 > len(picks)}


def finish(candidates: list[str], pick: int, settled_by: str) -> dict:
    return {"winner": candidates[pick], "verdict": settled_by}


def resolve(summary: str) -> dict:
    return {"resolution": "replace" if "broken" in summary else "advice"}


def lookup_order(order_id: str) -> dict:
    return {"status": "shipped" if order_id.startswith("A") else "unknown"}
'''


def _llm(agent_id: str, inf: str | None, binds: dict[str, str]) -> dict:
    extra = {"inference": inf} if inf else {}
    return node("llm", agent=agent_id, in_=[{"name": k, "from": v} for k, v in binds.items()], **extra)


def files() -> dict:
    nodes = "flows/support_case/nodes"
    panel = "flows/judge_panel/nodes"
    out = {
        "provider.py": PROVIDER,
        "code.py": CODE,
        "tools/lookup_order.yaml": {"apiVersion": "aqven/v1", "kind": "Tool", "description": "Order status",
                                    "effect": "read", "run": "@root.code:lookup_order",
                                    "in": [{"name": "order_id", "type": "Text"}], "out": [{"name": "status", "type": "Text"}]},
        "types/case_request.yaml": record("A support case", text="Text", order_id="Text"),
        "types/case_outcome.yaml": record("What the flow decided", reply="Text", resolution="Text", score="Float",
                                          iterations="Int", approved="Bool", winner="Text", verdict="Text", status="Text"),
        "types/panel_request.yaml": record("Candidates for the panel", summary="Text", candidates="Text[]"),
        "types/panel_outcome.yaml": record("The panel's pick", winner="Text", verdict="Text"),
        "types/approval.yaml": record("A lead's approval", approved="Bool", note="Text?"),
        **{f"agents/{a}.yaml": agent(f"fake:{a}-1") for a in ("gpt", "mistral", "gemini", "deepseek", "qwen", "llama")},
        # support_case
        "flows/support_case/flow.yaml": flow(
            ["prepare", "drafts", "panel", "polish", "route", "lookup", "approve", "to_record"],
            {"reply": "$polish.out.reply", "resolution": "$route.out.resolution", "score": "$polish.out.score",
             "iterations": "$polish.out.iterations", "approved": "$to_record.out.approved",
             "winner": "$panel.out.winner", "verdict": "$panel.out.verdict", "status": "$lookup.out.status"},
            input="CaseRequest", output="CaseOutcome"),
        f"{nodes}/prepare/prepare.node.yaml": node("code", run="@root.code:prepare",
                                                   in_=[{"name": "text", "from": "$input.text"}],
                                                   out=[{"name": "summary", "type": "Text"}, {"name": "kind", "type": "Text"}]),
        f"{nodes}/drafts/drafts.node.yaml": node(
            "parallel", body={"gpt": "gpt", "mistral": "mistral", "gemini": "gemini"},
            join={"use": "quorum", "with": {"min_ok": 2, "on_error": "skip"}},
            out=[{"name": "candidates", "type": "Text[]", "from": "$ok[*].reply"}]),
        **{f"{nodes}/drafts/{a}.node.yaml": _llm(a, "draft", {"summary": "$prepare.out.summary"})
           for a in ("gpt", "mistral", "gemini")},
        f"{nodes}/drafts/draft.inference.yaml": inference({"summary": "Text"}, {"reply": "Text"}),
        f"{nodes}/drafts/draft.prompt.md": "Draft a reply to the customer.",
        f"{nodes}/panel/panel.node.yaml": node("call", flow="judge_panel", in_=[
            {"name": "summary", "from": "$prepare.out.summary"}, {"name": "candidates", "from": "$drafts.out.candidates"}]),
        f"{nodes}/polish/polish.node.yaml": node(
            "loop", body=["revise", "critique"], init={"revise": [{"name": "previous", "from": "$panel.out.winner"}]},
            max_iter=3, stop=[{"use": "threshold", "with": {"path": "$iter.critique.out.score", "gte": 0.85}},
                              {"use": "stagnation", "with": {"path": "$iter.critique.out.score", "window": 1,
                                                             "min_delta": 0.02}}],
            select={"use": "best", "with": {"path": "$iter.critique.out.score"}},
            out=[{"name": "reply", "type": "Text", "from": "$iter.revise.out.reply"},
                 {"name": "score", "type": "Float", "from": "$iter.critique.out.score"},
                 {"name": "iterations", "type": "Int", "from": "$loop.iterations"}]),
        f"{nodes}/polish/revise.node.yaml": _llm("gpt", None, {"previous": "$acc.revise.out.reply",
                                                               "summary": "$prepare.out.summary"}),
        f"{nodes}/polish/revise.inference.yaml": inference({"previous": "Text?", "summary": "Text"}, {"reply": "Text"}),
        f"{nodes}/polish/revise.prompt.md": "Improve the reply.",
        f"{nodes}/polish/critique.node.yaml": _llm("deepseek", None, {"reply": "$revise.out.reply"}),
        f"{nodes}/polish/critique.inference.yaml": inference({"reply": "Text"}, {"note": "Text", "score": "Score"}),
        f"{nodes}/polish/critique.prompt.md": "Score the reply.",
        f"{nodes}/route/route.node.yaml": node("switch", on="$prepare.out.kind", cases={
            "defect": {"node": "resolve", "bind": [{"name": "resolution", "from": "$resolve.out.resolution"}]},
            "question": {"bind": [{"name": "resolution", "value": "advice"}]}},
            out=[{"name": "resolution", "type": "Text"}]),
        f"{nodes}/route/resolve.node.yaml": node("code", run="@root.code:resolve",
                                                 in_=[{"name": "summary", "from": "$prepare.out.summary"}],
                                                 out=[{"name": "resolution", "type": "Text"}]),
        f"{nodes}/lookup/lookup.node.yaml": node("tool", tool="lookup_order",
                                                 in_=[{"name": "order_id", "from": "$input.order_id"}]),
        f"{nodes}/approve/approve.node.yaml": node("human", form="Json", assignee="support_lead", timeout_seconds=14400,
                                                   on_timeout={"policy": "fail"},
                                                   in_=[{"name": "reply", "from": "$polish.out.reply"},
                                                        {"name": "resolution", "from": "$route.out.resolution"}]),
        f"{nodes}/to_record/to_record.node.yaml": node("narrow", from_="$approve.out", to="Approval"),
        # judge_panel
        "flows/judge_panel/flow.yaml": flow(["judges", "aggregate", "settle", "finish"],
                                            {"winner": "$finish.out.winner", "verdict": "$finish.out.verdict"},
                                            input="PanelRequest", output="PanelOutcome"),
        f"{panel}/judges/judges.node.yaml": node(
            "parallel", body={"deepseek": "deepseek", "qwen": "qwen", "llama": "llama"}, join={"use": "all"},
            out=[{"name": "picks", "type": "Int[]", "from": "$ok[*].pick"}]),
        **{f"{panel}/judges/{a}.node.yaml": _llm(a, "judge", {"summary": "$input.summary", "candidates": "$input.candidates"})
           for a in ("deepseek", "qwen", "llama")},
        f"{panel}/judges/judge.inference.yaml": inference({"summary": "Text", "candidates": "Text[]"},
                                                          {"reason": "Text", "pick": "Int"}),
        f"{panel}/judges/judge.prompt.md": "Pick the best candidate.",
        f"{panel}/aggregate/aggregate.node.yaml": node("code", run="@root.code:aggregate",
                                                       in_=[{"name": "picks", "from": "$judges.out.picks"}],
                                                       out=[{"name": "pick", "type": "Int"}, {"name": "agreed", "type": "Bool"}]),
        f"{panel}/settle/settle.node.yaml": node("switch", on="$aggregate.out.agreed", cases={
            "true": {"bind": [{"name": "pick", "from": "$aggregate.out.pick"}, {"name": "settled_by", "value": "panel"}]},
            "false": {"node": "tie_break", "bind": [{"name": "pick", "from": "$tie_break.out.pick"},
                                                    {"name": "settled_by", "value": "tie_break"}]}},
            out=[{"name": "pick", "type": "Int"}, {"name": "settled_by", "type": "Text"}]),
        f"{panel}/settle/tie_break.node.yaml": _llm("gpt", None, {"summary": "$input.summary",
                                                                  "candidates": "$input.candidates"}),
        f"{panel}/settle/tie_break.inference.yaml": inference({"summary": "Text", "candidates": "Text[]"},
                                                              {"reason": "Text", "pick": "Int"}),
        f"{panel}/settle/tie_break.prompt.md": "Break the tie.",
        f"{panel}/finish/finish.node.yaml": node("code", run="@root.code:finish", in_=[
            {"name": "candidates", "from": "$input.candidates"}, {"name": "pick", "from": "$settle.out.pick"},
            {"name": "settled_by", "from": "$settle.out.settled_by"}],
            out=[{"name": "winner", "type": "Text"}, {"name": "verdict", "type": "Text"}]),
    }
    return out


def make(root: Path, package: str) -> Path:
    return write(root, files(), package)


def trace_lines(result) -> list[str]:
    """One line per node execution: address, status, model, tokens, cost, latency, retries, output."""
    lines = []
    for n in result.nodes:
        where = "".join(f" {k}={v}" for k, v in (("branch", n.branch), ("iter", n.iteration), ("item", n.item))
                        if v is not None)
        calls = "".join(f" {c.model}:{c.outcome}{'/' + c.action if c.action else ''}" for c in n.calls)
        cost = f" ${n.cost_usd:.4f}" if n.calls else ""
        out = json.dumps(n.output, ensure_ascii=False)
        out = out if len(out) <= 60 else out[:57] + "..."
        error = f" {n.error_code}: {n.error_message}" if n.error_code else ""
        lines.append(f"{n.node}{where} [{n.kind}] {n.status}{calls}{cost} {n.latency_ms:.0f}ms{error} -> {out}")
    return lines
