"""Averaged-over-orders betting wealth vs one order: one-sided miss rates (tails) and mean widths on the
betting grids of tests/stats/validation.py (beta-binomial and hard-case mixtures, 10 attempts a case).

Run: PYTHONPATH=. python bench/betting_orders.py [series per cell, default 2000]

An average of e-values is an e-value, so averaging the final wealth over K fixed case orders keeps
the guarantee; the single order also takes the maximum over time (Ville), which an average over
orders of differently ordered processes may not. The table says which is narrower."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pytest_aqven.stats import betting
from pytest_aqven.stats.betting import STEPS, TRUNCATION, _bets
from tests.stats.sim import beta_binomial, hard_case_mixture, tails


def lower_avg(x, perms, alpha=0.05, floor=True):
    """Largest m with mean_j K_n^(j)(m) >= 1/a (final wealth of each order, averaged): an e-value test."""
    x = np.asarray(x, float)
    a = alpha / 2
    n = x.shape[-1]
    xs = x[..., perms]                      # (..., K, n)
    K = perms.shape[0]
    lam = _bets(xs, a)
    g = 1.0 / np.sqrt(n) if floor else 0.0
    target = np.log(1.0 / a) + np.log(K)
    lo = np.zeros(x.shape[:-1]); width = 1.0
    for _ in range(STEPS):
        width /= 2
        mm = (lo + width)[..., None, None]
        f = np.minimum(TRUNCATION, np.maximum(g, lam * mm))
        logk = np.log1p(f * (xs / mm - 1.0)).sum(axis=-1)     # (..., K)
        top = logk.max(axis=-1, keepdims=True)
        lse = (top + np.log(np.exp(logk - top).sum(axis=-1, keepdims=True)))[..., 0]
        lo = lo + width * (lse >= target)
    return lo

def interval_avg(x, perms):
    lo = lower_avg(np.stack([x, 1 - x]), perms)
    return lo[0], 1 - lo[1]

def perms_for(K, n, seed=0):
    if K == 0:
        return None
    rng = np.random.default_rng([99, K, n])
    return np.stack([np.arange(n)] + [rng.permutation(n) for _ in range(K - 1)])

def cells(series):
    for cases in (12, 30, 100):
        for mu, rho in ((0.5, 0.3), (0.9, 0.1), (0.97, 0.6)):
            rng = np.random.default_rng([12, cases, int(mu * 100)])
            k, n = beta_binomial(rng, mu, rho, series, cases, 10)
            yield f"C={cases} mu={mu} rho={rho}", k / n, mu
    for cases in (12, 40, 100):
        for share, p_hard, p_good in ((0.03, 0.1, 0.99), (0.05, 0.0, 0.98), (0.10, 0.2, 0.95)):
            rng = np.random.default_rng([3, cases, 10, int(share * 100)])
            k, n, mu = hard_case_mixture(rng, share, p_hard, p_good, series, cases, 10)
            yield f"C={cases} {share:.0%} at {p_hard}, rest {p_good}", k / n, mu

def main(series=2000, Ks=(1, 8, 32)):
    print(f"series per cell: {series}; single = one order, Ville max over t (current); "
          "avgK = final wealth averaged over K fixed orders")
    head = f"{'cell':36s} | {'single over/under width':24s} | " + " | ".join(f"avg{K:<2d} over/under width" for K in Ks)
    print(head)
    for cell, x, mu in cells(series):
        lo, hi = betting.interval(x)
        cov, over, under = tails(lo, hi, mu)
        parts = [f"{over:.4f}/{under:.4f} {np.mean(hi - lo):.4f}"]
        for K in Ks:
            l2, h2 = interval_avg(x, perms_for(K, x.shape[-1]))
            c2, o2, u2 = tails(l2, h2, mu)
            parts.append(f"{o2:.4f}/{u2:.4f} {np.mean(h2 - l2):.4f}")
        print(f"{cell:36s} | " + " | ".join(f"{p:24s}" for p in parts), flush=True)

if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
