"""Resolve code references for the checker without letting user code crash it.

Importing a module runs it: it may print, raise anything (SystemExit included) or fail halfway.
Every such outcome becomes a problem string; stdout and stderr of the import are swallowed so that
`aqven check` prints diagnostics only."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any, Callable

from ..project import coderefs


class SafeResolver:
    def __init__(self, package: str, root: Path) -> None:
        self.package = package
        self.root = root
        self._cache: dict[tuple[str, str], tuple[Callable[..., Any] | None, str | None]] = {}

    def resolve(self, ref: str, here: Path) -> tuple[Callable[..., Any] | None, str | None]:
        """(function, None) or (None, problem)."""
        key = (ref, str(here) if ":" not in ref or ref.startswith("@here.") else "")
        if key not in self._cache:
            self._cache[key] = self._resolve(ref, here)
        return self._cache[key]

    def _resolve(self, ref: str, here: Path):
        if not self.package:
            return None, f"{ref}: the project has no package to import it from"
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                return coderefs.resolve(ref, package=self.package, root=self.root, here=here), None
        except coderefs.CodeRefError as exc:
            return None, str(exc)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit, or an error in the package's __init__.py
            return None, f"{ref}: importing it raised {type(exc).__name__}: {exc}"
