"""The `aqven verdicts` section of pytest's terminal summary."""
from __future__ import annotations

COLOURS = {"confirmed": {"green": True}, "refuted": {"red": True}, "inconclusive": {"yellow": True},
           "invalid": {"red": True, "bold": True}, "signal": {"cyan": True}}


def launch_plans(tr, plans) -> None:
    if not plans:
        return
    tr.write_sep("=", "aqven launch plans")
    for experiment, split, p in plans:
        tr.write_line(f"{experiment} ({split}): {p.attempts} attempts ({p.cases} cases × {p.repeats} repeats × "
                      f"{p.variants} variants), {p.available} cases available")
        if p.below_recommended:
            tr.write_line(f"  below the recommended {p.recommended_cases} cases: {p.text}", yellow=True)
        else:
            tr.write_line(f"  {p.text}")


def summary(tr, conclusions) -> None:
    if not conclusions:
        return
    tr.write_sep("=", "aqven verdicts")
    for nodeid, c in conclusions:
        head = f"{c.experiment} ({c.split}, {c.done}/{c.total} attempts): "
        if c.verdict is None:
            tr.write_line(head + f"no verdict: {c.note}", yellow=True)
            continue
        word = c.state or "look"
        tr.write(head)
        tr.write(word, **COLOURS.get(word, {}))
        tr.write_line(f" - {c.verdict.text}")
        deciders = sorted({cell.decided_by for cell in c.verdict.cells if cell.decided_by})
        if c.verdict.cells:
            family = c.verdict.cells[0].estimate.family
            tr.write_line(f"  intervals: {family}" + (f", decided by the {' and '.join(deciders)} interval"
                                                      if deciders else ""))
        if c.finding is not None:
            tr.write_line(f"  finding: {_shown(tr, c.finding)}")


def _shown(tr, path) -> str:
    try:
        return str(path.relative_to(tr.config.invocation_params.dir))
    except ValueError:
        return str(path)
