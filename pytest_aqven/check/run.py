"""`aqven check` as a library call: load the project, run every rule, return the diagnostics."""
from __future__ import annotations

from pathlib import Path

from ..diagnostics import Diagnostic
from ..project.loader import load_project
from .rules import check_project, internal_error


def check_root(root: Path) -> list[Diagnostic]:
    """Every diagnostic of the project at `root` (the folder holding aqven.yaml), each once, unsorted."""
    try:
        project = load_project(root)
    except Exception as exc:  # a loader bug must reach the user as a diagnostic, never a traceback
        return [internal_error("aqven.yaml", "loading the project", exc)]
    project_diags, per_experiment = check_project(project)
    every = project_diags + [d for diags in per_experiment.values() for d in diags]
    return list({(d.sort_key(), d.message): d for d in every}.values())     # a shared one once
