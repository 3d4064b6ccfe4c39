"""The interval plot of a verdict as inline SVG: per metric (the primary, then each guardrail) one row per
variant with its estimate and 95% interval, the bound (dashed) and the edge the interval was compared with
(solid), each labelled with its value, on an axis with ticks at round values (zero among them when it is in
view) and its unit in words. Every mark carries its value as a data attribute, so a test can check where it
was drawn. A pair whose metric is better lower (cost, latency) is drawn in the metric's own terms, as its
sentence reads ("x0.11 the cost", the edge at x1.5), not in the good-direction scale the statistics use. Its own
light background and colours, as pytest-html's page has (the page does not follow a dark colour scheme, so
neither does the plot)."""
from __future__ import annotations

import math
from html import escape

WIDTH = 640
LEFT, RIGHT = 170, 610         # the plot area, in SVG units
ROW, HEAD, AXIS = 26, 38, 30   # heights of a variant row, a panel title (and the marks' labels) and its axis

STYLE = (
    "<style>"
    ".aqven-plot{color:#1f2328;font:12px sans-serif}.aqven-plot .bg{fill:#ffffff}"
    ".aqven-plot text{fill:currentColor}.aqven-plot .aqven-axis{stroke:currentColor;stroke-width:1}"
    ".aqven-plot .aqven-bound{stroke:#6e7781;stroke-width:2;stroke-dasharray:5 4}"
    ".aqven-plot .aqven-edge{stroke:#0969da;stroke-width:2}"
    ".aqven-plot .aqven-ci{stroke-width:4;stroke-linecap:butt}.aqven-plot .aqven-cap{stroke-width:2}"
    ".aqven-plot .pass{stroke:#1a7f37;fill:#1a7f37}.aqven-plot .fail{stroke:#cf222e;fill:#cf222e}"
    ".aqven-plot .unclear{stroke:#bf8700;fill:#bf8700}"
    "</style>"
)


# what a panel's numbers are, in words (stats.model.Estimate.unit)
UNITS = {"rate": "share of attempts", "score": "mean score", "ordinal": "mean grade", "usd": "US dollars",
         "ms": "milliseconds",
         "log_ratio": "times as good as the baseline, log scale: x1 the same, x2 twice as good"}
# a pair whose metric is better lower, in its own terms: the candidate's over the baseline's
OWN_RATIO = "times the baseline's, log scale: x1 the same, below x1 lower and better"


def unit_words(cell: dict) -> str:
    """A panel's unit in words; a pair says which way its difference goes."""
    unit = cell["estimate"]["unit"]
    if _own_terms(cell):
        return OWN_RATIO if unit == "log_ratio" else f"{UNITS.get(unit, unit)}, candidate minus baseline: below 0 lower and better"
    return UNITS.get(unit, unit)


def _own_terms(cell: dict) -> bool:
    """A pair whose metric is better lower: its numbers are negated from the good-direction scale."""
    return bool(cell["baseline"]) and cell.get("direction") == "lower_is_better"


def own(cell: dict) -> dict:
    """The cell with its estimate and edge in the metric's own terms (candidate over or minus baseline)."""
    if not _own_terms(cell):
        return cell
    e = cell["estimate"]

    def neg(v: float | None) -> float | None:
        return None if v is None else -v
    return {**cell, "edge": neg(cell["edge"]),
            "estimate": {**e, "value": neg(e["value"]), "low": neg(e["high"]), "high": neg(e["low"])}}


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round values in [lo, hi]: multiples of 1, 2 or 5 times a power of ten, about `count` of them; zero is
    one of them whenever it is in view."""
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9)
    values = [round(k * step, 12) for k in range(first, math.floor(hi / step + 1e-9) + 1)]
    return [0.0 if abs(v) < step * 1e-9 else v for v in values]


def tick_label(value: float, step: float, unit: str) -> str:
    """A tick as people read it: a log ratio as the ratio itself (x2, x0.5), else with the digits its step needs."""
    if unit == "log_ratio":
        ratio = math.exp(value)
        return f"x{ratio:.2g}" if ratio < 10 else f"x{ratio:.0f}"
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step > 0 else 0
    text = f"{value:.{decimals}f}"
    return "0" if float(text) == 0 else text


def _d(v: float | None) -> str:
    """A data attribute: the number, or empty for unbounded."""
    return "" if v is None else repr(v)


def _reference(cell: dict) -> float | None:
    """The bound: a threshold's declared value, a pair's zero difference."""
    return cell["threshold"] if cell["bound"] else 0.0


def _domain(cells: list[dict]) -> tuple[float, float]:
    xs = []
    for c in cells:
        e = c["estimate"]
        xs += [v for v in (e["value"], e["low"], e["high"], c["edge"], _reference(c)) if v is not None]
    lo, hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    pad = (hi - lo) * 0.08
    lo, hi = lo - pad, hi + pad
    if cells and cells[0]["estimate"]["unit"] == "rate" and not cells[0]["baseline"]:
        lo, hi = max(lo, 0.0), min(hi, 1.0)
    return lo, hi


def plot(cells: list[dict], title: str = "") -> str:
    if not cells:
        return ""
    panels: dict[tuple[str, str], list[dict]] = {}
    for cell in cells:
        panels.setdefault((cell["role"], cell["metric"]), []).append(own(cell))
    height = sum(HEAD + ROW * len(cs) + AXIS for cs in panels.values()) + 8
    out = [f'<svg class="aqven-plot" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)} intervals">', STYLE,
           f'<rect class="bg" x="0" y="0" width="{WIDTH}" height="{height}"/>']
    y = 4
    for (role, metric), cs in panels.items():
        out.append(_panel(role, metric, cs, y))
        y += HEAD + ROW * len(cs) + AXIS
    out.append("</svg>")
    return "".join(out)


def _panel(role: str, metric: str, cells: list[dict], top: float) -> str:
    lo, hi = _domain(cells)

    def x(v: float) -> float:
        return round(LEFT + (min(max(v, lo), hi) - lo) / (hi - lo) * (RIGHT - LEFT), 2)

    first = cells[0]
    unit = first["estimate"]["unit"]
    what = "difference in " if first["baseline"] and unit != "log_ratio" else ""
    words = unit_words(first)
    out = [f'<g class="aqven-panel" data-metric="{escape(metric)}" data-role="{role}" data-unit="{escape(unit)}" '
           f'data-domain-low="{lo!r}" data-domain-high="{hi!r}" data-x-low="{LEFT}" data-x-high="{RIGHT}">',
           f'<text x="8" y="{top + 14}" font-weight="bold">{escape(role)}: {what}{escape(metric)}'
           f'<tspan class="aqven-unit" font-weight="normal"> ({escape(words)})</tspan></text>']
    rows_top, rows_bottom = top + HEAD, top + HEAD + ROW * len(cells)
    ref, edge = _reference(first), first["edge"]
    show_edge = edge is not None and (ref is None or abs(edge - ref) > 1e-12)

    def label(v: float) -> str:
        return tick_label(v, 0, unit) if unit == "log_ratio" else _fmt(v)
    # the labels sit above the rows, pulled apart when the marks are close: the bound's to the left, the edge's right
    apart = show_edge and ref is not None and abs(x(edge) - x(ref)) < 90
    if ref is not None:
        name = "bound" if first["bound"] else "no difference"
        anchor = ("end" if x(ref) <= x(edge) else "start") if apart else "middle"
        out.append(f'<line class="aqven-bound" data-value="{ref!r}" x1="{x(ref)}" x2="{x(ref)}" '
                   f'y1="{rows_top - 4}" y2="{rows_bottom + 4}"/>'
                   f'<text class="aqven-bound-label" x="{x(ref)}" y="{rows_top - 6}" text-anchor="{anchor}" '
                   f'font-size="10">{name} {escape(label(ref))}</text>')
    if show_edge:
        anchor = ("start" if ref is None or x(edge) >= x(ref) else "end") if apart else "middle"
        out.append(f'<line class="aqven-edge" data-value="{edge!r}" x1="{x(edge)}" x2="{x(edge)}" '
                   f'y1="{rows_top - 4}" y2="{rows_bottom + 4}"/>'
                   f'<text class="aqven-edge-label" x="{x(edge)}" y="{rows_top - 6}" text-anchor="{anchor}" '
                   f'font-size="10">edge {escape(label(edge))}</text>')
    for i, cell in enumerate(cells):
        cy = rows_top + ROW * i + ROW / 2
        e, verdict = cell["estimate"], cell["verdict"]
        name = cell["variant"] if not cell["baseline"] else f"{cell['variant']} vs {cell['baseline']}"
        out.append(f'<text x="8" y="{cy + 4}">{escape(name)}</text>')
        if e["low"] is not None or e["high"] is not None:
            low = lo if e["low"] is None else e["low"]
            high = hi if e["high"] is None else e["high"]
            out.append(f'<line class="aqven-ci {verdict}" data-variant="{escape(cell["variant"])}" '
                       f'data-low="{_d(e["low"])}" data-high="{_d(e["high"])}" x1="{x(low)}" x2="{x(high)}" '
                       f'y1="{cy}" y2="{cy}"/>')
            # caps taller than the estimate's dot: an interval narrower than the dot is still seen
            out += [f'<line class="aqven-cap {verdict}" x1="{x(v)}" x2="{x(v)}" y1="{cy - 9}" y2="{cy + 9}"/>'
                    for v, given in ((low, e["low"]), (high, e["high"])) if given is not None]
        if e["value"] is not None:
            out.append(f'<circle class="aqven-estimate {verdict}" data-value="{e["value"]!r}" cx="{x(e["value"])}" '
                       f'cy="{cy}" r="5"/>')
        else:
            out.append(f'<text x="{LEFT}" y="{cy + 4}">no estimate</text>')
    axis_y = rows_bottom + 8
    out.append(f'<line class="aqven-axis" x1="{LEFT}" x2="{RIGHT}" y1="{axis_y}" y2="{axis_y}"/>')
    marks = _log_ticks(lo, hi) if unit == "log_ratio" else None
    values = marks or ticks(lo, hi)
    step = values[1] - values[0] if len(values) > 1 else 1.0
    for v in values:
        text = tick_label(v, step, unit)
        out.append(f'<line class="aqven-axis aqven-tick" data-value="{v!r}" x1="{x(v)}" x2="{x(v)}" y1="{axis_y}" '
                   f'y2="{axis_y + 4}"/><text class="aqven-tick-label" x="{x(v)}" y="{axis_y + 16}" '
                   f'text-anchor="middle">{escape(text)}</text>')
    out.append("</g>")
    return "".join(out)


def _log_ticks(lo: float, hi: float) -> list[float] | None:
    """Ticks of a log-ratio axis at round ratios (x0.5, x1, x2, x5, x10, ...), or None when fewer than two fit."""
    ratios = sorted({m * 10.0 ** k for k in range(-4, 5) for m in (1, 2, 5)})
    inside = [math.log(r) for r in ratios if lo <= math.log(r) <= hi]
    while len(inside) > 6:
        inside = inside[::2]
    return inside if len(inside) >= 2 else None
