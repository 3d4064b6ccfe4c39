"""The project's declared prices ([tool.aqven.prices] in pyproject.toml, providers/prices.py): a declaration
that does not fit is E_PRICES_INVALID; a model whose calls nothing can price is W_PRICE_UNKNOWN, because
the spend of its series is then a lower bound that the spend cap cannot hold."""
from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

from ..check.context import CheckContext
from ..diagnostics import Diagnostic
from . import prices


def price_rules(ctx: CheckContext) -> list[Diagnostic]:
    project, spec = ctx.project, ctx.project.spec
    out: list[Diagnostic] = []
    if spec is None:            # aqven.yaml did not load: its own diagnostics say why
        return out
    declared = prices.load(project.root)
    if declared.file is not None:
        file = os.path.relpath(declared.file, project.root).replace(os.sep, "/")
        for p in declared.problems:
            out.append(Diagnostic("E_PRICES_INVALID", file, ("tool", "aqven", "prices", *([p.key] if p.key else [])),
                                  f"{prices.TABLE} {p.message}", p.line, p.column,
                                  hint='write "<provider>:<model>" = { input = <USD>, output = <USD> }, '
                                       "in USD per million input and output tokens"))
    for agent_id, agent in project.agents.items():
        for path, model in [(("model",), agent.spec.model),
                            *((("fallback_models", i), m) for i, m in enumerate(agent.spec.fallback_models))]:
            provider_id, name = model.split(":", 1)
            provider = next((p for p in spec.providers if p.id == provider_id), None)
            why = provider and prices.unpriced_reason(provider, name, declared)
            if why:
                message = unpriced_message(agent_id, model, why, spec.research.spend_cap_usd)
                out.append(agent.doc.diag("W_PRICE_UNKNOWN", path, message, prices.what_to_do(model, declared, project.root)))
    return out


def unpriced_message(agent_id: str, model: str, why: str, cap: Decimal) -> str:
    return (f"agent {agent_id}: the calls of {model} have no known price: {why}, and {prices.TABLE} does not name "
            f"it; unless the server reports each call's cost, a series that calls it spends at least what it shows, "
            f"and the spend cap (${cap:.2f}) counts only priced calls, so it cannot stop that series")


def before_the_run(root: Path) -> list[str]:
    """pytest's header, before the first attempt: the W_PRICE_UNKNOWN lines of the project at `root`."""
    from ..project.loader import load_project  # noqa: PLC0415
    try:
        project = load_project(root)
        if project.spec is None:
            return []
        found = [d for d in price_rules(CheckContext(project)) if d.code == "W_PRICE_UNKNOWN"]
    except Exception:         # aqven check reports it, during collection
        return []
    return [line for d in sorted(found, key=Diagnostic.sort_key) for line in d.render().splitlines()]
