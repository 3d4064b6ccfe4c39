"""E_PATH_OUTSIDE: a file the project names that resolves outside the module root (through `..`, an absolute
path or a symlink). The run refuses the same files (project/paths.py is the one rule): agent instructions,
prompts and their variant texts, display templates, fragments and the files a template includes, media
files of cases, experiment prompts, the findings folders and FINDINGS.md. YAML files are refused by the
loader itself, code references by their resolver."""
from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from ..diagnostics import Diagnostic
from ..project.model import Flow, Node, Project
from ..project.paths import outside
from ..project.reading import OUTSIDE_HINT
from .context import CheckContext

CODE = "E_PATH_OUTSIDE"
# {% include "name" %} / {% render 'name' %}: the template names a file of the project
_INCLUDE = re.compile(r"""\{%-?\s*(?:include|render)\s+(["'])([^"']+)\1""")


def path_rules(ctx: CheckContext) -> list[Diagnostic]:
    project, out = ctx.project, []
    root = project.root

    def file_diag(path: Path, what: str) -> None:
        problem = outside(root, path)
        if problem is not None:
            out.append(Diagnostic(CODE, _rel(root, path), (), f"{what} {problem}", None, None, OUTSIDE_HINT))

    texts: dict[Path, str] = {}          # the project's template texts, by file: their includes are checked below
    for agent_id, agent in project.agents.items():
        name = agent.spec.instructions_file
        if name is not None:
            base = root if name.startswith("@root/") else (root / agent.doc.file).parent
            path = base / name.removeprefix("@root/")
            problem = outside(root, path)
            if problem is not None:
                out.append(agent.doc.diag(CODE, ("instructions",), f"agent {agent_id}: instructions {name} {problem}",
                                          OUTSIDE_HINT))
    for node in _nodes(project):
        for path, what in _node_texts(root, node):
            if outside(root, path) is not None:
                file_diag(path, what)
            elif path.suffix == ".md" and path.is_file():
                texts[path] = what
    for experiment in project.experiments.values():
        for name, path in experiment.prompts.items():
            if outside(root, path) is not None:
                file_diag(path, f"experiment {experiment.id}: prompt {name}")
            else:
                texts[path] = f"experiment {experiment.id}: prompt {name}"
        findings = experiment.folder / "findings"
        if findings.is_symlink() or findings.exists():
            file_diag(findings, f"experiment {experiment.id}: the findings folder")
    findings_md = root / "FINDINGS.md"
    if findings_md.is_symlink():
        file_diag(findings_md, "FINDINGS.md")
    fragments = root / "fragments"
    for path in sorted(fragments.rglob("*")) if fragments.is_dir() else []:
        if outside(root, path) is not None:
            file_diag(path, f"fragment {path.relative_to(fragments).as_posix()}")
        elif path.is_file() and path.suffix == ".md":
            texts[path] = f"fragment {path.relative_to(fragments).as_posix()}"
    reported = {d.file for d in out}
    for path, what in texts.items():
        out += _includes(root, path, what, reported)
    for dataset in project.datasets.values():
        for i, case in enumerate(dataset.spec.cases):
            for keys, file in _media(case.inputs):
                problem = outside(root, root / file.removeprefix("@root/"))
                if problem is not None:
                    out.append(dataset.doc.diag(CODE, ("cases", i, "inputs", *keys, "file"),
                                                f"dataset {dataset.id}: case {case.name}: media file {file} {problem}",
                                                "name a file inside the project, as @root/<path>"))
    return out


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _nodes(project: Project) -> list[Node]:
    flows: list[Flow] = [*project.flows.values(), *(f for e in project.experiments.values() for f in e.flows.values())]
    nodes = [n for f in flows for n in f.nodes.values()]
    nodes += [n for e in project.experiments.values() for n in e.alternatives.values()]
    return nodes


def _node_texts(root: Path, node: Node) -> list[tuple[Path, str]]:
    """The text files an llm node's inference reads: its prompt, its variant texts, its display templates."""
    if node.inference is None or node.inference_doc is None:
        return []
    folder = (root / node.inference_doc.file).parent
    stem = node.inference_doc.file.rsplit("/", 1)[-1].removesuffix(".inference.yaml")
    who = f"inference {stem}"
    out = [(node.prompt_path, f"{who}: prompt")] if node.prompt_path is not None else []
    for slot, v in node.inference.variants.items():
        for name in {*v.cases.values(), *([v.default] if v.default else [])}:
            out.append((folder / f"{stem}.variants" / slot / f"{name}.md", f"{who}: variant {slot}/{name}"))
    display = node.inference.display
    for side in ("input", "output"):
        template = getattr(getattr(display, side, None), "template", None) if display else None
        if template:
            out.append((root / template.removeprefix("@root/") if template.startswith("@root/") else folder / template,
                        f"{who}: display template {template}"))
    return out


def _includes(root: Path, path: Path, what: str, reported: set[str]) -> list[Diagnostic]:
    """The files a template includes, named as the run names them (fragments/<name>, .md added)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []       # E_FILE_UNREADABLE says so
    out = []
    for match in _INCLUDE.finditer(text):
        name = match.group(2)
        rel = PurePosixPath(name)
        target = root / (rel if rel.suffix else rel.with_suffix(".md"))
        problem: str | None
        if rel.is_absolute() or ".." in rel.parts:
            problem = "goes outside the project"
        elif _rel(root, target) in reported:
            continue            # the included file itself is reported (a fragment that links out)
        else:
            problem = outside(root, target)
        if problem is not None:
            line = text.count("\n", 0, match.start()) + 1
            column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
            out.append(Diagnostic(CODE, _rel(root, path), (), f"{what}: include {name} {problem}", line, column,
                                  "include fragments of the project: {% include \"fragments/<name>\" %}"))
    return out


def _media(value, keys: tuple = ()):
    """(key path, file) of every media value ({"$media": ..., "file": ...}) in a case's inputs."""
    todo = [(keys, value)]
    while todo:
        keys, value = todo.pop()
        if isinstance(value, dict):
            if "$media" in value and isinstance(value.get("file"), str):
                yield keys, value["file"]
            todo += [((*keys, k), v) for k, v in value.items()]
        elif isinstance(value, list):
            todo += [((*keys, i), v) for i, v in enumerate(value)]
