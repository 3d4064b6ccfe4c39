"""What every rule of the flow compiler shares: the check context, the list diagnostics go to, and the
checks of one type name, one value, one code reference and one evaluator's parameters."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from pydantic import ValidationError

from ..check.context import CheckContext
from ..diagnostics import Diagnostic

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..project.yamlpos import YamlDoc


class RuleBase:
    """The checks every rule family of the flow compiler shares; `out` is the one list they all append to."""

    def __init__(self, ctx: CheckContext, out: list[Diagnostic]) -> None:
        self.ctx = ctx
        self.out = out

    def _type(self, doc, path: tuple, ref: str | None, what: str) -> None:
        if ref is None:
            return
        problem = self.ctx.types.problem(ref)
        if problem:
            self.out.append(doc.diag("E_TYPE_UNKNOWN", path, f"{what}: {problem}",
                                     f"add types/<folder>/<snake_name>.yaml or name one of: {self.ctx.types.known_names()}"))

    def _check_params(self, doc: YamlDoc, path: tuple, given: dict, model: type[BaseModel], label: str, who: str) -> None:
        """The `with:` of a built-in evaluator fits its parameters model (the one the engine validates with)."""
        try:
            model.model_validate(given or {})
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = tuple(err["loc"])
            key = loc[:1] if loc and loc[0] in (given or {}) else ()
            self.out.append(doc.diag("E_CHECK_PARAMS", path + ("with",) + key,
                                     f"{who}: evaluator {label}: with parameters are invalid: "
                                     f"{'.'.join(map(str, loc)) or 'with'}: {err['msg'].lower()}",
                                     f"the parameters of {label} are: {', '.join(model.model_fields) or 'none'}"))

    def _value_problem(self, type_ref: str, value: Any) -> str | None:
        try:
            self.ctx.adapter(type_ref).validate_python(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(map(str, err["loc"]))
            return (f"{where}: " if where else "") + err["msg"].lower()
        except Exception:       # an unknown type is reported where it is named
            return None
        return None

    def _code_ref(self, doc, path: tuple, ref: str, here: Path, who: str) -> Callable | None:
        fn, problem = self.ctx.resolver.resolve(ref, here)
        if problem:
            self.out.append(doc.diag("E_CODE_REF_UNRESOLVED", path, f"{who}: {problem}",
                                     "write fn for a function of the .py file beside the YAML, @root.<module>:<fn> "
                                     "or <package>.<module>:<fn>, and make the module import cleanly"))
        return fn
