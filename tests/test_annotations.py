"""The package's functions carry their types: at least 95% of them fully annotated (every parameter but
self/cls, and the return), counted with ast over every def of pytest_aqven/ but the scaffold's templates,
which are the user's files."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest_aqven

PACKAGE = Path(pytest_aqven.__file__).parent
FLOOR = 0.95


def fully_annotated(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, [a.vararg, a.kwarg])]
    return fn.returns is not None and all(p.annotation is not None for p in params if p.arg not in ("self", "cls"))


def functions(root: Path) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    return [(f"{path.relative_to(root)}:{node.lineno} {node.name}", node)
            for path in sorted(root.rglob("*.py")) if "template" not in path.relative_to(root).parts
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_the_count_tells_a_bare_function_from_an_annotated_one():
    tree = ast.parse("def a(self, x: int) -> int: ...\ndef b(x) -> int: ...\ndef c(x: int): ...\n"
                     "def d(*args: int, **kw: str) -> None: ...\ndef e(*args, **kw) -> None: ...\n")
    assert [fully_annotated(fn) for fn in tree.body if isinstance(fn, ast.FunctionDef)] == \
        [True, False, False, True, False]


def test_at_least_95_percent_of_the_functions_are_fully_annotated():
    found = functions(PACKAGE)
    bare = [name for name, fn in found if not fully_annotated(fn)]
    share = 1 - len(bare) / len(found)
    assert share >= FLOOR, f"{share:.1%} of {len(found)} functions fully annotated; annotate some of: {bare[:20]}"
