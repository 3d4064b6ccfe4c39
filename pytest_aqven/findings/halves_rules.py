"""W_HALVES_MOVED: a renamed package, dataset or case moved the halves of an experiment with held-out
findings (findings/halves.py), so its held-out half now holds cases a working series may have shown."""
from __future__ import annotations

from ..diagnostics import Diagnostic
from ..project.model import Project
from .halves import reshuffles


def halves_rules(project: Project) -> dict[str, list[Diagnostic]]:
    out: dict[str, list[Diagnostic]] = {}
    for eid, exp in project.experiments.items():
        if exp.spec is None or exp.doc is None or exp.spec.cases.dataset not in project.datasets:
            continue
        for moved in reshuffles(project, eid):
            package, dataset = moved.then
            out.setdefault(eid, []).append(exp.doc.diag(
                "W_HALVES_MOVED", ("cases", "dataset"), moved.text(eid),
                f"undo the rename (package {package}, dataset {dataset}, the case names the finding was decided on), "
                f"or ask the question again knowing the new held-out half holds cases a working series may have "
                f"shown; aqven cases {eid} lists the working half"))
    return out
