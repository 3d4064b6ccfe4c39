"""`$...` references: parse once, resolve against the values of a run."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

_IDENT = r"[a-z][a-z0-9_]{0,62}"
_STEP = re.compile(rf"\.({_IDENT})|\[(\*|\d{{1,4}})\]")
_ROOT = re.compile(rf"^\$({_IDENT})")


class RefError(ValueError):
    pass


# roots that are not node ids: the flow input, the inference in/out, and the frames of containers
SCOPE_ROOTS = frozenset({"input", "run.context", "in", "out", "item", "index", "case", "acc", "iter", "loop",
                         "ok", "failed", "branch"})


@dataclass(frozen=True)
class Ref:
    text: str
    root: str                  # one of SCOPE_ROOTS, or a node id
    steps: tuple[str | int, ...]   # field names, indexes, "*" for a lift

    @property
    def node(self) -> str | None:
        return None if self.root in SCOPE_ROOTS else self.root


def lex(text: str) -> tuple[str, tuple[str | int, ...]]:
    """The grammar only: `$` + root + steps (`.field`, `[n]`, `[*]`). The checker and the runner share it."""
    m = _ROOT.match(text)
    if not m:
        raise RefError("it does not start with $ and a root such as $input or $<node>")
    pos, steps = m.end(), []
    while pos < len(text):
        s = _STEP.match(text, pos)
        if not s:
            raise RefError(f"cannot read it from position {pos + 1} ({text[pos:pos + 12]!r})")
        steps.append(s.group(1) if s.group(1) else ("*" if s.group(2) == "*" else int(s.group(2))))
        pos = s.end()
    return m.group(1), tuple(steps)


@lru_cache(maxsize=4096)
def parse(text: str) -> Ref:
    try:
        root, steps = lex(text)
    except RefError as exc:
        raise RefError(f"{text}: {exc}") from None
    if root == "run" and steps[:1] == ("context",):
        root, steps = "run.context", steps[1:]
    if root == "branch" and not (steps and isinstance(steps[0], str)):
        raise RefError(f"{text}: a branch reference reads $branch.<branch key>")
    if root not in SCOPE_ROOTS:
        if not steps or steps[0] != "out":
            raise RefError(f"{text}: a node reference reads $<node>.out")
        steps = steps[1:]
    return Ref(text, root, steps)


def walk(value: Any, steps: tuple[str | int, ...]) -> Any:
    """Follow steps; a missing step yields None, `[*]` maps the rest over a list."""
    for i, step in enumerate(steps):
        if step == "*":
            return [walk(v, steps[i + 1:]) for v in value] if isinstance(value, list) else None
        if isinstance(step, int):
            value = value[step] if isinstance(value, list) and step < len(value) else None
        else:
            value = value.get(step) if isinstance(value, dict) else None
        if value is None:
            return None
    return value


def resolve(ref: Ref, roots: Mapping[str, Any]) -> Any:
    if ref.root not in roots:
        if ref.root in SCOPE_ROOTS:
            raise RefError(f"{ref.text}: ${ref.root} has no value here")
        raise RefError(f"{ref.text}: {ref.root} has no value here (the node did not run before this one)")
    return walk(roots[ref.root], ref.steps)
