"""E_FINDING_TAMPERED, W_FINDING_METHOD_CHANGED and W_FINDINGS_STALE: every finding decided again from its own
data (one of an earlier release's statistics stands as written, said beside what today's would decide), and
FINDINGS.md compared with the text the findings generate."""
from __future__ import annotations

from pathlib import Path

from ..diagnostics import Diagnostic, DiagnosticError
from ..project.model import Project
from ..project.yamlpos import parse_yaml
from .files import REBUILD_HINT, TAMPERED_HINT, examine, finding_path, render_findings_md

METHOD_HINT = ("a finding is never decided again: it stands as its release decided it; a new held-out series "
               "(fresh cases, or --aqven-respend-holdout) decides the question with today's statistics")


def finding_rules(project: Project) -> tuple[list[Diagnostic], dict[str, list[Diagnostic]]]:
    """(project-level diagnostics, diagnostics per experiment id). A finding's errors belong to the
    experiment whose folder holds it (a collection error of that experiment in pytest)."""
    from .publish import recorded  # noqa: PLC0415  (the series store: only when findings are checked)

    root = project.root
    per_experiment: dict[str, list[Diagnostic]] = {}
    project_level: list[Diagnostic] = []
    examined = examine(root, project.package)
    for path, document, found in examined:
        owner = path.parent.parent.name
        target = per_experiment.setdefault(owner, []) if owner in project.experiments else project_level
        target += [_diag(root, path, owner, "E_FINDING_TAMPERED", where, message, TAMPERED_HINT)
                   for where, message in found]
        from .verify import method_changed  # noqa: PLC0415  (numpy and scipy: only when a finding file is there)
        changed = None if found else method_changed(document)
        if changed is not None:
            project_level.append(_diag(root, path, owner, "W_FINDING_METHOD_CHANGED", ("method",), changed,
                                       METHOD_HINT))
    rows = recorded(root)
    for series_id, experiment, _ in rows:
        path = finding_path(root, experiment, series_id)
        if not path.exists():
            rel = path.relative_to(root).as_posix()
            diag = Diagnostic("E_FINDING_TAMPERED", rel, (), f"finding {path.name} of experiment {experiment}: the "
                              "project database recorded it, but the file is missing: it was deleted",
                              hint="aqven findings rebuild writes it back from the project database")
            (per_experiment.setdefault(experiment, []) if experiment in project.experiments else project_level).append(diag)
    stale = _stale(root, [(p, d) for p, d, found in examined if not found], bool(examined or rows))
    return project_level + stale, per_experiment


def _diag(root: Path, path: Path, owner: str, code: str, where: tuple, message: str, hint: str) -> Diagnostic:
    rel = path.relative_to(root).as_posix()
    text = f"finding {path.name} of experiment {owner}: {message}"
    try:
        doc = parse_yaml(path.read_text(encoding="utf-8"), rel)
    except (DiagnosticError, OSError, UnicodeDecodeError):
        return Diagnostic(code, rel, tuple(where), text, hint=hint)
    diag = doc.diag(code, tuple(where), text, hint)
    return diag if diag.line is not None else Diagnostic(code, rel, tuple(where), text, 1, 1, hint)


def _stale(root: Path, standing: list, any_finding: bool) -> list[Diagnostic]:
    target = root / "FINDINGS.md"
    expected = render_findings_md(root, standing)
    actual = target.read_text(encoding="utf-8") if target.exists() else None
    if actual == expected or (actual is None and not expected) or not any_finding:
        return []   # (a FINDINGS.md without any finding, in files or in the database, is the project's own)
    if actual is None:
        message = "FINDINGS.md is missing"
    else:
        message = "FINDINGS.md differs from the text generated from the finding files"
        line = _first_different_line(actual, expected)
        if line is not None:
            return [Diagnostic("W_FINDINGS_STALE", "FINDINGS.md", (), f"{message} (from line {line})", line, 1,
                               REBUILD_HINT)]
    return [Diagnostic("W_FINDINGS_STALE", "FINDINGS.md", (), message, hint=REBUILD_HINT)]


def _first_different_line(actual: str, expected: str) -> int | None:
    a, b = actual.splitlines(), expected.splitlines()
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i + 1
    return min(len(a), len(b)) + 1 if len(a) != len(b) else None
