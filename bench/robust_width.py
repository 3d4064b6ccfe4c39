"""Betting-strategy candidates for the robust interval: median and worst width ratio (robust hull / M1)
and the worst one-sided miss rates on the width grid of tests/stats/validation.py (160 beta-binomial
cells, C 12-100, R 1-20, mu 0.5-0.97, rho 0.1 and 0.3).

Run: PYTHONPATH=. python bench/robust_width.py [series per cell, default 1000]

Candidates: the strategy in use (predictable plug-in bets, truncation c = 0.95), a larger truncation
c, plug-in bets scaled up, and both. `floor` is the ratio no interval valid for every case
distribution can go below (validation.width_rows)."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pytest_aqven.stats import betting  # noqa: E402
from tests.stats import validation as V  # noqa: E402

PLUG_IN = betting._bets
CANDIDATES = (("in use: c 0.95, plug-in bets", 0.95, 1.0), ("c 0.99", 0.99, 1.0), ("c 0.999", 0.999, 1.0),
              ("bets x1.5", 0.95, 1.5), ("bets x2", 0.95, 2.0), ("bets x3", 0.95, 3.0),
              ("bets x2, c 0.99", 0.99, 2.0))


def main() -> None:
    series = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    print("| candidate | median ratio | worst ratio (cell) | worst tails over/under |\n|---|---|---|---|")
    for name, truncation, scale in CANDIDATES:
        betting.TRUNCATION = truncation
        betting._bets = lambda x, a, scale=scale: scale * PLUG_IN(x, a)
        rows = V.width_rows(series)
        widest = max(rows, key=lambda r: r["ratio"])
        print(f"| {name} | {np.median([r['ratio'] for r in rows]):.3f} | {widest['ratio']:.3f} ({widest['cell']}, "
              f"floor {widest['floor']:.3f}) | {max(r['over'] for r in rows):.4f}/{max(r['under'] for r in rows):.4f} |",
              flush=True)


if __name__ == "__main__":
    main()
