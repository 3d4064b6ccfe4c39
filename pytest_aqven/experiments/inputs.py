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
import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import sysconfig
from pathlib import Path

import yaml

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


def _run_modules(root: Path, package: str) -> set[str]:
    """Modules named by `run:` values of the project's YAML that are not the project's own."""
    out: set[str] = set()
    for path in _files(root, "*.yaml"):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        digest = hashlib.sha256(data).digest()
        held = _RUNS.get(path)
        if held is None or held[0] != digest:
            if len(_RUNS) > 10_000:
                _RUNS.clear()
            held = _RUNS[path] = (digest, _runs_named(data))
        out |= {module for module in held[1] if module.split(".")[0] != package}
    return out


# path -> (sha256 of its bytes, the modules its `run:` values name): a series' end reads the YAML its start
# parsed, mostly unchanged (the dataset among it)
_RUNS: dict[Path, tuple[bytes, frozenset[str]]] = {}


def _runs_named(data: bytes) -> frozenset[str]:
    out: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "run" and isinstance(value, str) and ":" in value and not value.startswith("@"):
                    out.add(value.rsplit(":", 1)[0])
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        # as Path.read_text reads it: UTF-8, universal newlines
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        walk(yaml.load(text, Loader=loader))
    except (yaml.YAMLError, UnicodeDecodeError):
        pass   # aqven check reports it
    return frozenset(out)


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


def outside_modules(root: Path, package: str) -> list[Path]:
    """Python files outside the project that its code imports, transitively, or that its `run:` refs name."""
    root = root.resolve()
    installed = _installed_dirs()
    found: set[Path] = set()
    queue = list(project_code(root))
    for module in sorted(_run_modules(root, package)):
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


def fingerprint(paths) -> dict[str, list[int]]:
    """{path: [mtime_ns, size]}: an edit changes it even when the content is restored afterwards."""
    out = {}
    for path in paths:
        try:
            stat = Path(path).stat()
        except OSError:
            continue
        out[str(path)] = [stat.st_mtime_ns, stat.st_size]
    return out


def changed(recorded: dict[str, list[int]]) -> list[str]:
    """The fingerprinted files that were touched, changed or removed since."""
    now = fingerprint(recorded)
    return sorted(p for p, mark in recorded.items() if now.get(p) != list(mark))
