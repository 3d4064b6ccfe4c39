"""Diagnostics: what `aqven check` reports, rendered one way for the CLI and for pytest."""
from __future__ import annotations

import json
import posixpath
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Diagnostic:
    code: str
    file: str                       # posix path relative to the module root
    path: tuple[str | int, ...] = ()
    message: str = ""
    line: int | None = None         # 1-based
    column: int | None = None       # 1-based
    hint: str | None = None
    rule: str | None = None

    @property
    def severity(self) -> str:
        return "warning" if self.code.startswith("W_") else "error"

    @property
    def key_path(self) -> str:
        out = ""
        for i, seg in enumerate(self.path):
            if isinstance(seg, int):
                out += f"[{seg}]"
            else:
                out += seg if i == 0 else f".{seg}"
        return out

    def render(self) -> str:
        location = self.file
        if self.line is not None:
            location += f":{self.line}"
            if self.column is not None:
                location += f":{self.column}"
        head = f"{location}: {self.severity} {self.code}" + (f" {self.rule}" if self.rule else "")
        text = f"{head} {self.key_path}: {self.message}" if self.path else f"{head}: {self.message}"
        return text + (f"\n  hint: {self.hint}" if self.hint else "")

    def sort_key(self) -> tuple:
        return (self.file, self.line or 0, self.column or 0, self.code, self.key_path)


class DiagnosticError(Exception):
    """Raised by loaders when a file cannot be read at all; carries its diagnostics."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__("\n".join(d.render() for d in diagnostics))
        self.diagnostics = diagnostics


@dataclass
class Report:
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.sorted() if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.sorted() if d.severity == "warning"]

    def sorted(self) -> list[Diagnostic]:
        unique = {(d.sort_key(), d.message): d for d in self.diagnostics}
        return [unique[k] for k in sorted(unique)]


def render_text(diagnostics: list[Diagnostic]) -> str:
    report = Report(list(diagnostics))
    lines = [d.render() for d in report.sorted()]
    lines.append(f"errors: {len(report.errors)}, warnings: {len(report.warnings)}")
    return "\n".join(lines)


def render_json(diagnostics: list[Diagnostic]) -> str:
    report = Report(list(diagnostics))
    items = []
    for d in report.sorted():
        item = asdict(d)
        item["path"] = list(d.path)
        item["severity"] = d.severity
        items.append(item)
    errors = len(report.errors)
    return json.dumps(
        {"ok": errors == 0, "errors": errors, "warnings": len(report.warnings), "diagnostics": items},
        indent=2,
    )


def _github_escape(text: str, property_: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property_ else text


def render_github(diagnostics: list[Diagnostic], prefix: str = "") -> str:
    """GitHub Actions workflow commands: one `::error` or `::warning` annotation per diagnostic, on its file
    (`prefix`, the module root's path from the repository root, before the file's path from the module root),
    line and column, titled by its code (the hint on a second line), then the counts as text prints them."""
    report = Report(list(diagnostics))
    lines = []
    for d in report.sorted():
        where = [f"file={_github_escape(posixpath.join(prefix, d.file) if prefix else d.file, True)}"]
        if d.line is not None:
            where.append(f"line={d.line}")
            if d.column is not None:
                where.append(f"col={d.column}")
        where.append(f"title={_github_escape(d.code, True)}")
        message = (f"{d.key_path}: " if d.path else "") + d.message + (f"\nhint: {d.hint}" if d.hint else "")
        level = "error" if d.severity == "error" else "warning"
        lines.append(f"::{level} {','.join(where)}::{_github_escape(message)}")
    lines.append(f"errors: {len(report.errors)}, warnings: {len(report.warnings)}")
    return "\n".join(lines)
