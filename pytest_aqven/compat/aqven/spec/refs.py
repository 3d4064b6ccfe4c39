"""`aqven.spec.refs`: `$...` references parsed into a root and steps, with the position of a syntax error.
The grammar is the engine's (engine/refs.py): `$input`, `$in`, `$out`, `$item`, `$index`, `$case`, `$acc`,
`$iter`, `$loop`, `$ok`, `$failed`, `$branch.<key>`, `$run.context.<key>`, `$<node>.out`, then `.field`,
`[n]` or `[*]` steps."""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Union

from .names import NodeId, RunContextKey

_IDENT = re.compile(r"[a-z][a-z0-9_]{0,62}")
_STEP = re.compile(r"\.(?P<field>[a-z][a-z0-9_]{0,62})|(?P<lift>\[\*\])|\[(?P<index>[0-9]{1,4})\]")


class RefRoot(StrEnum):
    INPUT = "input"
    IN = "in"
    OUT = "out"
    ITEM = "item"
    INDEX = "index"
    CASE = "case"
    ACC = "acc"
    ITER = "iter"
    LOOP = "loop"
    BRANCH = "branch"
    OK = "ok"
    FAILED = "failed"
    RUN_CONTEXT = "run_context"
    NODE = "node"


_SIMPLE = {r.value: r for r in RefRoot if r not in (RefRoot.BRANCH, RefRoot.RUN_CONTEXT, RefRoot.NODE)}


@dataclass(frozen=True, slots=True)
class FieldStep:
    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclass(frozen=True, slots=True)
class LiftStep:
    def __str__(self) -> str:
        return "[*]"


@dataclass(frozen=True, slots=True)
class IndexStep:
    index: int

    def __str__(self) -> str:
        return f"[{self.index}]"


RefStep = Union[FieldStep, LiftStep, IndexStep]


@dataclass(frozen=True, slots=True)
class Ref:
    root: RefRoot
    node_id: NodeId | None
    key: str | None               # the branch key of $branch.<key>, the context key of $run.context.<key>
    steps: tuple[RefStep, ...]

    def __str__(self) -> str:
        head = {RefRoot.NODE: f"${self.node_id}.out", RefRoot.BRANCH: f"$branch.{self.key}",
                RefRoot.RUN_CONTEXT: f"$run.context.{self.key}"}.get(self.root, f"${self.root.value}")
        return head + "".join(map(str, self.steps))


class RefSyntaxError(ValueError):
    def __init__(self, text: str, position: int, reason: str) -> None:
        super().__init__(f"{text!r}, position {position}: {reason}")
        self.text = text
        self.position = position
        self.reason = reason


def parse_ref(text: str) -> Ref:
    if not text.startswith("$"):
        raise RefSyntaxError(text, 0, "a reference starts with $")
    name = _IDENT.match(text, 1)
    if name is None:
        raise RefSyntaxError(text, 1, "expected a reference root after $: input, in, item, ..., or a node name")
    root, node, key, end = _head(text, name.group(), name.end())
    steps: list[RefStep] = []
    while end < len(text):
        step = _STEP.match(text, end)
        if step is None:
            raise RefSyntaxError(text, end, "a reference step is .field, [*] or [n]")
        if step.group("field") is not None:
            steps.append(FieldStep(step.group("field")))
        elif step.group("index") is not None:
            steps.append(IndexStep(int(step.group("index"))))
        else:
            steps.append(LiftStep())
        end = step.end()
    return Ref(root, node, key, tuple(steps))


def _head(text: str, name: str, end: int) -> tuple[RefRoot, NodeId | None, str | None, int]:
    if name in _SIMPLE:
        return _SIMPLE[name], None, None, end
    if name == "branch":
        key = _IDENT.match(text, end + 1) if text.startswith(".", end) else None
        if key is None:
            raise RefSyntaxError(text, end, "expected .<branch key> after $branch")
        return RefRoot.BRANCH, None, key.group(), key.end()
    if name == "run":
        prefix = ".context."
        key = _IDENT.match(text, end + len(prefix)) if text.startswith(prefix, end) else None
        if key is None or key.group() not in set(RunContextKey):
            raise RefSyntaxError(text, end, "expected .context.<key> after $run: date, time_zone, locale or tenant_id")
        return RefRoot.RUN_CONTEXT, None, key.group(), key.end()
    if not text.startswith(".out", end) or re.match(r"[a-z0-9_]", text[end + 4:end + 5]):
        raise RefSyntaxError(text, end, f"expected .out after $<node>: ${name}.out")
    return RefRoot.NODE, NodeId(name), None, end + 4


__all__ = ["FieldStep", "IndexStep", "LiftStep", "Ref", "RefRoot", "RefStep", "RefSyntaxError", "parse_ref"]
