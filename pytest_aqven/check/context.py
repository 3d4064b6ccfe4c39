"""What every rule shares during one `aqven check` run."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from pydantic import TypeAdapter

from ..diagnostics import Diagnostic
from ..project.model import Project
from .imports import SafeResolver
from .typeinfo import TypeInfo


def internal_error(file: str, what: str, exc: BaseException) -> Diagnostic:
    return Diagnostic("E_CHECK_INTERNAL", file, (), f"the checker failed while {what}: {type(exc).__name__}: {exc}",
                      hint="this is a bug of pytest-aqven, not of the project: please report it with this file")


class CheckContext:
    def __init__(self, project: Project) -> None:
        self.project = project
        self.types = TypeInfo(project.types, project.unreadable["type"])
        self.resolver = SafeResolver(project.package, project.root)
        self._adapters: dict[str, TypeAdapter] = {}
        self.inferences_seen: set = set()           # inference and prompt files whose own rules ran
        self.shared: list[Diagnostic] = []          # found while checking an experiment, about a file others share

    def adapter(self, type_ref: str) -> TypeAdapter:
        """A validator for a type reference, built once per check (building costs more than validating)."""
        if type_ref not in self._adapters:
            self._adapters[type_ref] = TypeAdapter(self.project.types.resolve(type_ref))
        return self._adapters[type_ref]

    def unreadable(self, kind: str, name: str) -> bool:
        """The file exists but did not load: its own diagnostic says why, so no "unknown" here."""
        return name in self.project.unreadable[kind]

    def guarded(self, file: str, what: str, rule: Callable[[], list[Diagnostic]]) -> list[Diagnostic]:
        """Run one rule; a bug in it becomes a diagnostic and the other rules still run."""
        try:
            return rule()
        except Exception as exc:
            return [internal_error(file, what, exc)]


def text_problem(path: Path) -> str | None:
    """Why a text file the project names (a prompt, instructions, a template) cannot be used, or None."""
    try:
        path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "does not exist"
    except UnicodeDecodeError as exc:
        return f"is not UTF-8 text (byte {exc.start} cannot be decoded)"
    except OSError as exc:
        return f"cannot be read: {exc.strerror}"
    return None
