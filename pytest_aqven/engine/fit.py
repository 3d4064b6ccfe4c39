"""A value that must fit its declared type on its way out of a code node, a container, a tool, a narrow node or
a flow's returns. When it does not, that is a bug of the flow (pytest_aqven.codes): the error names the node,
each field, the type declared for it, the kind of value found (never the value: held-out runs show it too)
and where the value was made, the user's file:line."""
from __future__ import annotations

import ast
import inspect
import os
import textwrap
from typing import TYPE_CHECKING, Any, Callable, Iterable

from pydantic import ValidationError

from .trace import RunError

if TYPE_CHECKING:
    from ..project.yamlpos import YamlDoc

_KINDS = ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"), (list, "a list"),
          (dict, "an object"))


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    return next((word for t, word in _KINDS if isinstance(value, t)), type(value).__name__)


def _path(loc: tuple) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the value"


def mismatches(exc: ValidationError, fields: Iterable = (), expected: str = "an object of its declared fields"
               ) -> list[str]:
    """Each field that does not fit, in words: `words is a string, not Int`, `text is missing (Text)`; a
    whole value of the wrong kind: `it is a list, not <expected>`."""
    declared = {f.name: f.type for f in fields}
    out = []
    for e in exc.errors()[:5]:
        loc, kind = tuple(e["loc"]), e["type"]
        if not loc and (kind.endswith("_type") or kind.endswith("_parsing")):
            out.append(f"it is {kind_of(e.get('input'))}, not {expected}")
            continue
        path = _path(loc)
        top = declared.get(loc[0]) if loc and isinstance(loc[0], str) else None
        if kind == "missing":
            out.append(f"{path} is missing" + (f" ({top})" if top else ""))
        elif kind == "extra_forbidden":
            out.append(f"{path} is not declared")
        elif kind.startswith("union_tag"):      # pydantic's words quote the tag found: a value
            out.append(f"{path} names no variant of its union" + (f" ({top})" if top else ""))
        elif top and len(loc) == 1 and kind in ("literal_error", "enum"):    # the type's values, never the value
            found = kind_of(e.get("input"))
            out.append(f"{path} is {found}{' outside' if found == 'a string' else ', not'} {top} "
                       f"(one of {e.get('ctx', {}).get('expected', '?')})")
        elif top and len(loc) == 1 and (kind.endswith("_type") or kind.endswith("_parsing")
                                        or kind == "model_attributes_type"):
            out.append(f"{path} is {kind_of(e.get('input'))}, not {top}")
        else:                   # a constraint, or a field inside a record: pydantic's words say which rule
            out.append(f"{path}: {e['msg']}" + (f" ({loc[0]}: {top})" if top else ""))
    return out


def type_error(code: str, who: str, what: str, exc: ValidationError, fields: Iterable = (),
               location: str | None = None, expected: str | None = None) -> RunError:
    """`who`: "node <id>" or "flow <id>"; `what`: what did not fit ("the value clean returned", "out");
    `expected`: the declared type's name, for a whole value of the wrong kind."""
    where = f" (at {location})" if location else ""
    found = mismatches(exc, fields, *([expected] if expected else []))
    message = f"{who}: {what} does not fit its declared type: {'; '.join(found)}{where}"
    return RunError(code, message, location=location, public=message)


def yaml_at(doc: YamlDoc | None, path: tuple) -> str | None:
    """file:line of a key of a project file, as diagnostics name it."""
    if doc is None:
        return None
    line, _ = doc.pos(path)
    return f"{doc.file}:{line}" if line else doc.file


_RETURNS: dict[Any, tuple[str, list[tuple[int, set[object] | None]]] | None] = {}


def returned_at(fn: Callable, exc: ValidationError | None = None) -> str | None:
    """file:line of the user's function where its value was made: the `return` of a dict literal that has
    the fields at fault and lacks the missing ones (for a value of the wrong kind, the one `return` that is not
    a dict literal), else its only `return`, else its `def`."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return None
    if code not in _RETURNS:
        _RETURNS[code] = _returns(code)
    found = _RETURNS[code]
    if found is None:
        return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"
    file, returns = found
    errors = [e for e in exc.errors() if e["loc"] and isinstance(e["loc"][0], str)] if exc is not None else []
    absent = {e["loc"][0] for e in errors if e["type"] == "missing" and len(e["loc"]) == 1}
    present = {e["loc"][0] for e in errors} - absent
    if errors:
        for line, keys in returns:
            if keys is not None and present <= keys and not absent & keys:
                return f"{file}:{line}"
    elif exc is not None:       # the whole value is of the wrong kind: the one return that is not a dict literal
        other = [line for line, keys in returns if keys is None]
        if len(other) == 1:
            return f"{file}:{other[0]}"
    line = returns[0][0] if len(returns) == 1 else code.co_firstlineno
    return f"{file}:{line}"


def _returns(code) -> tuple[str, list[tuple[int, set[object] | None]]] | None:
    """The function's own `return` statements (not those of nested functions): line, keys of a dict literal."""
    try:
        lines, first = inspect.getsourcelines(code)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    body = tree.body[0] if tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) else None
    if body is None:
        return None
    out: list[tuple[int, set[object] | None]] = []
    todo: list[ast.AST] = list(body.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            keys: set[object] | None = None
            if isinstance(node.value, ast.Dict):
                consts = [k.value for k in node.value.keys if isinstance(k, ast.Constant)]
                keys = set(consts) if len(consts) == len(node.value.keys) else None
            out.append((first + node.lineno - 1, keys))
        todo.extend(ast.iter_child_nodes(node))
    out.sort()
    return (os.path.basename(code.co_filename), out) if out else None


def errors_text(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors()[:5])
