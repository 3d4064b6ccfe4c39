"""Every file a series reads, wherever it lives: what the series snapshot hashes and fingerprints.

Inside the project: the experiment's folder (but its findings and experiment.md), the dataset, the
flows each variant runs with their alternatives and prompts, types, agents, prompts and fragments
folders, aqven.yaml and every .py file. Outside it: every Python module the project's code imports,
found by reading the import statements (never by importing), and the modules named by `run:`
references that are not the project's own (a function provider in another folder), transitively.
The standard library and installed distributions are versions, not inputs, and are left out.
"""
from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..project.model import Project

SKIPPED_PARTS = {".aqven", "__pycache__", ".git", "findings", ".venv", "venv", "node_modules"}
PEOPLE_FILES = {"experiment.md", "README.md", "FINDINGS.md", "AGENTS.md", "CLAUDE.md"}
SHARED_FOLDERS = ("types", "agents", "prompts", "fragments")


def _files(folder: Path, pattern: str = "*") -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob(pattern)
                  if p.is_file() and not SKIPPED_PARTS & set(p.relative_to(folder).parts) and p.name not in PEOPLE_FILES)


def project_code(root: Path) -> list[Path]:
    return _files(root, "*.py")


def _installed_dirs() -> list[Path]:
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    dirs |= {os.path.dirname(os.__file__), str(Path(__file__).resolve().parents[1])}   # and pytest-aqven itself
    return [Path(d).resolve() for d in dirs if d]


def _inside(path: Path, folders: list[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def _run_modules(project: Project) -> set[str]:
    """Modules named by `run:` values of the project's files that are not the project's own: read from the
    documents the loader parsed (strictly), never from other YAML lying in the project folder."""
    from ..project.model import documents

    package = project.package
    out: set[str] = set()
    for doc in documents(project):
        out |= {module for module in _runs_named(doc.data) if module.split(".")[0] != package}
    return out


def _runs_named(data: Any) -> set[str]:
    out: set[str] = set()
    todo = [data]
    while todo:          # a loop, not recursion: the strict loader bounds the depth, this needs no bound at all
        node = todo.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "run" and isinstance(value, str) and ":" in value and not value.startswith("@"):
                    out.add(value.rsplit(":", 1)[0])
                todo.append(value)
        elif isinstance(node, list):
            todo.extend(node)
    return out


def _module_file(name: str, search: list[str] | None = None) -> Path | None:
    """The .py file of a module, found on sys.path without importing anything (parents included)."""
    parts = name.split(".")
    try:
        spec = importlib.machinery.PathFinder.find_spec(parts[0], search)
    except (ImportError, ValueError):
        return None
    for part in parts[1:]:
        if spec is None or not spec.submodule_search_locations:
            return None
        spec = importlib.machinery.PathFinder.find_spec(part, list(spec.submodule_search_locations))
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin).resolve()


def _imports(path: Path) -> set[tuple[str, Path | None]]:
    """(module name, file it is relative to or None) of every import statement of a file."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (SyntaxError, ValueError, OSError, UnicodeDecodeError):
        return set()
    out: set[tuple[str, Path | None]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {(alias.name, None) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                folder = path.parent
                for _ in range(node.level - 1):
                    folder = folder.parent
                out |= {(".".join(filter(None, (base, a.name))), folder) for a in node.names}
                if base:
                    out.add((base, folder))
            else:
                out.add((base, None))
                out |= {(f"{base}.{a.name}", None) for a in node.names}
    return out


def outside_modules(project: Project) -> list[Path]:
    """Python files outside the project that its code imports, transitively, or that its `run:` refs name."""
    root, package = project.root.resolve(), project.package
    installed = _installed_dirs()
    found: set[Path] = set()
    queue = list(project_code(root))
    for module in sorted(_run_modules(project)):
        path = _module_file(module)
        if path is not None:
            queue.append(path)
    seen: set[Path] = set()
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        if not _inside(path, [root]):
            found.add(path)
        for name, relative_to in _imports(path):
            if not name or (relative_to is None and (name.split(".")[0] == package or name.split(".")[0] in sys.builtin_module_names)):
                continue
            target = _module_file(name, [str(relative_to)] if relative_to is not None else None)
            if target is None:
                if relative_to is not None:    # a relative import of a module file beside the package
                    candidate = relative_to.joinpath(*name.split(".")).with_suffix(".py")
                    target = candidate.resolve() if candidate.is_file() else None
                if target is None:
                    continue
            if _inside(target, installed) or _inside(target, [root]):
                continue
            queue.append(target)
    return sorted(found)


def fingerprint(paths: Iterable[str]) -> dict[str, list[int]]:
    """{path: [mtime_ns, size, ctime_ns]}: an edit changes it even when the content is restored afterwards,
    and so does a copy that restores the old mtime (`cp -p` sets mtime, never the inode's change time)."""
    out = {}
    for path in paths:
        try:
            stat = Path(path).stat()
        except OSError:
            continue
        out[str(path)] = [stat.st_mtime_ns, stat.st_size, stat.st_ctime_ns]
    return out


def differing(before: dict[str, list[int]], after: dict[str, list[int]]) -> list[str]:
    """The files whose fingerprints differ between two snapshots: changed, touched, added or removed."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def named(paths: list[str], root: Path, most: int = 5) -> str:
    """Files as a message names them: relative to the module root when inside it, the first few."""
    root = Path(root).resolve()
    shown = [Path(p).relative_to(root).as_posix() if root in Path(p).parents else str(p) for p in paths[:most]]
    return ", ".join(shown) + (f" and {len(paths) - most} more" if len(paths) > most else "")


def changed(recorded: dict[str, list[int]]) -> list[str]:
    """The fingerprinted files that were touched, changed or removed since (a series recorded before
    fingerprints held the change time is compared on mtime and size)."""
    now = fingerprint(recorded)
    return sorted(p for p, mark in recorded.items() if now.get(p, [])[:len(mark)] != list(mark))
