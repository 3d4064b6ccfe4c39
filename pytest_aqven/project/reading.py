"""One YAML file of the project read into its spec: never a file linked from outside the module root; what
does not read or validate becomes diagnostics in the sink."""
from __future__ import annotations

from pathlib import Path

from ..diagnostics import Diagnostic, DiagnosticError
from .paths import outside
from .validate import validate
from .yamlpos import load_yaml

OUTSIDE_HINT = "keep the file inside the module root: copy it in instead of linking to a file elsewhere"


def read_spec(path: Path, root: Path, annotation, what: str, sink: list[Diagnostic]):
    problem = outside(root, path)
    if problem is not None:       # a symlink out of the project: never read
        sink.append(Diagnostic("E_PATH_OUTSIDE", path.relative_to(root).as_posix(), (), f"{what}: the file {problem}",
                               None, None, OUTSIDE_HINT))
        return None, None
    try:
        doc = load_yaml(path, root)
    except DiagnosticError as exc:
        sink.extend(exc.diagnostics)
        return None, None
    spec, diags = validate(doc, annotation, what)
    sink.extend(diags)
    return spec, doc


def yaml_files(folder: Path, pattern: str = "*.yaml") -> list[Path]:
    return sorted(p for p in folder.glob(pattern) if p.is_file()) if folder.is_dir() else []
