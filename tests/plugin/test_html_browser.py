"""The pytest-html report of the example project, rendered by a real headless chromium: the verdict
sections and interval plots are where their numbers say, in light and dark, and the file stays small."""
from __future__ import annotations

import math
import os
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from pytest_aqven.plugin.html import BADGE
from pytest_aqven.report import svg

EXAMPLE = Path(__file__).parents[2] / "example_project"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1"]
SVG = "{http://www.w3.org/2000/svg}"


def _find_chromium() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's chromium; installed here with apt-get where missing and we are root, else a clear skip."""
    found = _find_chromium()
    if found is None and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-q", "chromium"]
        if subprocess.run(install, env=env, capture_output=True, timeout=900).returncode != 0:
            subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=900)
            subprocess.run(install, env=env, capture_output=True, timeout=900)
        found = _find_chromium()
    if found is None:
        pytest.skip("no chromium: install Debian's chromium (apt-get install -y chromium) to run the browser "
                    "test; it was not installed here (not root, or no apt-get)")
    return found


def browse(chromium: str, url: str, out: Path, *args: str) -> subprocess.CompletedProcess:
    profile = out.parent / f"profile-{out.stem}"        # a fresh profile per run
    return subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", *args, url],
                          capture_output=True, text=True, timeout=180, cwd=out.parent)


def read_png(path: Path) -> tuple[int, int, int, list[bytes]]:
    """(width, height, bytes per pixel, unfiltered rows) of an 8-bit RGB/RGBA non-interlaced PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


class Picture:
    def __init__(self, path: Path):
        self.width, self.height, self.bpp, self.rows = read_png(path)

    def rgb(self, x: int, y: int) -> tuple[int, int, int]:
        i = x * self.bpp
        return tuple(self.rows[y][i:i + 3])

    def near(self, x: int, y: int, colour: tuple[int, int, int], tolerance: int = 60) -> bool:
        return sum(abs(p - q) for p, q in zip(self.rgb(x, y), colour)) <= tolerance

    def first_run(self, colour, min_length: int = 25) -> tuple[int, int, int]:
        """The topmost horizontal run of `colour` at least min_length long: (y, x_start, x_end)."""
        for y in range(self.height):
            run = 0
            for x in range(self.width):
                run = run + 1 if self.near(x, y, colour) else 0
                if run >= min_length:
                    end = x
                    while end + 1 < self.width and self.near(end + 1, y, colour):
                        end += 1
                    start = end
                    while start - 1 >= 0 and self.near(start - 1, y, colour):
                        start -= 1
                    return y, start, end
        raise AssertionError(f"no run of {colour} in the screenshot")

    def columns(self, colour, y0: int, y1: int, x0: int, x1: int) -> list[int]:
        """Columns in [x0, x1) where `colour` covers most of the rows y0..y1 (a vertical line)."""
        return [x for x in range(max(0, x0), min(self.width, x1))
                if sum(self.near(x, y, colour, 90) for y in range(y0, y1)) >= (y1 - y0) * 0.6]


def svg_round_ratios() -> set[float]:
    return {round(m * 10.0 ** k, 6) for k in range(-4, 5) for m in (1, 2, 5)}


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG 2 contrast ratio of two sRGB colours."""
    def luminance(rgb):
        c = [v / 255 for v in rgb]
        c = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in c]
        return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def hex_rgb(h: str) -> tuple[int, int, int]:
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The html report of the example project, as `pytest example_project --html` writes it."""
    work = tmp_path_factory.mktemp("html")
    shutil.copytree(EXAMPLE, work / "example_project", ignore=shutil.ignore_patterns(".aqven", "__pycache__"))
    out = work / "report.html"
    run = subprocess.run(["pytest", "example_project", "-p", "no:cacheprovider", f"--html={out}",
                          "--self-contained-html", "-q"], cwd=work, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PATH": f"{Path(os.sys.executable).parent}:{os.environ['PATH']}"})
    assert out.is_file(), run.stdout[-3000:] + run.stderr[-3000:]
    return out


@pytest.mark.slow
def test_the_example_report_is_small_and_has_no_traceback(report):
    text = report.read_text()
    assert len(text.encode()) < 1_000_000
    assert "Traceback" not in text and "_pytest/" not in text
    assert text.count('class="aqven-verdict') == 2 and text.count('<svg class="aqven-plot"') == 2


def _plots(dom: str) -> list[ET.Element]:
    return [ET.fromstring(m) for m in re.findall(r'<svg class="aqven-plot".*?</svg>', dom, re.S)]


@pytest.mark.slow
def test_chromium_renders_the_plots_where_their_numbers_say(chromium, report):
    dom = browse(chromium, report.as_uri(), report.with_name("dom.html"), "--dump-dom",
                 "--virtual-time-budget=5000").stdout
    plots = _plots(dom)
    assert len(plots) == 2, dom[:2000]
    # DOM: every interval, estimate and edge is drawn at the x its value maps to on its panel's axis
    for plot in plots:
        for panel in plot.iter(f"{SVG}g"):
            lo, hi = float(panel.get("data-domain-low")), float(panel.get("data-domain-high"))

            def x(v: float) -> float:
                return svg.LEFT + (min(max(v, lo), hi) - lo) / (hi - lo) * (svg.RIGHT - svg.LEFT)
            lines = list(panel.iter(f"{SVG}line"))
            for ci in (line for line in lines if "aqven-ci" in line.get("class")):
                low, high = ci.get("data-low"), ci.get("data-high")
                assert abs(float(ci.get("x1")) - (x(float(low)) if low else svg.LEFT)) < 0.01
                assert abs(float(ci.get("x2")) - (x(float(high)) if high else svg.RIGHT)) < 0.01
            for mark in (line for line in lines if line.get("class") in ("aqven-edge", "aqven-bound")):
                assert abs(float(mark.get("x1")) - x(float(mark.get("data-value")))) < 0.01
            for dot in panel.iter(f"{SVG}circle"):
                assert abs(float(dot.get("cx")) - x(float(dot.get("data-value")))) < 0.01
            # ticks at round values (1, 2 or 5 times a power of ten; round ratios on a log-ratio axis), zero among
            # them when it is in view; the bound and the edge labelled with their values; the unit in words
            values = [float(t.get("data-value")) for t in panel.iter(f"{SVG}line") if "aqven-tick" in t.get("class")]
            assert len(values) >= 2, panel.attrib
            if panel.get("data-unit") == "log_ratio":
                assert all(round(math.exp(v), 6) in svg_round_ratios() for v in values), values
            else:
                step = values[1] - values[0]
                assert round(step / 10 ** math.floor(math.log10(step)), 6) in (1, 2, 5), values
                assert all(abs(v / step - round(v / step)) < 1e-6 for v in values), values
                assert (lo <= 0 <= hi) == (0.0 in values), (lo, hi, values)
            texts = {t.get("class"): "".join(t.itertext()) for t in panel.iter(f"{SVG}text") if t.get("class")}
            words = "".join(next(t for t in panel.iter(f"{SVG}tspan") if t.get("class") == "aqven-unit").itertext())
            assert words.strip(" ()") in (svg.UNITS[panel.get("data-unit")], svg.OWN_RATIO)
            for mark, name in (("aqven-bound", "aqven-bound-label"), ("aqven-edge", "aqven-edge-label")):
                if any(line.get("class") == mark for line in lines):
                    assert texts[name].startswith(("bound ", "no difference ", "edge ")), texts
    units = [panel.get("data-unit") for plot in plots for panel in plot.iter(f"{SVG}g")]
    assert units == ["rate", "rate", "log_ratio"]       # the relative guardrail is in ratio words
    log_labels = [t.text for t in plots[1].iter(f"{SVG}text") if t.get("class") == "aqven-tick-label"][-4:]
    assert all(label.startswith("x") for label in log_labels), log_labels
    # the cost guardrail in the sentence's own terms: small costs about 0.11x large, the edge at x1.5 (margin 0.5)
    guardrail = list(plots[1].iter(f"{SVG}g"))[-1]
    words = "".join(next(t for t in guardrail.iter(f"{SVG}tspan") if t.get("class") == "aqven-unit").itertext())
    assert words.strip(" ()") == svg.OWN_RATIO
    cost_ratio = math.exp(float(next(guardrail.iter(f"{SVG}circle")).get("data-value")))
    assert 0.05 < cost_ratio < 0.2, cost_ratio
    edge_mark = next(line for line in guardrail.iter(f"{SVG}line") if line.get("class") == "aqven-edge")
    assert round(math.exp(float(edge_mark.get("data-value"))), 6) == 1.5
    assert [t.text for t in guardrail.iter(f"{SVG}text") if t.get("class") == "aqven-edge-label"] == ["edge x1.5"]
    badges = re.findall(r'<span class="aqven-badge aqven-badge-(\w+)" data-state="\w+">(\w+)</span>', dom)
    assert badges == [("signal", "signal"), ("signal", "signal")], badges
    first = plots[0]
    ci = next(line for line in first.iter(f"{SVG}line") if "aqven-ci" in line.get("class"))
    edge = next(line for line in first.iter(f"{SVG}line") if line.get("class") == "aqven-edge")
    bound = next(line for line in first.iter(f"{SVG}line") if line.get("class") == "aqven-bound")
    verdict = ci.get("class").split()[1]
    assert verdict == "unclear"     # the example's threshold experiment on working cases is too wide to decide

    # pixels: the same relative positions on the screenshot, light and dark; pytest-html's page stays light under
    # a dark colour scheme, and so does the plot on it
    for scheme, extra, bg, edge_colour in (("light", [], (255, 255, 255), "#0969da"),
                                           ("dark", ["--force-dark-mode"], (255, 255, 255), "#0969da")):
        png = report.with_name(f"report-{scheme}.png")
        browse(chromium, report.as_uri(), png, f"--screenshot={png}", "--window-size=1400,1600", *extra)
        picture = Picture(png)
        colour = hex_rgb({"unclear": "#bf8700"}[verdict])
        y, start, end = picture.first_run(colour)
        x1, x2 = float(ci.get("x1")), float(ci.get("x2"))
        assert abs((end - start + 1) - (x2 - x1)) <= 3, (scheme, start, end, x1, x2)
        origin = start - x1                     # where the svg's x = 0 lies on the screenshot
        edges = picture.columns(hex_rgb(edge_colour), y - 8, y + 8, int(origin) + svg.LEFT - 5, int(origin) + svg.RIGHT + 5)
        assert edges and abs(sum(edges) / len(edges) - (origin + float(edge.get("x1")))) <= 2.5, (scheme, edges)
        bounds = [x for x in range(int(origin + float(bound.get("x1"))) - 3, int(origin + float(bound.get("x1"))) + 4)
                  if any(picture.near(x, yy, (110, 119, 129), 90) for yy in range(y - 12, y + 12))]
        assert bounds, (scheme, "the dashed bound is not drawn")
        assert picture.near(int(origin) + 4, y, bg, 30), (scheme, picture.rgb(int(origin) + 4, y))
        # the verdict badge: its colour, with white text inside it, at 4.5:1 or more (WCAG AA) against that text
        badge = hex_rgb(BADGE["signal"])
        by, bx0, bx1 = picture.first_run(badge, 30)
        inside = [picture.rgb(x, yy) for yy in range(by, by + 14) for x in range(bx0, bx1)]
        assert any(min(p) > 235 for p in inside), (scheme, "no white text in the badge")
        assert contrast(badge, (255, 255, 255)) >= 4.5


def test_the_cell_table_reads_a_narrow_interval_shows_and_every_cell_names_its_decider():
    """No browser: the cells' text is dark on white at WCAG AA or better (pytest-html greys table text); an interval
    narrower than its estimate's dot has caps taller than the dot; an unclear cell says no bound decided it."""
    from pytest_aqven.plugin import html

    assert contrast(hex_rgb(html.TEXT), (255, 255, 255)) >= 4.5 > contrast(hex_rgb("#999999"), (255, 255, 255))
    assert f"color:{html.TEXT}" in html.CSS
    cell = {"role": "primary", "metric": "label", "variant": "bot", "baseline": None, "direction": "higher_is_better",
            "bound": "above", "threshold": 0.5, "margin": 0.0, "relative": False, "edge": 0.5, "verdict": "pass",
            "decided_by": "betting", "estimate": {"value": 0.9, "low": 0.899, "high": 0.901, "unit": "rate",
                                                  "family": "robust"}}
    drawn = ET.fromstring(svg.plot([cell]))
    ci = next(line for line in drawn.iter(f"{SVG}line") if "aqven-ci" in line.get("class"))
    assert float(ci.get("x2")) - float(ci.get("x1")) < 2 * 5          # narrower than the dot (r=5)
    caps = [line for line in drawn.iter(f"{SVG}line") if "aqven-cap" in line.get("class")]
    assert [float(c.get("x1")) for c in caps] == [float(ci.get("x1")), float(ci.get("x2"))]
    assert all(float(c.get("y2")) - float(c.get("y1")) > 2 * 5 for c in caps)
    assert html.decided_by(cell) == "betting"
    assert html.decided_by({**cell, "verdict": "unclear", "decided_by": None}) == "neither bound clears"
