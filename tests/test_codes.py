"""One definition of every runtime error code (pytest_aqven/codes.py): the package uses no other, the docs'
table is that definition, and the module is a leaf every layer may import."""
import ast
from pathlib import Path

import pytest_aqven
from pytest_aqven import codes

PACKAGE = Path(pytest_aqven.__file__).parent
DOCS = PACKAGE.parent / "docs" / "concepts.md"

# where a runtime code is written: (callable name, index of the code among its positional arguments)
CODE_ARGUMENT = {"RunError": 0, "ProviderError": 0, "Problem": 0, "CheckRaised": 1, "_validate": 2, "fit": 2,
                 "call_user": 4, "type_error": 0}
CODE_NAMES = {"code", "error_code"}         # variables that hold a code


def _strings(node: ast.AST) -> list[str]:
    """The string literals a code expression can evaluate to (`"x"`, `a if c else "y"`, `a or "z"`)."""
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else []
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    if isinstance(node, ast.BoolOp):
        return [text for value in node.values for text in _strings(value)]
    return []


def aqven_check(path) -> bool:
    """A module of `aqven check`, whose codes are diagnostics: check/, each layer's *_rules.py, api/check.py."""
    parts = path.relative_to(PACKAGE).parts
    return "check" in parts or path.name.endswith("_rules.py") or parts == ("api", "check.py")


def used_codes() -> dict[str, str]:
    """Every string the package passes or assigns as a runtime error code -> where (file:line)."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts          # relative: the checkout itself may sit under a check/ folder
        if "compat" in parts or aqven_check(path) or path.name == "codes.py":   # diagnostics (docs/check.md)
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(PACKAGE.parent).as_posix()
        for node in ast.walk(tree):
            values: list[ast.AST] = []
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name in CODE_ARGUMENT:
                    index = CODE_ARGUMENT[name]
                    if len(node.args) > index:
                        values.append(node.args[index])
                    values += [k.value for k in node.keywords if k.arg == "code"]
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id in CODE_NAMES:
                        values.append(node.value)
                    elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        values += [v for t, v in zip(target.elts, node.value.elts)
                                   if isinstance(t, ast.Name) and t.id in CODE_NAMES]
            for value in values:
                for text in _strings(value):
                    found.setdefault(text, f"{where}:{getattr(value, 'lineno', 0)}")
    return found


def test_every_code_the_package_uses_is_defined_with_its_outcome():
    used = used_codes()
    assert len(used) > 30, "the scan found the codes"
    undefined = {code: where for code, where in used.items() if code not in codes.CODES}
    assert undefined == {}, "define these in pytest_aqven/codes.py"


def test_the_call_outcome_codes_of_llm_nodes_are_defined():
    from pytest_aqven.engine.llm import OUTCOME_CODES

    assert set(OUTCOME_CODES.values()) <= set(codes.CODES)
    assert set(OUTCOME_CODES) == {o.value for o in codes.CallOutcome} - {"ok"}


def test_the_codes_module_is_a_leaf():
    tree = ast.parse((PACKAGE / "codes.py").read_text(encoding="utf-8"))
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    modules = [n.module for n in imports if isinstance(n, ast.ImportFrom)] + \
              [a.name for n in imports if isinstance(n, ast.Import) for a in n.names]
    assert not any(isinstance(n, ast.ImportFrom) and n.level for n in imports)
    assert not any(m.startswith("pytest_aqven") for m in modules), modules


def test_every_outcome_is_counted_or_not_and_every_code_names_one():
    assert set(codes.COUNTED) | set(codes.UNCOUNTED) == set(codes.OUTCOMES)
    assert {c.outcome for c in codes.CODES.values()} <= set(codes.OUTCOMES) - {"ok", "cancelled"}
    assert codes.outcome_of(None) == "ok" and codes.outcome_of("never defined") == "infra_error"


def test_only_the_model_s_own_failures_are_counted():
    counted = {code for code, c in codes.CODES.items() if codes.counted(c.outcome)}
    assert counted == {"truncated", "check_failed", "refusal", "MODEL_INVALID_JSON", "MODEL_SCHEMA_MISMATCH",
                       "MODEL_NO_STRUCTURED_OUTPUT", "MODEL_RETRIES_EXHAUSTED"}
    for code in ("CODE_OUTPUT_INVALID", "CONTAINER_OUTPUT_INVALID", "TOOL_OUTPUT_INVALID", "NARROW_INVALID",
                 "RETURNS_INVALID", "CHECK_VALUE_INVALID"):
        assert codes.outcome_of(code) == "infra_error"


def test_the_docs_table_is_the_definition():
    assert codes.markdown_table() in DOCS.read_text(encoding="utf-8"), \
        "docs/concepts.md: paste pytest_aqven.codes.markdown_table() under 'Error codes'"


# where an outcome or a state is compared or written: the names, attributes and record keys that hold one
OUTCOME_HOLDERS = {"outcome"}
STATE_HOLDERS = {"status", "state"}
CELL_VERDICT_HOLDERS = {"verdict"}
KIND_HOLDERS = {"kind"}


def _holder(node: ast.AST) -> str | None:
    """`outcome`, `x.outcome`, `r["outcome"]`, `r.get("outcome")` -> "outcome"."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value if isinstance(node.slice.value, str) else None
    if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "get" and node.args \
            and isinstance(node.args[0], ast.Constant):
        return node.args[0].value
    return None


def _values(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [text for element in node.elts for text in _strings(element)]
    return _strings(node)


def used_words(holders: set[str], tree: ast.AST) -> list[tuple[str, int]]:
    """Every string literal compared with, assigned to or written as a record key of a holder, with its line."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        pairs: list[tuple[ast.AST, ast.AST]] = []
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            pairs += [(a, b) for a, b in zip(sides, sides[1:])] + [(b, a) for a, b in zip(sides, sides[1:])]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            pairs += [(t, node.value) for t in targets]
        elif isinstance(node, ast.Dict):
            pairs += [(k, v) for k, v in zip(node.keys, node.values) if k is not None]
        elif isinstance(node, ast.keyword) and node.arg:
            pairs.append((ast.Name(node.arg), node.value))
        for holder, value in pairs:
            name = holder.value if isinstance(holder, ast.Constant) else _holder(holder)
            if name in holders:
                found += [(text, getattr(value, "lineno", 0)) for text in _values(value)]
    return found


def _package_trees():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if "compat" in parts or "scaffold" in parts or aqven_check(path):    # diagnostics, not runtime
            continue
        yield path.relative_to(PACKAGE.parent).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def test_every_outcome_the_package_uses_is_defined():
    defined = set(codes.OUTCOMES) | {o.value for o in codes.CallOutcome}     # an attempt's, a model call's
    used = {f"{where}:{line}": text for where, tree in _package_trees()
            for text, line in used_words(OUTCOME_HOLDERS, tree)}
    assert len(used) > 10, "the scan found the outcomes"
    assert {where: text for where, text in used.items() if text not in defined} == {}, \
        "define these in pytest_aqven/codes.py (Outcome)"


def test_the_scan_sees_a_mistyped_outcome_or_state_wherever_it_is_written():
    tree = ast.parse('if r["outcome"] == "infra_eror": pass\nx = {"status": "runing"}\nAttempt(outcome="okay")\n'
                     'if attempt.state in ("passed", "faild"): pass')
    assert used_words(OUTCOME_HOLDERS, tree) == [("infra_eror", 1), ("okay", 3)]
    assert used_words(STATE_HOLDERS, tree) == [("runing", 2), ("passed", 4), ("faild", 4)]


def test_every_state_the_package_uses_is_a_defined_state_kind():
    states = {s.value for kind in (codes.SeriesState, codes.ClaimState, codes.NodeState, codes.CheckState)
              for s in kind}
    # the other words a `state` holds: a verdict's (stats/verdicts.py; "open" and "none" where a report has no
    # verdict or a look's), and "pending", the state of a tool's job in AQVEN's poll protocol (engine/tools.py)
    verdicts = {s.value for s in codes.VerdictState} | {"look", "open", "none", "pending"}
    used = {f"{where}:{line}": text for where, tree in _package_trees()
            for text, line in used_words(STATE_HOLDERS, tree)}
    assert len(used) > 10, "the scan found the states"
    assert {where: text for where, text in used.items() if text not in states | verdicts} == {}, \
        "define these in pytest_aqven/codes.py (SeriesState, ClaimState, NodeState)"


def test_the_schema_allows_exactly_the_defined_series_and_claim_states():
    import re

    schema = "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py") if "compat" not in p.parts)
    allowed = {column: set(re.findall(r"'(\w+)'", values))
               for column, values in re.findall(r"(\w+) TEXT NOT NULL CHECK \(\1 IN \(([^)]*)\)\)", schema)}
    assert allowed["status"] == {s.value for s in codes.SeriesState}
    assert allowed["state"] == {s.value for s in codes.ClaimState}


def test_every_code_names_its_class_and_what_raises_it():
    for code, c in codes.CODES.items():
        assert c.raised_by and set(c.raised_by) <= set(codes.RAISERS), code
        assert (c.error_class is codes.ErrorClass.MODEL) == codes.counted(c.outcome), code
        assert (c.error_class is codes.ErrorClass.SPEND) == (c.outcome == "budget_cut"), code
    assert all(codes.CODES[code].raised_by == ("llm",) for code, c in codes.CODES.items() if codes.counted(c.outcome))


def test_the_vocabulary_is_plain_strings_where_records_carry_it():
    assert all(type(o) is str for o in codes.OUTCOMES + codes.OPEN_SERIES)
    assert all(type(c.outcome) is str for c in codes.CODES.values())
    assert type(codes.outcome_of("timeout")) is str and codes.Outcome.OK == "ok"



def test_every_cell_verdict_the_package_uses_is_defined():
    defined = {v.value for v in codes.CellVerdict}
    used = {f"{where}:{line}": text for where, tree in _package_trees()
            for text, line in used_words(CELL_VERDICT_HOLDERS, tree)}
    assert len(used) > 5, "the scan found the cell verdicts"
    assert {where: text for where, text in used.items() if text not in defined} == {}, \
        "define these in pytest_aqven/codes.py (CellVerdict)"


def test_the_ledger_and_the_scheduler_write_their_kinds_as_members():
    """series/ledger.py's Decision and series/scheduler.py's AttemptTurn take a codes.LedgerKind and a
    codes.SchedulerKind (mypy holds the fields to them); no bare word is compared with a kind either."""
    assert {k.value for k in codes.LedgerKind} - {k.value for k in codes.SchedulerKind} == {"start", "wait"}
    trees = {where: tree for where, tree in _package_trees() if where.endswith(("series/ledger.py",
                                                                               "series/scheduler.py"))}
    assert len(trees) == 2
    assert {where: used_words(KIND_HOLDERS, tree) for where, tree in trees.items()} == {where: [] for where in trees}
    assert used_words(KIND_HOLDERS, ast.parse('if decision.kind == "strat": pass')) == [("strat", 1)]
