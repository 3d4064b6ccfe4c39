"""Read a flow written as flow.py: import it, call `build()`, and turn the Flow it returns into the
documents a flow.yaml and its .node.yaml files would hold, so one validator and one checker serve both."""
from __future__ import annotations

import contextlib
import io
import traceback
import typing
from pathlib import Path
from typing import Any

from . import coderefs


class PythonFlowError(Exception):
    def __init__(self, message: str, hint: str, line: int | None = None):
        super().__init__(message)
        self.hint = hint
        self.line = line


HINT = "def build() -> Flow: return flow(description=..., input=<model>, output=<model>, returns={...}, nodes=[...])"


def _user_line(exc: BaseException, file: Path) -> int | None:
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if Path(frame.filename).resolve() == file.resolve():
            return frame.lineno
    return getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None


def flow_documents(flow_id: str, file: Path, package: str, root: Path) -> tuple[dict, dict[str, dict]]:
    if not package:
        raise PythonFlowError("the project has no package to import flow.py from", "set package: in aqven.yaml")
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            build = coderefs.resolve("build", package=package, root=root, here=file)
            built = build()
    except coderefs.CodeRefError as exc:
        raise PythonFlowError(str(exc).replace("build: ", "", 1), HINT) from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:   # the user's build() raised (or exited): a diagnostic with its line
        raise PythonFlowError(f"build() raised {type(exc).__name__}: {exc}", HINT, _user_line(exc, file)) from None
    if hasattr(built, "spec") and hasattr(built, "nodes") and isinstance(built.nodes, dict):
        return _from_engine(built)          # a Flow of the real aqven package
    from ..compat.aqven.spec import Flow
    if not isinstance(built, Flow):
        raise PythonFlowError(f"build() returned {type(built).__name__}, not the Flow of aqven.spec.flow(...)", HINT)
    return _from_builders(built)


def _from_engine(built: Any) -> tuple[dict, dict[str, dict]]:
    flow = built.spec.model_dump(by_alias=True, mode="json", exclude_none=True)
    nodes = {node_id: spec.model_dump(by_alias=True, mode="json", exclude_none=True)
             for node_id, spec in built.nodes.items()}
    return flow, nodes


def _type_id(model: Any, key: str) -> str:
    name = getattr(model, "__name__", None)
    if name is None:
        raise PythonFlowError(f"the flow's {key} is not a model class", "use a model of <package>.types")
    return name


def _code_out(node_id: str, fn: Any) -> list[dict]:
    """A code node's out fields: those of the model its function returns (a model of <package>.types)."""
    try:
        returned = typing.get_type_hints(fn).get("return")
    except Exception as exc:
        raise PythonFlowError(f"code node {node_id}: the return annotation of {fn.__qualname__} cannot be read: {exc}",
                              "annotate the function's return with a model of <package>.types") from None
    fields = getattr(returned, "__aqven_fields__", None)
    if fields is None:
        raise PythonFlowError(f"code node {node_id}: {fn.__qualname__} does not return a model of <package>.types",
                              "annotate the function's return with a model of <package>.types, such as <Type> "
                              "or <Flow><Node>Out")
    return [f.model_dump(by_alias=True, exclude_none=True) for f in fields]


def _from_builders(built: Any) -> tuple[dict, dict[str, dict]]:
    flow = {"apiVersion": "aqven/v1", "kind": "Flow", "description": built.description,
            "input": _type_id(built.input, "input"), "output": _type_id(built.output, "output"),
            "returns": [{"name": name, "from": ref} for name, ref in built.returns.items()],
            "order": [n.id for n in built.nodes], "context": list(built.context)}
    if built.limits is not None:
        flow["limits"] = built.limits
    nodes = {}
    for n in built.nodes:
        data = {"apiVersion": "aqven/v1", "kind": "Node", "node": n.kind,
                "description": n.description or f"node {n.id} of a flow.py", **n.data}
        if n.kind == "code":
            data["run"] = f"{n.fn.__module__}:{n.fn.__qualname__}"
            data["out"] = _code_out(n.id, n.fn)
        nodes[n.id] = data
    return flow, nodes
