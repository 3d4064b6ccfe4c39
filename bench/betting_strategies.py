"""Other betting strategies for the robust interval, measured on the width grid of tests/stats/validation.py
(160 beta-binomial cells, C 12-100, R 1-20, mu 0.5-0.97, rho 0.1 and 0.3): median and widest ratio of the
robust hull to M1, the widest cell's floor, and the worst one-sided miss rates (bench/robust_width.py
measures truncations and scaled plug-in bets, bench/betting_orders.py averaged case orders).

- aGRAPA: predictable bets that depend on the candidate mean m, the growth-optimal bet from the running
  mean and variance of the earlier cases.
- A mixture of constant bets: the wealth is the average over K fixed bet fractions f_k of
  prod (1 + f_k (x/m - 1)) (an average of test martingales is one). It tracks the best constant bet in
  hindsight at a cost of ln K, where the plug-in bets in use guess one bet from the running variance.

Run: PYTHONPATH=. python bench/betting_strategies.py [series per cell, default 1000]"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pytest_aqven.stats import betting  # noqa: E402
from tests.stats import validation as V  # noqa: E402

IN_USE = betting.lower_bound


def mixture_lower_bound(fractions: np.ndarray):
    """betting.lower_bound with the wealth averaged over constant bet fractions (bisection on [0, 1])."""
    log_k_count = np.log(len(fractions))

    def lower_bound(x, alpha=0.05, floor=True):
        x = np.asarray(x, dtype=float)
        log_target = np.log(2 / alpha)
        lo, hi = np.zeros(x.shape[:-1]), np.ones(x.shape[:-1])
        f = fractions[:, None]
        for _ in range(30):
            m = (lo + hi) / 2
            xs = x[..., None, :] / m[..., None, None]
            log_w = np.cumsum(np.log1p(f * (xs - 1.0)), axis=-1)           # (..., K, n)
            top = log_w.max(axis=-2, keepdims=True)
            mix = (top + np.log(np.exp(log_w - top).sum(axis=-2, keepdims=True)))[..., 0, :] - log_k_count
            rejected = mix.max(axis=-1) >= log_target
            lo, hi = np.where(rejected, m, lo), np.where(rejected, hi, m)
        return lo
    return lower_bound


def agrapa_lower_bound(truncation=0.95, floor_bets=True):
    """Predictable bets that depend on the candidate m (aGRAPA, Waudby-Smith & Ramdas 2023 §B): the growth-
    optimal bet lam = (mu - m) / (s2 + (mu - m)^2) from the running mean and variance of the earlier cases,
    as a fraction f = lam m, clipped to [g, c] (g = 1/sqrt(n) as in use, or 0)."""
    def lower_bound(x, alpha=0.05, floor=True):
        x = np.asarray(x, dtype=float)
        n = x.shape[-1]
        t = np.arange(1, n + 1)
        mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)
        s2 = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)
        prev = lambda v, first: np.concatenate([np.full(x.shape[:-1] + (1,), first), v[..., :-1]], axis=-1)
        mu_prev, s2_prev = prev(mu, 0.5), prev(s2, 0.25)
        g = 1 / np.sqrt(n) if floor_bets else 0.0
        log_target = np.log(2 / alpha)
        lo, hi = np.zeros(x.shape[:-1]), np.ones(x.shape[:-1])
        for _ in range(30):
            m = ((lo + hi) / 2)[..., None]
            gap = mu_prev - m
            f = np.clip(m * gap / (s2_prev + gap**2), g, truncation)
            rejected = np.cumsum(np.log1p(f * (x / m - 1.0)), axis=-1).max(axis=-1) >= log_target
            lo, hi = np.where(rejected, m[..., 0], lo), np.where(rejected, hi, m[..., 0])
        return lo
    return lower_bound


CANDIDATES = (
    ("in use: plug-in bets, c 0.95", IN_USE),
    ("aGRAPA bets, floor 1/sqrt(n), c 0.95", agrapa_lower_bound()),
    ("aGRAPA bets, no floor, c 0.95", agrapa_lower_bound(floor_bets=False)),
    ("aGRAPA bets, floor 1/sqrt(n), c 0.99", agrapa_lower_bound(0.99)),
    ("mixture of 8 bets, 0.95 / 2^j", mixture_lower_bound(0.95 / 2.0 ** np.arange(8))),
    ("mixture of 16 bets, 0.95 / sqrt2^j", mixture_lower_bound(0.95 / np.sqrt(2.0) ** np.arange(16))),
    ("mixture of 20 bets, uniform on (0, 0.95]", mixture_lower_bound(np.linspace(0.95 / 20, 0.95, 20))),
)


def main() -> None:
    series = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    print("| candidate | median ratio | widest ratio (cell, its floor) | worst tails over/under |\n|---|---|---|---|")
    for name, lower_bound in CANDIDATES:
        betting.lower_bound = lower_bound
        rows = V.width_rows(series)
        widest = max(rows, key=lambda r: r["ratio"])
        print(f"| {name} | {np.median([r['ratio'] for r in rows]):.3f} | {widest['ratio']:.3f} ({widest['cell']}, "
              f"{widest['floor']:.3f}) | {max(r['over'] for r in rows):.4f}/{max(r['under'] for r in rows):.4f} |",
              flush=True)
    betting.lower_bound = IN_USE


if __name__ == "__main__":
    main()
