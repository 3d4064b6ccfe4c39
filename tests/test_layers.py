"""The layers of the package, locked: every import of the package (module-level, inside functions and under
`if TYPE_CHECKING:`; found with ast, never by importing) points down or sideways within its own package, no two
modules and no two packages import each other through any chain, and only the pytest layer (plugin/) imports
pytest, pluggy or xdist. Run with `-s` to see the graph between packages (`pytest tests/test_layers.py -s`).

An import under `if TYPE_CHECKING:` counts like any other: it never runs, but the annotation that needs it ties
the two modules as much as a call does, and a cycle it closes is a seam in the wrong place."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

import pytest_aqven

PACKAGE = Path(pytest_aqven.__file__).parent

# bottom up; a module belongs to the layer of the longest prefix that names it ("" is the package itself)
LAYERS = [
    {"codes", "diagnostics", "record"},     # the vocabulary, the diagnostics model, the attempt record: leaves
    {"stats"},
    {"storage"},                            # the database interface: series/ and the providers' limits share it
    # compat: install(), which puts the stand-in of AQVEN's API on sys.path, and the names of `aqven.spec` user code
    # imports (the project's types): they stay as low as the project they describe
    {"project", "compat", "compat.aqven", "compat.aqven.spec"},
    {"check"},                              # the check context and the rules of the project alone; each layer
                                            # above holds its own rules (engine/flow_rules.py ...), api/check.py runs them
    {"providers"},
    {"engine", "compat.aqven.policies"},    # with the evaluators and policies (`aqven.policies` names them)
    {"experiments"},
    {"series"},
    {"findings"},
    {"report"},
    {"api"},                                # the library face the plugin and the CLI call: every layer's aqven check
                                            # rules in one order, deciding a series, the launch plans of `aqven plan`
    # the top: the pytest layer (the only importer of pytest, pluggy and xdist), the CLI, the runtime face of
    # AQVEN's API (`aqven.runtime` runs flows and checks projects for user code), the scaffold
    {"", "compat.aqven.runtime", "plugin", "cli", "scaffold"},
]

# the edges the layers still have, each named so a new one fails and a mended one must leave the list
KNOWN_UPWARD: set[tuple[str, str]] = set()
KNOWN_CYCLES: list[set[str]] = []
# the libraries only the pytest layer may import: the rest of the package is a library the CLI runs without them
PYTEST_ONLY = {"pytest", "_pytest", "pluggy", "xdist"}
PYTEST_LAYER = "plugin"
# the `aqven` command's one parser tree: no other package builds a parser
CLI_ONLY = {"argparse"}
CLI_LAYER = "cli"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST):
    """Every Import/ImportFrom of the tree, at any depth (in functions, under `if TYPE_CHECKING:`)."""
    return (node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))


def _files(root: Path) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py")) if "template" not in p.parts}


def outside_imports(root: Path) -> dict[str, set[str]]:
    """Module -> the top-level names of what it imports from outside the package (`pytest`, `numpy` ...)."""
    found: dict[str, set[str]] = defaultdict(set)
    for name, path in _files(root).items():
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found[name] |= {a.name.split(".")[0] for a in node.names}
            elif node.level == 0 and node.module:
                found[name].add(node.module.split(".")[0])
    return found


def import_graph(root: Path, top: str = "pytest_aqven") -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (names relative to the package: "engine.runner")."""
    files = _files(root)
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in files.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        here = [p for p in here if p]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name[len(top) + 1:] for a in node.names if a.name.startswith(top + ".")]
            else:
                if node.level:
                    base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                    module = ".".join(base + ([node.module] if node.module else []))
                elif node.module == top or (node.module or "").startswith(top + "."):
                    module = node.module[len(top) + 1:]
                else:
                    continue
                # `from .x import y`: the submodule x.y where there is one, else x itself (its names)
                targets = [f"{module}.{a.name}".strip(".") if f"{module}.{a.name}".strip(".") in files else module
                           for a in node.names]
            for target in targets:
                while target not in files and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in files and target != name:
                    edges[name].add(target)
    edges.pop("", None)         # the package's __init__ imports nothing of its own but the plugin's version
    return {name: edges.get(name, set()) for name in files if name}


def layer_of(module: str) -> tuple[int, str]:
    """(layer index, its package name) of a module."""
    best = max((p for layer in LAYERS for p in layer if p == "" or module == p or module.startswith(p + ".")),
               key=len)
    return next(i for i, layer in enumerate(LAYERS) if best in layer), best


def upward(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a, bs in edges.items() for b in bs if layer_of(b)[0] > layer_of(a)[0]}


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for a, bs in edges.items():
        for b in bs:
            if layer_of(a)[1] != layer_of(b)[1]:
                out[layer_of(a)[1] or "(package)"].add(layer_of(b)[1] or "(package)")
    return out


def render(edges: dict[str, set[str]]) -> str:
    packages = package_graph(edges)
    order = sorted(packages, key=lambda p: (-layer_of(p if p != "(package)" else "")[0], p))
    return "\n".join(f"{p} -> {', '.join(sorted(packages[p], key=lambda q: (-layer_of(q)[0], q)))}" for p in order)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE)


def test_no_import_points_up_a_layer(graph):
    print("\nimports between packages (top layer first):\n" + render(graph))
    assert len(graph) > 150 and sum(map(len, graph.values())) > 300, "the walk found the package's imports"
    new = sorted(upward(graph) - KNOWN_UPWARD)
    assert new == [], "move the code to its layer (tests/test_layers.py LAYERS)"
    assert sorted(KNOWN_UPWARD - upward(graph)) == [], "gone: remove it from KNOWN_UPWARD"


def test_no_two_modules_import_each_other_through_any_chain(graph):
    found = cycles(graph)
    new = [sorted(c) for c in found if c not in KNOWN_CYCLES]
    assert new == [], "break the cycle by moving code to the module it belongs to"
    assert [sorted(c) for c in KNOWN_CYCLES if c not in found] == [], "gone: remove it from KNOWN_CYCLES"


def test_no_two_packages_import_each_other_through_any_chain(graph):
    assert cycles(package_graph(graph)) == [], "a package imports one that imports it back: move the code down"


def test_only_the_pytest_layer_imports_pytest_pluggy_or_xdist():
    imports = outside_imports(PACKAGE)
    assert "pytest" in imports["plugin"] and "_pytest" in imports["plugin.internals"], "the walk sees them"
    outside = {name: sorted(found & PYTEST_ONLY) for name, found in imports.items()
               if found & PYTEST_ONLY and layer_of(name)[1] != PYTEST_LAYER}
    assert outside == {}, "the library imports nothing of pytest: move the pytest part to plugin/"


def test_only_the_cli_builds_a_parser():
    imports = outside_imports(PACKAGE)
    assert "argparse" in imports["cli"] and "argparse" in imports["cli.series"], "the walk sees them"
    outside = sorted(name for name, found in imports.items() if found & CLI_ONLY and layer_of(name)[1] != CLI_LAYER)
    assert outside == [], "every parser of the aqven command is in cli/"


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in {p.parent for p in (root / "pkg").rglob("*.py")}:
        (folder / "__init__.py").touch()
    return root / "pkg"


def test_the_walk_sees_an_upward_edge_even_inside_a_function(tmp_path):
    """A synthetic package: stats reaching up into engine from inside a function is caught, and so is an import
    under TYPE_CHECKING."""
    root = _write(tmp_path, {
        "stats/model.py": "def f():\n    from ..engine.runner import Runner\n    return Runner\n",
        "stats/typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.engine import runner\n",
        "engine/runner.py": "from ..stats import model\nclass Runner: ...\n",
    })
    edges = import_graph(root, top="pkg")
    assert edges["stats.model"] == {"engine.runner"} and edges["stats.typed"] == {"engine.runner"}
    assert upward(edges) == {("stats.model", "engine.runner"), ("stats.typed", "engine.runner")}
    assert cycles(edges) == [{"stats.model", "engine.runner"}]
    assert "stats -> engine" in render(edges)


def test_the_walk_sees_a_cycle_between_modules_of_one_package(tmp_path):
    root = _write(tmp_path, {
        "series/a.py": "from . import b\n",
        "series/b.py": "import pkg.series.c\n",
        "series/c.py": "from .a import x\n",
    })
    edges = import_graph(root, top="pkg")
    assert upward(edges) == set() and cycles(edges) == [{"series.a", "series.b", "series.c"}]


def test_the_walk_sees_a_cycle_between_packages_and_pytest_outside_the_pytest_layer(tmp_path):
    """engine.a -> series.b and series.c -> engine.d: no two modules in a cycle, but the packages are; stats
    imports pytest under TYPE_CHECKING."""
    root = _write(tmp_path, {
        "engine/a.py": "from ..series import b\n",
        "series/c.py": "from ..engine import d\n",
        "stats/model.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pytest\n",
    })
    edges = import_graph(root, top="pkg")
    assert cycles(edges) == [] and cycles(package_graph(edges)) == [{"engine", "series"}]
    assert outside_imports(root)["stats.model"] == {"typing", "pytest"}
