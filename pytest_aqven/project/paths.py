"""Path containment: every file a project names is read only when it resolves inside the module root.

One rule for `aqven check` and the run alike: a path is resolved (`..`, an absolute path and every symlink
followed) and must land inside the resolved module root. Instructions, prompts, fragments, includes,
media, code references, datasets and the findings folder all go through `outside()` before they are read
or written, so a symlink or a `../` cannot ship a file of the machine to a model or write a finding
elsewhere."""
from __future__ import annotations

from pathlib import Path

PROJECT_FILE = "aqven.yaml"


def find_root(start: Path) -> Path | None:
    """The module root: the folder holding aqven.yaml, searched upward from `start`."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else list(start.parents):
        if (folder / PROJECT_FILE).is_file():
            return folder
    return None


def outside(root: Path, path: Path) -> str | None:
    """Why `path` may not be used (it resolves outside `root`), or None when it lies inside."""
    try:
        resolved = Path(path).resolve()
        base = Path(root).resolve()
    except (OSError, RuntimeError) as exc:       # a symlink loop
        return f"cannot be resolved ({exc})"
    if resolved == base or base in resolved.parents:
        return None
    return f"resolves outside the project (to {resolved})"


class OutsideProject(ValueError):
    """A file the project names resolves outside the module root: it is never read."""


def inside(root: Path, path: Path, what: str) -> Path:
    """`path`, or OutsideProject naming `what` ("agent bot: instructions ./x.md")."""
    problem = outside(root, path)
    if problem is not None:
        raise OutsideProject(f"{what} {problem}: refused")
    return path
