"""--aqven-summary FILE: the verdicts as a Markdown table, for a CI step summary (GitHub's
$GITHUB_STEP_SUMMARY, a GitLab or Buildkite annotation). Appended, as those files expect."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .text import against, figure, interval, usd

HEADER = ("experiment", "split", "verdict", "estimate", "95% interval", "against", "attempts", "spend")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def rows(entries: list[dict], unrun: list[tuple[str, str, str, str]], standing: Sequence[dict] = ()) -> list[tuple[str, ...]]:
    """One row per experiment: its primary cell (the first, when every variant has one); a held-out experiment
    whose cases are spent, the finding that stands (nothing ran)."""
    out: list[tuple[str, ...]] = []
    for entry in entries:
        primary = next((c for c in entry["cells"] if c["role"] == "primary"), None)
        estimate = span = bound = "-"
        if primary is not None:
            e, signed = primary["estimate"], primary["baseline"] is not None
            estimate, span = figure(e["value"], e["unit"], signed), interval(e, signed)
            bound = against(primary).removeprefix("against ")
        verdict = entry["verdict"]
        word = "open" if verdict is None else ("look" if verdict["state"] == "none" else verdict["state"])
        spend = entry["spend"]
        spent = ("at least " if spend["lower_bound"] else "") + usd(spend["usd"]) + f" of {usd(spend['cap_usd'])}"
        a = entry["attempts"]
        out.append((entry["experiment"], entry["split"], f"**{word}**", estimate, span, bound,
                    f"{a['done']}/{a['total']}", spent))
    out += [(experiment, split, f"**{state}**", "-", "-", "-", "0", "-") for experiment, split, _, state in unrun]
    out += [(s["experiment"], "holdout", f"**{s['state']}** (the finding that stands)", "-", "-", "-", "0", "-")
            for s in standing]
    return out


def markdown(entries: list[dict], unrun: list[tuple[str, str, str, str]], standing: Sequence[dict] = ()) -> str:
    lines = ["### aqven verdicts", "", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows(entries, unrun, standing)]
    sentences = [(e["experiment"], e["verdict"]["sentence"] if e["verdict"] else e["note"]) for e in entries]
    sentences += [(experiment, why) for experiment, _, why, _ in unrun]
    sentences += [(s["experiment"], f"{s['statement']} ({s['finding']}; nothing ran)") for s in standing]
    lines += [""] + [f"- **{experiment}**: {_cell(text or '')}" for experiment, text in sentences]
    return "\n".join(lines) + "\n\n"


def append(path: Path, entries: list[dict], unrun: list[tuple[str, str, str, str]], standing: Sequence[dict] = ()) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as f:
        f.write(markdown(entries, unrun, standing))
