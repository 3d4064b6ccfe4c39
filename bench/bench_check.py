"""How long `aqven check` takes on a project of 100 experiments, as a ratio to reading the same YAML
files with plain yaml.safe_load, both measured side by side (alternating) in one run: these machines
are noisy, absolute times are not stable, the ratio is.

    PYTHONPATH=. python bench/bench_check.py [--experiments 100] [--rounds 15]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from check.showcase import FILES, Showcase  # noqa: E402  (the test suite's showcase project)

from pytest_aqven.api.check import check_root  # noqa: E402
from pytest_aqven.diagnostics import render_text  # noqa: E402

TEMPLATES = [rel for rel in FILES if rel.startswith("experiments/")]


def build(root: Path, experiments: int) -> Showcase:
    """The showcase with its experiments copied until there are `experiments` of them."""
    showcase = Showcase(root)
    for i in range(experiments - len(TEMPLATES)):
        template = TEMPLATES[i % len(TEMPLATES)]
        name = template.split("/")[1]
        showcase.write(f"experiments/{name}_{i:03d}/experiment.yaml", FILES[template])
    return showcase


def read_all(files: list[Path], loader=yaml.SafeLoader) -> None:
    for path in files:
        yaml.load(path.read_text(encoding="utf-8"), Loader=loader)   # yaml.safe_load when loader is SafeLoader


def read_all_c(files: list[Path]) -> None:
    """The same with libyaml's parser, which the checker itself uses when PyYAML has it."""
    read_all(files, getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        showcase = build(Path(tmp) / "lumen", args.experiments)
        files = sorted(showcase.root.rglob("*.yaml"))
        report = render_text(check_root(showcase.root))     # warm-up: imports the project's code once
        assert report.endswith("errors: 0, warnings: 0"), report
        read_all(files)
        check_times, yaml_times, c_times = [], [], []
        for _ in range(args.rounds):
            check_times.append(timed(check_root, showcase.root))
            yaml_times.append(timed(read_all, files))
            c_times.append(timed(read_all_c, files))
    check, plain, fast = (statistics.median(t) for t in (check_times, yaml_times, c_times))
    print(f"project: {args.experiments} experiments, {len(files)} YAML files")
    print(f"aqven check:     median {check * 1000:8.1f} ms over {args.rounds} rounds")
    print(f"yaml.safe_load:  median {plain * 1000:8.1f} ms over {args.rounds} rounds (same files)")
    print(f"yaml CSafeLoader: median {fast * 1000:8.1f} ms over {args.rounds} rounds (same files, libyaml)")
    print(f"ratio check / safe_load: {check / plain:.2f}")
    print(f"ratio check / CSafeLoader: {check / fast:.2f}")


if __name__ == "__main__":
    main()
