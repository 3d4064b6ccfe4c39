"""Write the finding of a concluded held-out series (never for invalid verdicts or looks)."""
from __future__ import annotations

from pathlib import Path

from ..findings import document
from ..findings.files import write_finding
from ..project.loader import Project
from .conclude import Conclusion
from .db import Store


def write_finding_for(project: Project, conclusion: Conclusion, records: list[dict]) -> Path | None:
    if conclusion.verdict is None or conclusion.state in (None, "invalid") or conclusion.split != "holdout":
        return None
    store = Store(project.root)
    try:
        series = store.series(conclusion.series_id)
    finally:
        store.close()
    doc = document.build(project, series, conclusion, records)
    return write_finding(project.root, conclusion.experiment, conclusion.series_id, doc)
