"""Tool nodes and agent tools: Python function tools (sync and async), the model's tool calls with their
results going back, approvals answered from the case or refused, and MCP tools over stdio and streamable HTTP."""
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..engine_projects import agent, flow, inference, load, node, run, write
from .test_llm import PROVIDER, seen

TOOLS = '''
import asyncio
import threading
import time


def lookup(order_id: str) -> dict:
    time.sleep(0.05)
    return {"status": "shipped" if order_id.startswith("A") else "lost"}


ten = threading.Barrier(10, timeout=5)


def meet(order_id: str) -> dict:
    ten.wait()              # returns only when the ten calls run at the same time
    return {"status": order_id}


async def credit(order_id: str, amount: float) -> dict:
    await asyncio.sleep(0.01)
    if amount > 100:
        raise ValueError("too much")
    return {"status": f"credited {amount:g}"}
'''


def tool_yaml(description: str, run: str, ins: dict, outs: dict) -> dict:
    return {"apiVersion": "aqven/v1", "kind": "Tool", "description": description, "effect": "read", "run": run,
            "in": [{"name": k, "type": v} for k, v in ins.items()], "out": [{"name": k, "type": v} for k, v in outs.items()]}


BASE = {
    "tools/lookup.yaml": tool_yaml("Order status", "@root.tools.functions:lookup", {"order_id": "Text"}, {"status": "Text"}),
    "tools/credit.yaml": tool_yaml("Store credit", "@root.tools.functions:credit", {"order_id": "Text", "amount": "Float"},
                                   {"status": "Text"}),
    "tools/meet.yaml": tool_yaml("Meets", "@root.tools.functions:meet", {"order_id": "Text"}, {"status": "Text"}),
    "tools/__init__.py": "",
    "tools/functions.py": TOOLS,
}


def test_a_tool_node_runs_a_sync_or_an_async_function_tool(tmp_path):
    files = {**BASE,
             "flows/t/flow.yaml": flow(["look", "pay"], {"text": "$pay.out.status"}),
             "flows/t/nodes/look/look.node.yaml": node("tool", tool="lookup", in_=[{"name": "order_id", "from": "$input.text"}]),
             "flows/t/nodes/pay/pay.node.yaml": node("tool", tool="credit", in_=[{"name": "order_id", "from": "$input.text"},
                                                                               {"name": "amount", "value": 5}])}
    p = load(write(tmp_path, files, "toolnode"))
    result = run(p, "t", {"text": "A1"})
    assert result.error is None, result.error
    assert [n.output for n in result.nodes] == [{"status": "shipped"}, {"status": "credited 5"}]
    files["flows/t/nodes/pay/pay.node.yaml"]["in"][1]["value"] = 500
    p = load(write(tmp_path / "b", files, "toolnodebad"))
    bad = run(p, "t", {"text": "A1"})
    assert bad.error.code == "code_invalid" and "ValueError: too much at functions.py:22" in bad.error.message


def test_ten_parallel_tool_calls_run_at_the_same_time(tmp_path):
    body = {f"b{i}": f"b{i}" for i in range(10)}
    files = {**BASE,
             "flows/t/flow.yaml": flow(["fan"], {"text": "$fan.out.statuses[0]"}),
             "flows/t/nodes/fan/fan.node.yaml": node("parallel", body=body,
                                                     out=[{"name": "statuses", "type": "Text[]", "from": "$ok[*].status"}]),
             **{f"flows/t/nodes/fan/b{i}.node.yaml": node("tool", tool="meet",
                                                          in_=[{"name": "order_id", "from": "$input.text"}]) for i in range(10)}}
    p = load(write(tmp_path, files, "toolfan"))
    result = run(p, "t", {"text": "A1"})
    assert result.error is None, result.error
    assert result.nodes[0].output == {"statuses": ["A1"] * 10}     # bench/bench_engine.py times it


AGENT_SCRIPT = {"bot": [
    {"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"order_id": "A7"}},
                    {"id": "c2", "name": "credit", "arguments": {"order_id": "A7", "amount": 20}}],
     "finish_reason": "tool_calls"},
    {"text": '{"reply": "done"}'},
]}


def agent_project(tmp_path, package, approval=None, script=None, extra_files=None):
    extra = {"tools": ["lookup", "credit"]}
    if approval:
        extra["approval"] = approval
    files = {**BASE, **(extra_files or {}),
             "provider.py": PROVIDER,
             "script.json": json.dumps(script or AGENT_SCRIPT),
             "agents/bot.yaml": agent("fake:bot", **extra),
             "flows/qa/flow.yaml": flow(["answer"], {"text": "$answer.out.reply"}),
             "flows/qa/nodes/answer/answer.node.yaml": node("llm", agent="bot", in_=[{"name": "text", "from": "$input.text"}]),
             "flows/qa/nodes/answer/answer.inference.yaml": inference({"text": "Text"}, {"reply": "Text"}),
             "flows/qa/nodes/answer/answer.prompt.md": "Resolve the case."}
    return load(write(tmp_path, files, package))


def test_the_model_asks_the_tool_runs_and_the_answer_goes_back(tmp_path):
    p = agent_project(tmp_path, "agenttools")
    result = run(p, "qa", {"text": "refund A7"})
    assert result.error is None, result.error
    first, second = seen("agenttools")
    assert [t.name for t in first.tools] == ["lookup", "credit"]
    assert first.tools[1].parameters["required"] == ["order_id", "amount"]
    tool_messages = [m for m in second.messages if m.role == "tool"]
    assert [(m.tool_call_id, json.loads(m.content)) for m in tool_messages] == [
        ("c1", {"status": "shipped"}), ("c2", {"status": "credited 20"})]
    assert second.messages[-3].role == "assistant" and len(second.messages[-3].tool_calls) == 2
    calls = result.nodes[0].detail["tool_calls"]
    assert [c["tool"] for c in calls] == ["lookup", "credit"] and calls[1]["output"] == {"status": "credited 20"}
    assert result.nodes[0].calls[0].action == "tools"


@pytest.mark.parametrize("answers, approved", [
    ({"answer:credit": {"approved": True}}, True),
    ({"answer:credit": {"approved": False, "reason": "too generous"}}, False),
    ({}, False),                                            # no answer in the case: refused, never a wait
])
def test_approval_of_a_tool_call_is_answered_from_the_case_or_refused(tmp_path, answers, approved):
    approval = {"tools": ["credit"], "assignee": "lead", "timeout_seconds": 60, "on_timeout": {"policy": "fail"}}
    package = f"approve{len(answers)}{int(approved)}"
    p = agent_project(tmp_path, package, approval)
    result = run(p, "qa", {"text": "refund A7"}, node_outputs=answers)
    assert result.error is None, result.error
    tool_messages = [json.loads(m.content) for m in seen(package)[1].messages if m.role == "tool"]
    assert tool_messages[0] == {"status": "shipped"}                  # lookup needs no approval
    if approved:
        assert tool_messages[1] == {"status": "credited 20"}
    else:
        assert "was not approved" in tool_messages[1]["error"]
        assert result.nodes[0].detail["tool_calls"][1]["error"] == "refused"


def test_a_subagent_answers_the_agent_as_a_tool_and_its_call_is_the_attempts(tmp_path):
    """The resolver delegates to its researcher: the model calls the subagent with the inference's inputs, the
    researcher's agent answers the inference, its output goes back; its model call is traced and paid."""
    script = {"bot": [{"tool_calls": [{"id": "s1", "name": "research_policy", "arguments": {"topic": "refunds"}}]},
                      {"text": '{"reply": "done"}'}],
              "scholar": [{"text": '{"policy": "refunds within 30 days"}'}]}
    extra = {"agents/researcher.yaml": agent("fake:scholar"),
             "flows/research.inference.yaml": inference({"topic": "Text"}, {"policy": "Text"}),
             "flows/research.prompt.md": "Find the policy."}
    agent_project(tmp_path, "subagents", script=script, extra_files=extra)
    bot = tmp_path / "agents/bot.yaml"
    bot.write_text(bot.read_text().replace("tools:\n- lookup\n- credit\n", "subagents:\n- name: research_policy\n"
                                           "  description: Finds the policy that applies\n  agent: researcher\n"
                                           "  inference: research\n"))
    result = run(load(tmp_path), "qa", {"text": "refund A7"})
    assert result.error is None, result.error
    first, sub, last = seen("subagents")
    assert [(t.name, t.description) for t in first.tools] == [("research_policy", "Finds the policy that applies")]
    assert first.tools[0].parameters["required"] == ["topic"]
    assert sub.model == "scholar" and "refunds" in sub.messages[-1].content
    (message,) = [m for m in last.messages if m.role == "tool"]
    assert json.loads(message.content) == {"policy": "refunds within 30 days"}
    nested = next(n for n in result.nodes if n.node == "answer__research_policy")
    assert nested.parent == "answer" and nested.model == "fake:scholar" and nested.output == json.loads(message.content)
    assert result.cost_usd == pytest.approx(0.003)                # two calls of the bot and one of the researcher


def test_invalid_tool_arguments_go_back_to_the_model(tmp_path):
    script = {"bot": [{"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"order": "A7"}}]},
                      {"text": '{"reply": "done"}'}]}
    p = agent_project(tmp_path, "badargs", script=script)
    result = run(p, "qa", {"text": "x"})
    assert result.error is None
    (message,) = [m for m in seen("badargs")[1].messages if m.role == "tool"]
    assert "invalid arguments for lookup: order_id: Field required" in json.loads(message.content)["error"]


SERVER = Path(__file__).with_name("mcp_tiny_server.py")


def mcp_files() -> dict:
    return {
        "mcp/tiny.yaml": {"apiVersion": "aqven/v1", "kind": "McpServer", "description": "A tiny server",
                          "transport": "stdio", "command": ["python", str(SERVER)]},
        "tools/remote_lookup.yaml": {"apiVersion": "aqven/v1", "kind": "Tool", "description": "Order status over MCP",
                                     "effect": "read", "mcp": {"server": "tiny", "tool": "lookup_order"}},
        "tools/remote_fail.yaml": {"apiVersion": "aqven/v1", "kind": "Tool", "description": "Fails",
                                   "effect": "read", "mcp": {"server": "tiny", "tool": "fail"}},
    }


@pytest.mark.slow
def test_mcp_tools_over_stdio_in_a_tool_node_and_for_an_agent(tmp_path):
    files = {**mcp_files(),
             "flows/t/flow.yaml": flow(["look"], {"text": "$look.out.status"}),
             "flows/t/nodes/look/look.node.yaml": node("tool", tool="remote_lookup",
                                                       in_=[{"name": "order_id", "from": "$input.text"}])}
    p = load(write(tmp_path, files, "mcpnode"))
    result = run(p, "t", {"text": "A9"})
    assert result.error is None, result.error
    assert result.nodes[0].output == {"order_id": "A9", "status": "shipped"}

    script = {"bot": [{"tool_calls": [{"id": "m1", "name": "lookup_order", "arguments": {"order_id": "B2"}}]},
                      {"text": '{"reply": "done"}'}]}
    p = agent_project(tmp_path / "agent", "mcpagent", script=script, extra_files=mcp_files())
    agent_file = tmp_path / "agent/agents/bot.yaml"
    agent_file.write_text(agent_file.read_text().replace("tools:\n- lookup\n- credit\n", "mcp_servers:\n- tiny\n"))
    p = load(tmp_path / "agent")
    result = run(p, "qa", {"text": "where is B2"})
    assert result.error is None, result.error
    first, second = seen("mcpagent")
    assert sorted(t.name for t in first.tools) == ["fail", "lookup_order"]
    (message,) = [m for m in second.messages if m.role == "tool"]
    assert json.loads(message.content) == {"order_id": "B2", "status": "lost"}


def test_an_mcp_tool_error_is_the_nodes_error(tmp_path):
    files = {**mcp_files(),
             "flows/t/flow.yaml": flow(["boom"], {"text": "$boom.out.text"}),
             "flows/t/nodes/boom/boom.node.yaml": node("tool", tool="remote_fail",
                                                       in_=[{"name": "reason", "from": "$input.text"}])}
    p = load(write(tmp_path, files, "mcpfail"))
    result = run(p, "t", {"text": "no luck"})
    assert result.error.code == "code_invalid" and "MCP tool tiny.fail failed" in result.error.message


def test_without_the_optional_mcp_package_an_mcp_tool_says_how_to_install_it(tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)        # import mcp raises ImportError, as where it is missing
    files = {**mcp_files(),
             "flows/t/flow.yaml": flow(["look"], {"text": "$look.out.status"}),
             "flows/t/nodes/look/look.node.yaml": node("tool", tool="remote_lookup",
                                                       in_=[{"name": "order_id", "from": "$input.text"}])}
    result = run(load(write(tmp_path, files, "nomcp")), "t", {"text": "A9"})
    assert result.error.code == "MODEL_FEATURE_UNSUPPORTED"
    assert "MCP server tiny: MCP tools need the optional mcp package: pip install 'pytest-aqven[mcp]'" \
        in result.error.message


@pytest.fixture
def http_mcp(monkeypatch):
    """The tiny server over streamable HTTP on 127.0.0.1, answering only requests with its token."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = "tiny-token-7319"
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)], env={**os.environ, "TINY_TOKEN": token})
    try:                                        # the server never outlives the test, even one that did not start
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.time() < deadline, "the MCP server did not start"
                time.sleep(0.1)
        yield port, token
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_mcp_tools_over_streamable_http_with_a_secret_header(tmp_path, http_mcp, monkeypatch):
    port, token = http_mcp
    far = {"apiVersion": "aqven/v1", "kind": "McpServer", "description": "far", "transport": "streamable_http",
           "url": f"http://127.0.0.1:{port}/mcp", "headers": [{"name": "X-Token", "value": "ref:env/TINY_KEY"}]}
    files = {"mcp/far.yaml": far,
             "tools/remote_lookup.yaml": {"apiVersion": "aqven/v1", "kind": "Tool", "description": "Order status",
                                          "effect": "read", "mcp": {"server": "far", "tool": "lookup_order"}},
             "flows/t/flow.yaml": flow(["look"], {"text": "$look.out.status"}),
             "flows/t/nodes/look/look.node.yaml": node("tool", tool="remote_lookup",
                                                       in_=[{"name": "order_id", "from": "$input.text"}])}
    root = write(tmp_path, files, "mcphttp")
    monkeypatch.delenv("TINY_KEY", raising=False)
    result = run(load(root), "t", {"text": "A9"})
    assert result.error.code == "provider_key_missing" and "TINY_KEY" in result.error.message
    (root / ".env").write_text("TINY_KEY=wrong-token-0000\n")
    result = run(load(root), "t", {"text": "A9"})
    assert result.error.code == "provider_error" and "MCP server far" in result.error.message
    monkeypatch.setenv("TINY_KEY", token)                      # the environment wins over .env
    result = run(load(root), "t", {"text": "A9"})
    assert result.error is None, result.error
    assert result.nodes[0].output == {"order_id": "A9", "status": "shipped"}


def test_a_stdio_server_needs_its_command(tmp_path):
    from pytest_aqven.project.loader import load_project

    bad = {"apiVersion": "aqven/v1", "kind": "McpServer", "description": "no command", "transport": "stdio"}
    p = load_project(write(tmp_path, {"mcp/bad.yaml": bad}, "mcpbad"))
    assert any("a stdio server sets command" in d.message for d in p.diagnostics)
