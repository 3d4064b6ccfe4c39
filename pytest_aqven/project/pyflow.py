"""Read a flow written as flow.py: import it, call `build()`, and turn the Flow it returns into the
documents a flow.yaml and its .node.yaml files would hold, so one validator and one checker serve both."""
from __future__ import annotations

import contextlib
import io
import traceback
from pathlib import Path
from typing import Any

from . import coderefs


class PythonFlowError(Exception):
    def __init__(self, message: str, hint: str, line: int | None = None) -> None:
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
    if not (hasattr(built, "spec") and hasattr(built, "nodes") and isinstance(built.nodes, dict)):
        raise PythonFlowError(f"build() returned {type(built).__name__}, not the Flow of aqven.spec.flow(...)", HINT)
    return _documents(built)      # aqven.spec's Flow: pytest-aqven's own, or the engine package's


def _documents(built: Any) -> tuple[dict, dict[str, dict]]:
    flow = built.spec.model_dump(by_alias=True, mode="json", exclude_none=True)
    nodes = {node_id: spec.model_dump(by_alias=True, mode="json", exclude_none=True)
             for node_id, spec in built.nodes.items()}
    return flow, nodes
