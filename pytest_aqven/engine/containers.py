"""Container nodes: call, parallel, map, loop, switch. Each runs its children through NodeRunner.run_node in
a frame of its own, so children see their siblings by short id, then the enclosing scopes."""
from __future__ import annotations

import asyncio
from collections import ChainMap
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..project import specs
from ..project.types import pascal
from . import policies, refs
from .fit import errors_text
from .trace import MAX_CALL_DEPTH, RunError, models_failure, root_cause

if TYPE_CHECKING:
    from ..project.model import Node
    from .frame import Frame, NodeRunner
    from .trace import NodeTrace


def _policy(runner: "NodeRunner", node: "Node", node_id: str, slot: str, ref: Any) -> policies.Policy:
    try:
        return policies.load(slot, ref, lambda code: runner.resolve_code(code, node, f"node {node_id}: {slot}"))
    except policies.PolicyError as exc:
        raise RunError("E_POLICY_PARAMS", f"node {node_id}: {exc}") from None


async def _decide(runner: "NodeRunner", policy: policies.Policy, node: "Node", node_id: str, *args: Any) -> Any:
    """Built-ins are ours and instant; a user's policy is user code (thread or awaited, time limit)."""
    if policy.builtin:
        return policy.fn(*args, policy.params)
    return await runner.call_user(policy.fn, {}, node, f"node {node_id}: policy {policy.label}", "E_POLICY_RAISED",
                                  args=(*args, policy.params))


def within(error: RunError, node_id: str, where: str, policy: policies.Policy | None = None) -> RunError:
    """A child's error as the container's: named by the container and the item, branch or iteration, with
    the child's code (and where its code raised) kept, so the attempt is what the child's failure was.
    `policy`: the one that would have absorbed it, had it been the model's failure."""
    note = f" ({policy.slot} {policy.label} absorbs only the model's own failures)" if policy else ""
    return replace(error, node=None, message=f"node {node_id}: {where}: {error.message}{note}",
                   public=error.public and f"node {node_id}: {where}: {error.public}{note}")


def _unabsorbed(error: RunError, node_id: str, where: str, policy: policies.Policy) -> RunError | None:
    """An error no container policy absorbs: an infrastructure error anywhere shaped what the flow produced,
    so it is the attempt's (its original code), never an item skipped or a branch left out."""
    if models_failure(error):
        return None
    return within(root_cause(error), node_id, where, policy if policies.absorbs_errors(policy) else None)


def bind_out(runner: "NodeRunner", frame: "Frame", node: "Node", node_id: str, fields: Any, extra: dict[str, Any]) -> Any:
    """A container's `out`: each field from a reference read in the container's frame plus `extra`."""
    values = ChainMap(extra, frame.values)
    out = {}
    for f in fields:
        source = getattr(f, "from_", None)
        if source is None:
            continue
        try:
            out[f.name] = refs.resolve(refs.parse(source), values)
        except refs.RefError as exc:
            raise RunError("INPUT_INVALID", f"node {node_id}: out {f.name}: {exc}") from None
    return out


def validate_out(runner: "NodeRunner", frame: "Frame", node: "Node", node_id: str, fields: Any, value: dict,
                 what: str = "its out", at: tuple = ("out",)) -> Any:
    """A container's output in its declared fields: one that does not fit is the flow's bug, at `at` of the
    node's file (the out field at fault, or a switch case's bind)."""
    model = runner.record(f"{pascal(frame.assembly.flow.id)}{pascal(node_id)}Out", fields)
    return runner.fit(model, value, "CONTAINER_OUTPUT_INVALID", f"node {node_id}", what, fields, doc=node.doc, at=at,
                      entries=[f.name for f in fields] if at == ("out",) else None)


# --- call -----------------------------------------------------------------------------------
async def run_call(runner: "NodeRunner", frame: "Frame", node: "Node", node_id: str, trace: "NodeTrace") -> Any:
    spec: specs.CallNode = node.spec
    flow_id = frame.assembly.flows.get(node_id, spec.flow)       # a flow factor's variant plugs its flow in
    flow = runner.find_flow(flow_id, frame.assembly.flow)
    if flow is None:
        raise RunError("FLOW_NOT_FOUND", f"node {node_id}: flow {flow_id} does not exist")
    if flow.id in frame.calls or flow.id == frame.assembly.flow.id:
        raise RunError("E_CALL_RECURSIVE", f"node {node_id}: flow {flow.id} is already running "
                       f"({' -> '.join((*frame.calls, frame.assembly.flow.id, flow.id))})")
    if frame.depth + 1 > MAX_CALL_DEPTH:
        raise RunError("E_CALL_DEPTH", f"node {node_id}: calls are nested deeper than {MAX_CALL_DEPTH}")
    inputs = runner.bind(spec.in_, frame, node_id)
    trace.input = inputs
    try:
        in_model = runner.project.types.named(flow.spec.input)
    except LookupError as exc:
        raise RunError("INPUT_INVALID", f"node {node_id}: {exc}") from None
    inputs = runner.validate(in_model, inputs, "INPUT_INVALID", f"node {node_id}: the input of flow {flow.id}")
    inner = frame.nested(node_id, flow, inputs)
    for child in flow.spec.order:
        await runner.run_node(inner, child)
    return runner.returns(flow, inner.values)


# --- parallel -------------------------------------------------------------------------------
async def run_parallel(runner: "NodeRunner", frame: "Frame", node: "Node", node_id: str, trace: "NodeTrace") -> Any:
    spec: specs.ParallelNode = node.spec
    join = _policy(runner, node, node_id, "join", spec.join)
    frames = {key: frame.enter(node_id, branch=key) for key in spec.body}
    tasks = {asyncio.ensure_future(runner.run_node(frames[key], child)): key for key, child in spec.body.items()}
    pending = set(tasks)
    completed: list[policies.BranchResult] = []
    outputs: dict[str, Any] = {}
    typed: dict[str, Any] = {}           # each output as the join's annotation types it
    errors: dict[str, RunError] = {}
    try:
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            unabsorbed: RunError | None = None
            for task in sorted(done, key=lambda t: list(spec.body).index(tasks[t])):
                key = tasks[task]
                error = task.exception()
                if error is None:
                    outputs[key] = task.result()
                    typed[key] = _typed(join, outputs[key], node_id, f"branch {key}'s output")
                    completed.append(policies.BranchResult(key, typed[key]))
                elif isinstance(error, RunError):
                    unabsorbed = unabsorbed or _unabsorbed(error, node_id, f"branch {key}", join)
                    errors[key] = error
                    completed.append(policies.BranchResult(key, None, f"{error.code}: {error.message}"))
                else:
                    raise error
            if unabsorbed is not None:      # before the join decides: it never sees an infrastructure error
                raise unabsorbed
            state = policies.JoinState(tuple(completed), tuple(tasks[t] for t in tasks if t in pending))
            decision = await _decide(runner, join, node, node_id, state)
            kind = policies.kind_of(decision)
            if kind == "Wait":
                continue
            if kind == "Done":
                chosen = [v for v in getattr(decision, "value", ())]
                ok = _in_body_order(chosen, typed, outputs, spec.body)
                failed = [{"key": k, "code": e.code, "message": e.message} for k, e in errors.items()]
                return validate_out(runner, frame, node, node_id, spec.out,
                                    bind_out(runner, frame, node, node_id, spec.out,
                                             {"ok": ok, "branch": dict(outputs), "failed": failed}))
            if kind == "Fail":
                reason = str(getattr(decision, "reason", "the join failed"))
                # a branch's own failure keeps its code (a refusal stays a refusal); an unmet rule is the join's
                first = next((e for e in errors.values() if reason == f"{e.code}: {e.message}"), None)
                if first is not None:
                    raise within(first, node_id, f"branch {_key_of(errors, first)}")
                # unmet because branches failed: the attempt is what their failures are (experiments/attempt.py)
                raise RunError("E_JOIN_FAILED", f"node {node_id}: join {join.label}: {reason}",
                               causes=tuple(errors[k] for k in spec.body if k in errors))
            raise RunError("E_POLICY_RAISED", f"node {node_id}: join {join.label} returned {kind}, "
                           "not Wait, Done or Fail")
        raise RunError("E_JOIN_UNDECIDED", f"node {node_id}: join {join.label} made no decision after every branch")
    finally:
        await _cancel(pending, runner, tasks, spec.body, frame, node_id)


def _typed(policy: policies.Policy, value: Any, node_id: str, what: str) -> Any:
    """A value as the user's policy is typed to receive it (a model of its annotation)."""
    try:
        return policy.values.decode(value)
    except ValidationError as exc:
        raise RunError("E_POLICY_RAISED", f"node {node_id}: policy {policy.label} takes {policy.values.label}, "
                       f"but {what} does not fit it: {errors_text(exc)}") from None


def _in_body_order(chosen: list, typed: dict[str, Any], outputs: dict[str, Any], body: dict[str, str]) -> list:
    """Done's values in the order of `body` when they are branch outputs (reproducible), else as given
    (values the policy made itself, as JSON)."""
    keys = []
    for value in chosen:
        key = next((k for k, v in typed.items() if v is value and k not in keys), None)
        if key is None:
            return [policies.to_json(v) for v in chosen]
        keys.append(key)
    order = list(body)
    return [outputs[k] for k in sorted(keys, key=order.index)]


def _key_of(errors: dict[str, RunError], error: RunError) -> str:
    return next(k for k, e in errors.items() if e is error)


async def _cancel(pending: set[asyncio.Task], runner: "NodeRunner", tasks: dict[asyncio.Task, str], body: dict[str, Any], frame: "Frame", node_id: str) -> None:
    """Branches still running when the join decided: cancelled (their traces say so)."""
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)


# --- map ------------------------------------------------------------------------------------
async def run_map(runner: "NodeRunner", frame: "Frame", node: "Node", node_id: str, trace: "NodeTrace") -> Any:
    spec: specs.MapNode = node.spec
    try:
        items = refs.resolve(refs.parse(spec.over), frame.values)
    except refs.RefError as exc:
        raise RunError("INPUT_INVALID", f"node {node_id}: over: {exc}") from None
    if not isinstance(items, list):
        raise RunError("E_MAP_OVER_NOT_LIST", f"node {node_id}: over {spec.over} is {type(items).__name__}, not a list")
    trace.input = {"items": len(items)}
    rule = _policy(runner, node, node_id, "on_item_error", spec.on_item_error)
    gate = asyncio.Semaphore(spec.concurrency or max(len(items), 1))

    async def one(index: int, item: Any) -> Any:
        async with gate:
            child = frame.enter(node_id, item=index)
            child.values.update({"item": item, "index": index})
            try:
                return await runner.run_node(child, spec.body)
            except RunError as error:
                if not models_failure(error):   # the attempt's outcome is decided: the items after it never start
                    for later in tasks[index + 1:]:
                        later.cancel()
                raise

    tasks = [asyncio.ensure_future(one(i, item)) for i, item in enumerate(items)]
    values: dict[int, Any] = {}
    failed: list[dict] = []
    try:
        for index, task in enumerate(tasks):
            try:
                values[index] = await task
                continue
            except RunError as err:
                error = err
            unabsorbed = _unabsorbed(error, node_id, f"item {index}", rule)
            if unabsorbed is not None:
                raise unabsorbed
            decision = await _decide(runner, rule, node, node_id, _typed(rule, items[index], node_id, f"item {index}"),
                                     policies.MapItemError(index=index, code=error.code[:64],
                                                           message=error.message[:400]))
            kind = policies.kind_of(decision)
            if kind == "Skip":
                failed.append({"index": index, "code": error.code, "message": error.message[:400]})
            elif kind == "Default":
                values[index] = policies.to_json(getattr(decision, "value", None))
                failed.append({"index": index, "code": error.code, "message": error.message[:400]})
            elif kind == "Fail":
                if rule.builtin:   # on_item_error fail: the item's own failure is the node's
                    raise within(error, node_id, f"item {index}")
                raise RunError("E_MAP_ITEM_FAILED", f"node {node_id}: item {index}: {getattr(decision, 'reason', '')}")
            else:
                raise RunError("E_POLICY_RAISED", f"node {node_id}: on_item_error {rule.label} returned {kind}, "
                               "not Skip, Default or Fail")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    trace.detail["recovered_items"] = [f["index"] for f in failed]
    ok = [values[i] for i in sorted(values)]
    return validate_out(runner, frame, node, node_id, spec.out,
                        bind_out(runner, frame, node, node_id, spec.out, {"ok": ok, "failed": failed}))


# --- loop -----------------------------------------------------------------------------------
async def run_loop(runner: "NodeRunner", frame: "Frame", node: "Node", node_id: str, trace: "NodeTrace") -> Any:
    spec: specs.LoopNode = node.spec
    stops = [_policy(runner, node, node_id, "stop", s) for s in spec.stop]
    select = _policy(runner, node, node_id, "select", spec.select)
    iterations: list[dict] = []
    reason = "max_iter"
    for iteration in range(spec.max_iter):
        acc = iterations[-1] if iterations else {child: None for child in spec.body}
        child = frame.enter(node_id, iteration=iteration)
        child.values["acc"] = acc
        if iteration == 0:
            child.init = {c: runner.bind(b, frame, node_id) for c, b in spec.init.items()}
        record: dict[str, Any] = {}
        try:
            for child_id in spec.body:
                record[child_id] = {"out": await runner.run_node(child, child_id)}
        except RunError as error:       # whichever pass select would pick, a failed pass fails the loop
            raise replace(within(error, node_id, f"iteration {iteration}"), node=error.node) from None
        iterations.append(record)
        state = policies.LoopState(tuple(iterations))
        stopped = None
        for rule in stops:
            decision = await _decide(runner, rule, node, node_id, state)
            if policies.kind_of(decision) == "Stop":
                stopped = getattr(decision, "reason", rule.label)
                break
        if stopped is not None:
            reason = "policy"
            trace.detail["stop_rule"] = str(stopped)
            break
    state = policies.LoopState(tuple(iterations))
    chosen = await _decide(runner, select, node, node_id, state)
    if not isinstance(chosen, int) or isinstance(chosen, bool) or not 0 <= chosen < len(iterations):
        raise RunError("E_POLICY_RAISED", f"node {node_id}: select {select.label} returned {chosen!r}, "
                       f"not an iteration index 0..{len(iterations) - 1}")
    trace.detail.update(iterations=len(iterations), stop_reason=reason, selected=chosen)
    loop = {"iterations": len(iterations), "stop_reason": reason}
    return validate_out(runner, frame, node, node_id, spec.out,
                        bind_out(runner, frame, node, node_id, spec.out, {"iter": iterations[chosen], "loop": loop}))


# --- switch ---------------------------------------------------------------------------------
async def run_switch(runner: "NodeRunner", frame: "Frame", node: "Node", node_id: str, trace: "NodeTrace") -> Any:
    spec: specs.SwitchNode = node.spec
    try:
        value = refs.resolve(refs.parse(spec.on), frame.values)
    except refs.RefError as exc:
        raise RunError("INPUT_INVALID", f"node {node_id}: on: {exc}") from None
    key = runner.case_key(value, spec.cases)
    if key is None:
        raise RunError("E_SWITCH_NO_CASE", f"node {node_id}: no case for {value!r} "
                       f"(cases: {', '.join(spec.cases)})")
    trace.detail["case"] = key
    case = spec.cases[key]
    child = frame.enter(node_id)
    child.values["case"] = value
    if case.node is not None:
        await runner.run_node(child, case.node)
    out = runner.bind(case.bind, child, node_id)
    return validate_out(runner, frame, node, node_id, spec.out, out, f"the bind of case {key}",
                        ("cases", key, "bind") if case.bind else ("cases", key))
