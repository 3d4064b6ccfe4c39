"""`aqven check`, and pytest's collection of the experiment, on a project whose dataset holds 100,000 cases:
whole-process time and peak RSS beside `yaml.safe_load` (libyaml) of the same file (targets: at most 10 s
and 500 MB, docs/performance.md). The collection row collects 100 of the cases (`--aqven-cases 100`), so
that it times loading and checking the whole dataset rather than pytest's cost of 100,000 items. With --before DIR (a folder holding another version's `pytest_aqven`
package, e.g. `git archive <commit> pytest_aqven | tar -x -C DIR`) the same commands run that version too,
in turn with this one, so before and after are measured side by side.

    python bench/bench_check_dataset.py [--cases 100000] [--rounds 3] [--warmup 1] [--collect] [--before DIR]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import projects  # noqa: E402
from sidebyside import PYTHON, compare, report  # noqa: E402

LOAD = ("import sys, yaml; yaml.load(open(sys.argv[1], encoding='utf-8'), "
        "Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1, help="rounds run first and not counted")
    ap.add_argument("--collect", action="store_true", help="also time `pytest --collect-only` of the experiment")
    ap.add_argument("--before", type=Path, help="a folder holding the pytest_aqven package to compare with")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = projects.write(Path(tmp, "proj"), cases=args.cases, repeats=1)
        commands = {"aqven check": [PYTHON, "-m", "pytest_aqven.cli", "check", str(root)]}
        if args.collect:
            commands["pytest --collect-only"] = [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                                 "--collect-only", "--aqven-cases", "100", str(root)]
        if args.before:
            before = ["env", f"PYTHONPATH={args.before.resolve()}"]
            commands.update({f"{name} (before)": before + cmd for name, cmd in list(commands.items())})
        commands["yaml.safe_load (libyaml)"] = [PYTHON, "-c", LOAD, str(root / "datasets" / "reviews.yaml")]
        runs = compare(commands, rounds=args.rounds, warmup=args.warmup, cwd=tmp)
    print(f"a dataset of {args.cases} cases; medians of {args.rounds}:")
    report(runs, against="yaml.safe_load (libyaml)")
    for name in [n for n in runs if n.endswith(" (before)")]:
        print(f"{name[:-9]} vs before:")
        report({name[:-9]: runs[name[:-9]], name: runs[name]}, against=name)


if __name__ == "__main__":
    main()
