"""Every example of README.md and docs/ is executed, so no doc can drift from the code (docs/examples.md
says how to write one):

- a `yaml`, `toml` or `python` block whose first line is `# <path>` is that file of the project
  `aqven new demo` writes; `# excerpt of <path>` merges a YAML mapping into it (lists are appended, other
  values replaced). A section (the text under one heading) whose blocks are files and that runs no command
  must pass `aqven check` with no error and no warning;
- a `console` block runs each `$ <command>` with bash in a fresh folder holding a copy of example_project/
  (and demo/, when the section writes files), and compares what it prints with the lines under it: a line
  `...` stands for any lines, `...` inside a line for any text, blank lines are left out, and series ids,
  pytest's duration and timestamps are compared as placeholders; a `sh` block's commands must exit 0;
- a `text` block is illustrative and never run; `<!-- docs: not run: <reason> -->` on the line before a
  fence keeps it from running, with the reason said; a block without a language is an error, and a
  `python` block without a path must compile;
- commands run as a plain install (`pip install pytest-aqven`, no extra) runs them: the modules of the optional
  extras cannot be imported, unless `<!-- docs: extra <name> -->` on the line before the fence names the extra
  the example needs (and the doc says so), e.g. `postgres` for a PostgreSQL store.

The docs have a path and hold only what is there: docs/index.md lists every page once under one of its four
parts; the pages of its Reference part name every `--aqven-*` option, ini value and hook pytest knows, and
docs/cli.md every `aqven` subcommand with its arguments (both found by asking pytest and the `aqven` parser);
every link names a file and heading of the repository, and every repository path in code exists.
"""
from __future__ import annotations

import argparse
import difflib
import functools
import importlib.metadata
import os
import re
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import pytest
import yaml

from pytest_aqven.api.check import check_root
from pytest_aqven.scaffold import TEMPLATES, create

REPO = Path(__file__).resolve().parent.parent
# the README of the project `aqven new` writes: its commands run inside that project
# the README of each project `aqven new` writes -> its template (its commands run inside that project)
NEW_READMES = {REPO / "pytest_aqven" / "scaffold" / folder / "README.md": name for name, folder in TEMPLATES.items()}
PAGES = sorted((REPO / "docs").rglob("*.md"))
DOCS = [REPO / "README.md", *PAGES, REPO / "CHANGELOG.md", *NEW_READMES]
LANGUAGES = {"yaml", "toml", "python", "console", "sh", "text", "json"}
FENCE = re.compile(r"^( *)(`{3,})\s*([\w-]*)\s*$")
NOT_RUN = re.compile(r"^<!-- docs: not run: (.+\S) -->$")
FILE = re.compile(r"^<!-- docs: file ([\w./-]+) -->$")        # a file that has no comment syntax (a prompt)
EXTRA = re.compile(r"^<!-- docs: extra (\w+) -->$")          # the optional extra a block's commands need
EXTRAS = {"postgres": ("psycopg",), "mcp": ("mcp",)}          # pyproject.toml's extras -> the modules they bring
# a plain install's view: the modules of the extras a block does not name are not installed
PLAIN = """import sys


class PlainInstall:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {absent!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, PlainInstall())
"""
HEADING = re.compile(r"^#{1,6} ")
PATH_LINE = re.compile(r"^# (excerpt of )?([\w./-]+)\s*$")
VOLATILE = [                           # (pattern, placeholder), on both sides
    (re.compile(r"\b[0-9a-f]{8}-(?:[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\.\.\.)"), "<series>"),
    (re.compile(r"\bin \d+\.\d+s( \(\d+:\d\d:\d\d\))?"), "in <duration>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\b"), "<time>"),
]


@dataclass
class Block:
    doc: Path
    line: int                      # of the opening fence, 1-based
    language: str
    text: str
    not_run: str | None = None     # the reason, when marked
    file: str | None = None        # the project file it is, named by the first line or the marker before it
    excerpt: bool = False          # a YAML mapping merged into `file`
    extra: str | None = None       # the optional extra its commands need, named by the marker before it

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"


@dataclass
class Section:
    doc: Path
    title: str
    line: int
    blocks: list[Block] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"


def sections(doc: Path) -> list[Section]:
    lines = doc.read_text(encoding="utf-8").splitlines()
    out = [Section(doc, doc.name, 1)]
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if HEADING.match(line):
            out.append(Section(doc, line.lstrip("# "), i + 1))
        elif fence:
            indent, ticks, language = fence.groups()
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == ticks), None)
            assert end is not None, f"{doc.relative_to(REPO)}:{i + 1}: a fence that never closes"
            text = "\n".join(line[len(indent):] for line in lines[i + 1:end]) + "\n"
            before = lines[i - 1].strip() if i else ""
            not_run, named, extra = NOT_RUN.match(before), FILE.match(before), EXTRA.match(before)
            head = PATH_LINE.match(text.splitlines()[0]) if text.strip() and language != "text" else None
            block = Block(doc, i + 1, language, text, not_run[1] if not_run else None,
                          extra=extra[1] if extra else None)
            assert block.extra in (None, *EXTRAS), f"{block.where}: docs: extra names none of {sorted(EXTRAS)}"
            if named:
                block.file = named[1]
            elif head:
                block.file, block.excerpt = head[2], bool(head[1])
            out[-1].blocks.append(block)
            i = end
        i += 1
    return [s for s in out if s.blocks]


ALL = [s for doc in DOCS for s in sections(doc)]
BLOCKS = [b for s in ALL for b in s.blocks]


def test_every_block_says_what_it_is():
    untagged = [b.where for b in BLOCKS if b.language not in LANGUAGES]
    assert not untagged, f"give these fences a language ({', '.join(sorted(LANGUAGES))}): {untagged}"


def test_every_file_block_names_its_file():
    for b in BLOCKS:
        if b.language in ("yaml", "toml") and not b.not_run:
            assert b.file, f"{b.where}: a {b.language} block starts with '# <path>' or '# excerpt of <path>' (a file of demo/)"


def test_python_blocks_compile():
    for b in BLOCKS:
        if b.language == "python":
            compile(b.text, b.where, "exec")


def _merge(into: dict, excerpt: dict) -> None:
    for key, value in excerpt.items():
        if isinstance(value, list) and isinstance(into.get(key), list):
            into[key] = into[key] + value
        else:
            into[key] = value


def _write(project: Path, block: Block) -> None:
    path = project / block.file
    path.parent.mkdir(parents=True, exist_ok=True)
    if block.excerpt:
        assert block.language == "yaml", f"{block.where}: only YAML excerpts merge"
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}
        _merge(doc, yaml.safe_load(block.text))
        path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    else:
        path.write_text(block.text, encoding="utf-8")


def _normal(text: str) -> list[str]:
    for pattern, placeholder in VOLATILE:
        text = pattern.sub(placeholder, text)
    return [line.rstrip() for line in text.splitlines() if line.strip()]      # blank lines say nothing


def _line_pattern(expected: str) -> re.Pattern:
    return re.compile(".*".join(map(re.escape, expected.split("..."))))


def matches(expected: list[str], actual: list[str]) -> bool:
    """`...` alone matches any lines (none too), `...` inside a line any text of that line."""
    patterns = [None if e.strip() == "..." else _line_pattern(e) for e in expected]

    @functools.lru_cache(maxsize=None)
    def at(i: int, j: int) -> bool:
        if i == len(patterns):
            return j == len(actual)
        if patterns[i] is None:
            return any(at(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and patterns[i].fullmatch(actual[j]) is not None and at(i + 1, j + 1)

    return at(0, 0)


def mismatch(expected: list[str], actual: list[str]) -> str:
    """The first line of the doc that the output cannot match there, and the output near it."""
    first = next((i for i in range(len(expected)) if not matches(expected[:i + 1] + ["..."], actual)), len(expected))
    if first == len(expected):
        return "the output goes on past the doc's last line:\n" + "\n".join(actual[-10:])
    pattern = _line_pattern(expected[first]) if expected[first].strip() != "..." else None
    near = difflib.get_close_matches(expected[first], actual, n=3, cutoff=0.5) if pattern else []
    return (f"doc line {first + 1} matches nothing at its place: {expected[first]!r}\n"
            + "".join(f"  the output has: {line!r}\n" for line in near))


def commands(block: Block) -> list[tuple[str, list[str] | None]]:
    """(command, the output shown under it or None for none) of a console block; a sh block's lines."""
    if block.language == "sh":
        return [(line, None) for line in block.text.splitlines() if line.strip() and not line.startswith("#")]
    out: list[tuple[str, list[str]]] = []
    for line in block.text.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        else:
            assert out, f"{block.where}: a console block starts with '$ <command>'"
            out[-1][1].append(line)
    return [(cmd, shown if any(s.strip() for s in shown) else None) for cmd, shown in out]


def environment(plain: Path | None = None) -> dict[str, str]:
    """The environment commands run in; `plain`: a folder whose sitecustomize.py hides the extras' modules."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_")) and k != "PYTHONPATH"}
    env.update(PATH=f"{sysconfig.get_path('scripts')}{os.pathsep}{env['PATH']}", COLUMNS="80", NO_COLOR="1",
               PY_COLORS="0", TERM="dumb")
    if plain is not None:
        env["PYTHONPATH"] = str(plain)
    return env


def plain_install(folder: Path, extra: str | None) -> Path:
    """A sitecustomize.py that hides the modules of every extra but `extra`, as a plain install lacks them."""
    folder.mkdir(parents=True, exist_ok=True)
    absent = sorted(m for name, modules in EXTRAS.items() if name != extra for m in modules)
    (folder / "sitecustomize.py").write_text(PLAIN.format(absent=set(absent)), encoding="utf-8")
    return folder


def runs(block: Block) -> bool:
    return not block.not_run and (block.language in ("console", "sh") or block.file is not None)


RUNNABLE = [s for s in ALL if any(runs(b) for b in s.blocks)]


def runs_pytest(section: Section) -> bool:
    """A section whose commands start a pytest session (seconds each) runs in the `-m slow` step."""
    return any(re.search(r"\bpytest\b", command) for b in section.blocks if runs(b) and b.language in ("console", "sh")
               for command, _ in commands(b))


@pytest.mark.parametrize("section", [pytest.param(s, id=s.id, marks=[pytest.mark.slow] if runs_pytest(s) else [])
                                     for s in RUNNABLE])
def test_the_examples_of_a_section_run_as_shown(section, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(REPO / "example_project", work / "example_project",
                    ignore=shutil.ignore_patterns(".aqven", "findings", "FINDINGS.md", "__pycache__", "cassettes"))
    files = [b for b in section.blocks if runs(b) and b.file is not None]
    if files or section.doc in NEW_READMES:
        create(work / "demo", "demo", NEW_READMES.get(section.doc, "default"))
        for block in files:
            _write(work / "demo", block)
    shells = [b for b in section.blocks if runs(b) and b.language in ("console", "sh")]
    if files and not shells:
        found = [d.render() for d in check_root(work / "demo")]
        assert not found, f"{section.id} ({section.title}): aqven check of demo/ with its files:\n" + "\n".join(found)
    for block in shells:
        plain = plain_install(tmp_path / f"plain-{block.extra}", block.extra)
        for command, shown in commands(block):
            done = subprocess.run(["bash", "-c", command], cwd=work / "demo" if section.doc in NEW_READMES else work,
                                  env=environment(plain), capture_output=True, text=True, timeout=300)
            printed = done.stdout + done.stderr
            if shown is None:
                assert done.returncode == 0, f"{block.where}: `{command}` exited {done.returncode}:\n{printed}"
                continue
            expected, actual = _normal("\n".join(shown)), _normal(printed)
            assert matches(expected, actual), f"{block.where}: `{command}` printed other lines:\n" + mismatch(
                expected, actual)


def test_the_count_of_executed_examples(capsys):
    """How many examples the sections above execute (the report of issue 28 quotes it)."""
    executed = [b for b in BLOCKS if runs(b)]
    commands_run = sum(len(commands(b)) for b in executed if b.language in ("console", "sh"))
    with capsys.disabled():
        print(f"\ndocs: {len(executed)} examples executed ({commands_run} commands) in {len(RUNNABLE)} sections; "
              f"{sum(b.language == 'text' for b in BLOCKS)} text blocks illustrative, "
              f"{sum(bool(b.not_run) for b in BLOCKS)} marked not run")
    assert executed


def test_the_comparison_elides_only_what_the_doc_elides():
    actual = ["platform linux", "collected 3 items", "small series 8c5f198c-4cd5-45d8-8e8a-a1dfc0a70215: done",
              "======== 3 passed in 1.23s ========"]
    assert matches(_normal("...\nsmall series 1e16d5d4-...: done\n=== 3 passed in 9.99s ===".replace("===", "========")),
                   _normal("\n".join(actual)))
    assert matches(["...", "collected ... items", "..."], actual)
    assert not matches(["collected 3 items", "..."], actual)              # anchored at the first line
    assert not matches(["...", "collected 3 items"], actual)              # and at the last
    assert not matches(["...", "collected 4 items", "..."], actual)
    assert "doc line 2 matches nothing at its place: 'collected 4 items'" in mismatch(
        ["...", "collected 4 items", "..."], actual)


def test_blocks_are_read_with_their_file_and_marks(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text('# T\n\n- item:\n\n  ```yaml\n  # excerpt of agents/small.yaml\n  settings:\n    seed: 1\n  ```\n\n'
                   '<!-- docs: file flows/a/a.prompt.md -->\n```text\nHello\n```\n\n'
                   '<!-- docs: not run: it installs -->\n```sh\npip install x\n```\n\n## U\n\n```\nbare\n```\n')
    first, second = sections(doc)
    excerpt, prompt, install = first.blocks
    assert (excerpt.file, excerpt.excerpt, excerpt.text) == ("agents/small.yaml", True,
                                                              "# excerpt of agents/small.yaml\nsettings:\n  seed: 1\n")
    assert (prompt.file, runs(prompt)) == ("flows/a/a.prompt.md", True)
    assert (install.not_run, runs(install)) == ("it installs", False)
    assert second.blocks[0].language == "" and second.title == "U"


# docs/index.md: every page of docs/ once, in one of the four parts a reader takes them in
PARTS = ("Getting started", "How-to", "Reference", "Explanation")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


def index_parts() -> dict[str, list[Path]]:
    """The pages docs/index.md links under each of its `## <part>` headings."""
    index = REPO / "docs" / "index.md"
    parts: dict[str, list[Path]] = {}
    part = None
    for line in index.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            part = line[3:].strip()
            parts[part] = []
        elif part is not None:
            parts[part] += [(index.parent / link.partition("#")[0]).resolve() for link in MD_LINK.findall(line)]
    return parts


def test_the_index_lists_every_page_once_in_its_part():
    parts = index_parts()
    assert tuple(parts) == PARTS, f"docs/index.md's parts are {list(parts)}, not {list(PARTS)}"
    listed = [page for pages in parts.values() for page in pages]
    twice = sorted({str(p.relative_to(REPO)) for p in listed if listed.count(p) > 1})
    assert not twice, f"docs/index.md lists these pages more than once: {twice}"
    pages = set(PAGES) - {REPO / "docs" / "index.md"}
    missing = sorted(str(p.relative_to(REPO)) for p in pages - set(listed))
    assert not missing, f"docs/index.md does not list: {missing}"
    absent = sorted(str(p) for p in set(listed) - pages)
    assert not absent, f"docs/index.md lists pages docs/ does not hold: {absent}"


def reference_text() -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in index_parts()["Reference"])


def on_page(name: str, text: str) -> bool:
    """`name` written as code: alone, with its arguments (`--aqven-cases N`) or called (`hook(config)`)."""
    return re.search(rf"`{re.escape(name)}[` (]", text) is not None


def test_every_option_ini_value_and_hook_is_on_a_reference_page(pytester):
    """Found as a user's pytest finds them (the plugin loaded by its entry point), not by reading files."""
    shown = pytester.runpytest("--help").stdout.lines
    options = {m[1] for line in shown if (m := re.match(r"\s+(--aqven-[\w-]+)", line))}
    ini = {m[1] for line in shown if (m := re.match(r"\s+(aqven_\w+) \(", line))}
    hooks = {name for name in dir(pytester.parseconfig().hook) if name.startswith("pytest_aqven_")}
    assert options and ini and hooks, "pytest --help shows no --aqven-* option or aqven_* ini value, or no hook"
    text = reference_text()
    missing = sorted(name for name in options | ini | hooks if not on_page(name, text))
    assert not missing, f"not on a reference page (docs/index.md's Reference part): {missing}"


class _Parsed(BaseException):
    """Raised in place of parsing, once `aqven` has built its parser."""


def aqven_parser() -> argparse.ArgumentParser:
    """The parser the `aqven` console script builds, found through its entry point as a shell finds it."""
    (script,) = importlib.metadata.entry_points(group="console_scripts", name="aqven")
    built: list[argparse.ArgumentParser] = []

    def parse_args(parser, *args, **kwargs):
        built.append(parser)
        raise _Parsed

    with mock.patch.object(argparse.ArgumentParser, "parse_args", parse_args), pytest.raises(_Parsed):
        script.load()(["--help"])
    return built[0]


def leaf_commands(parser: argparse.ArgumentParser, path: str = "aqven"):
    """(`aqven series show`, its parser) for every command that takes no further subcommand."""
    nested = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not nested:
        yield path, parser
    for action in nested:
        for name, sub in action.choices.items():
            yield from leaf_commands(sub, f"{path} {name}")


def test_every_aqven_command_and_its_arguments_are_on_the_reference_page():
    """Each command has a heading of its own; each of its arguments is named under it, or, shared by every
    command that reads a project (--project, --store), in the page's opening."""
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    opening = text.split("\n## ", 1)[0]
    missing = []
    for command, parser in leaf_commands(aqven_parser()):
        heading = re.search(rf"^#+ `{re.escape(command)}`\n(.*?)(?=^#|\Z)", text, re.M | re.S)
        if heading is None:
            missing.append(command)
            continue
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            name = action.option_strings[0] if action.option_strings else action.metavar or action.dest
            if not on_page(name, heading[1]) and not on_page(name, opening):
                missing.append(f"{command} {name}")
    assert not missing, f"docs/cli.md does not name: {missing}"


def prose(doc: Path) -> list[str]:
    """The lines of a page outside its fenced blocks (whose output may show links and `#` comments)."""
    lines, fence = [], None
    for line in doc.read_text(encoding="utf-8").splitlines():
        match = FENCE.match(line)
        if fence is None and match:
            fence = match[2]
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None:
            lines.append(line)
    return lines


def anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives the headings of a page: lower case, punctuation but `-` and `_` dropped,
    spaces as `-`."""
    return {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line in prose(doc) if HEADING.match(line)}


def test_every_link_names_a_file_and_heading_the_repository_holds():
    broken = []
    for doc in [*DOCS, REPO / "bench" / "LOG.md"]:
        for target in MD_LINK.findall(re.sub(r"`[^`\n]*`", "", "\n".join(prose(doc)))):   # not in code
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            file = (doc.parent / path).resolve() if path else doc
            if not file.exists():
                broken.append(f"{doc.relative_to(REPO)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{doc.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "links to what the repository does not hold:\n" + "\n".join(broken)


# a path in the repository, not a pattern (`tests/test_faults_*.py`, `findings/<series>.yaml`)
REPO_PATH = re.compile(r"(?:^|[\s(])((?:pytest_aqven|tests|bench|docs|example_project|\.ci)/[\w./-]*+)(?![*<{])")


def test_every_path_the_docs_name_is_in_the_repository():
    """A file or folder named in code (`tests/test_tally.py`, `bench/bench_floor.py --rounds 3`) exists: a
    moved or deleted file fails here until the docs say where it went."""
    absent = []
    for doc in [*DOCS, REPO / "bench" / "LOG.md"]:
        for span in re.findall(r"`([^`\n]+)`", "\n".join(prose(doc))):
            paths = [path.rstrip(".-") for path in REPO_PATH.findall(span)]
            absent += [f"{doc.relative_to(REPO)}: {path}" for path in paths
                       if not (REPO / path).exists() and not (doc.parent / path).exists()]
    assert not absent, "the docs name what the repository does not hold:\n" + "\n".join(absent)
