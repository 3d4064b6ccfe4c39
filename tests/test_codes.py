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


def used_codes() -> dict[str, str]:
    """Every string the package passes or assigns as a runtime error code -> where (file:line)."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts          # relative: the checkout itself may sit under a check/ folder
        if "compat" in parts or "check" in parts or path.name == "codes.py":   # check/: diagnostics (docs/check.md)
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
