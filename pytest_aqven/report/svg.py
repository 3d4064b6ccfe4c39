"""The interval plot of a verdict as inline SVG: per metric (the primary, then each guardrail) one row per
variant with its estimate and 95% interval, the bound (dashed) and the edge the interval was compared with
(solid). Every mark carries its value as a data attribute, so a test can check where it was drawn.
Its own background and colours, light or dark with the reader's colour scheme."""
from __future__ import annotations

from html import escape

WIDTH = 640
LEFT, RIGHT = 170, 610         # the plot area, in SVG units
ROW, HEAD, AXIS = 26, 26, 30   # heights of a variant row, a panel title and its axis

STYLE = (
    "<style>"
    ".aqven-plot{color:#1f2328;font:12px sans-serif}.aqven-plot .bg{fill:#ffffff}"
    ".aqven-plot text{fill:currentColor}.aqven-plot .aqven-axis{stroke:currentColor;stroke-width:1}"
    ".aqven-plot .aqven-bound{stroke:#6e7781;stroke-width:2;stroke-dasharray:5 4}"
    ".aqven-plot .aqven-edge{stroke:#0969da;stroke-width:2}"
    ".aqven-plot .aqven-ci{stroke-width:4;stroke-linecap:butt}"
    ".aqven-plot .pass{stroke:#1a7f37;fill:#1a7f37}.aqven-plot .fail{stroke:#cf222e;fill:#cf222e}"
    ".aqven-plot .unclear{stroke:#bf8700;fill:#bf8700}"
    "@media (prefers-color-scheme: dark){.aqven-plot{color:#e6edf3}.aqven-plot .bg{fill:#0d1117}"
    ".aqven-plot .aqven-edge{stroke:#4493f8}.aqven-plot .pass{stroke:#3fb950;fill:#3fb950}"
    ".aqven-plot .fail{stroke:#f85149;fill:#f85149}.aqven-plot .unclear{stroke:#d29922;fill:#d29922}}"
    "</style>"
)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


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
        panels.setdefault((cell["role"], cell["metric"]), []).append(cell)
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
    what = "difference " if first["baseline"] else ""
    out = [f'<g class="aqven-panel" data-metric="{escape(metric)}" data-role="{role}" '
           f'data-domain-low="{lo!r}" data-domain-high="{hi!r}" data-x-low="{LEFT}" data-x-high="{RIGHT}">',
           f'<text x="8" y="{top + 16}" font-weight="bold">{escape(role)}: {what}{escape(metric)}</text>']
    rows_top, rows_bottom = top + HEAD, top + HEAD + ROW * len(cells)
    ref, edge = _reference(first), first["edge"]
    if ref is not None:
        out.append(f'<line class="aqven-bound" data-value="{ref!r}" x1="{x(ref)}" x2="{x(ref)}" '
                   f'y1="{rows_top - 4}" y2="{rows_bottom + 4}"/>')
    if edge is not None and (ref is None or abs(edge - ref) > 1e-12):
        out.append(f'<line class="aqven-edge" data-value="{edge!r}" x1="{x(edge)}" x2="{x(edge)}" '
                   f'y1="{rows_top - 4}" y2="{rows_bottom + 4}"/>')
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
        if e["value"] is not None:
            out.append(f'<circle class="aqven-estimate {verdict}" data-value="{e["value"]!r}" cx="{x(e["value"])}" '
                       f'cy="{cy}" r="5"/>')
        else:
            out.append(f'<text x="{LEFT}" y="{cy + 4}">no estimate</text>')
    axis_y = rows_bottom + 8
    out.append(f'<line class="aqven-axis" x1="{LEFT}" x2="{RIGHT}" y1="{axis_y}" y2="{axis_y}"/>')
    for v in (lo, (lo + hi) / 2, hi):
        out.append(f'<line class="aqven-axis" x1="{x(v)}" x2="{x(v)}" y1="{axis_y}" y2="{axis_y + 4}"/>'
                   f'<text x="{x(v)}" y="{axis_y + 16}" text-anchor="middle">{_fmt(v)}</text>')
    legend = "bound (dashed), edge (blue)" if ref is not None else "edge (blue)"
    out.append(f'<text x="{RIGHT}" y="{top + 16}" text-anchor="end" font-size="10">{legend}</text></g>')
    return "".join(out)
