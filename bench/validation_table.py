"""Print the measured validation table of docs/statistics.md (same seeded grids as tests/stats).

    PYTHONPATH=. python bench/validation_table.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.stats import validation as V  # noqa: E402


def span(rows, key):
    values = [r[key] for r in rows]
    return f"{min(values):.3f}-{max(values):.3f}"


def worst(rows, *keys):
    return f"{max(max(r[k] for k in keys) for r in rows):.4f}"


def main() -> None:
    out = ["| test | what | cells | measured | band |", "|---|---|---|---|---|"]
    add = out.append
    rows = V.v1_rows()
    add(f"| V1 | M1, C 30-100, mu 0.5-0.8, rho 0.02-0.6 | {len(rows)} | coverage {span(rows, 'coverage')}, "
        f"worst tail {worst(rows, 'over', 'under')} | coverage 0.93-0.985, tails <= 0.035 |")
    rows = V.v2_rows()
    add(f"| V2 | M1 at mu 0.97, C 12-100, smooth + 3% mixture | {len(rows)} | false-confirm <= "
        f"{worst(rows, 'over')}, coverage >= {min(r['coverage'] for r in rows):.3f}, width at 12x20 <= "
        f"{max(r['width'] for r in rows if r['cell'].startswith('C=12 R=20')):.3f} | false-confirm <= 0.035, "
        "coverage >= 0.93, width <= 0.32 |")
    rows = V.robust_mixture_rows()
    add(f"| V2-mix | robust hull on hard-case mixtures (3-10% of cases at 0-0.2), C 12-100 | {len(rows)} | "
        f"worst tail {worst(rows, 'over', 'under')} (M1 alone: false-confirm up to {worst(rows, 'm1_over')}) | "
        "tails <= 0.035 |")
    rows = V.betting_alone_rows()
    add(f"| betting | betting interval alone, beta-binomial | {len(rows)} | worst tail {worst(rows, 'over', 'under')} | "
        "tails <= 0.035 |")
    rows = V.unmeasured_rows()
    add(f"| unmeasured | the failing attempts are the unmeasured ones (timeouts, inputs cut by the cap), C 40-200 | "
        f"{len(rows)} | worst tail {worst(rows, 'confirmed', 'refuted')} (measured alone: false-confirm up to "
        f"{worst(rows, 'measured_confirmed')}) | tails <= 0.025 |")
    row = V.pooled_wilson_coverage()
    add(f"| V3 | pooled Wilson at 12x20, mu 0.97, rho 0.3 (must fail) | 1 | coverage {row['coverage']:.3f} | < 0.7 |")
    rows = V.v4_rows()
    add(f"| V4 | M2 paired rates, logit-normal, C 12-100 | {len(rows)} | coverage {span(rows, 'coverage')}, "
        f"worst tail {worst(rows, 'over', 'under')} | coverage >= 0.93 (<= 0.985 for C >= 30, rates <= 0.9), "
        "tails <= 0.035 |")
    rows = V.concentrated_harm_rows()
    add(f"| V4-harm | robust hull, NI truth at -m, harm in 3-10% of cases | {len(rows)} | worst tail "
        f"{worst(rows, 'over', 'under')} (M2 alone: false NI up to {worst(rows, 'm2_over')}) | tails <= 0.035 |")
    rows = V.v5_rows()
    rates = [max(r.get("better", 0), r.get("worse", 0), r.get("confirmed", 0)) for r in rows]
    add(f"| V5 | A/A and boundary truths, both families, C 12-100 | {len(rows)} | worst P(confirmed) "
        f"{max(rates):.4f} | <= 0.035 |")
    rows = V.v6_rows()

    def cells(prefix, sigma=None):
        return [r for r in rows if r["cell"].startswith(prefix + " ") and (sigma is None or f"sigma_c={sigma}" in r["cell"])]

    def by_c(group):
        return ", ".join(f"{r['coverage']:.3f}" for r in group)

    for sigma in (0.5, 1.0):
        group = cells("skew-t", sigma)
        add(f"| V6 | skewness-corrected t on case means (positive unbounded), lognormal sigma_c {sigma} | {len(group)} | "
            f"coverage {by_c(group)} (C = 12, 30, 100), worst tail {worst(group, 'over', 'under')} | "
            "0.93-0.97 (C >= 30), >= 0.90 (C = 12) |")
    paired = cells("paired t")
    add(f"| V6 | paired t, lognormal sigma_c 0.5 and 1.0 | {len(paired)} | coverage {span(paired, 'coverage')}, "
        f"worst tail {worst(paired, 'over', 'under')} | same |")
    for sigma in (0.5, 1.0):
        group = cells("t", sigma)
        add(f"| V6 | plain t on case means (not used for these metrics), sigma_c {sigma} | {len(group)} | "
            f"coverage {by_c(group)} | for comparison |")
    rows = V.v6_shape_rows()
    add(f"| V6-shape | skewness-corrected t on normal, uniform, gamma(4), exponential, gamma(0.5), weibull(0.7) "
        f"case means, C 12-100 | {len(rows)} | coverage {span(rows, 'coverage')}, worst tail "
        f"{worst(rows, 'over', 'under')} (plain t: worst tail {worst(rows, 't_over', 't_under')}) | tails <= 0.035 |")
    rows = V.v7_rows()
    m7 = [r for r in rows if r["cell"].startswith("M7")]
    lr = [r for r in rows if r["cell"].startswith("paired")]
    add(f"| V7 | M7 cost_of_pass, pass 0.3-0.9 | {len(m7)} | coverage {span(m7, 'coverage')} | "
        "0.93-0.97 (C >= 30), >= 0.92 (C = 12) |")
    add(f"| V7 | paired log ratio of cost_of_pass | {len(lr)} | coverage {span(lr, 'coverage')} | same |")
    rows = V.v8_m5_rows()
    p50 = [r for r in rows if r["q"] == 0.5]
    p95 = [r for r in rows if r["q"] == 0.95 and r["cases"] >= 30 and r["sigma_c"] <= 0.5]
    small = [r for r in rows if r["q"] == 0.95 and r["cases"] < 30]
    add(f"| V8 | M5 p50 | {len(p50)} | coverage {span(p50, 'coverage')} | 0.93-0.975 |")
    add(f"| V8 | M5 p95, C >= 30, sigma_c 0.5 | {len(p95)} | coverage {span(p95, 'coverage')} | >= 0.93 |")
    add(f"| V8 | M5 p95, C = 12: misses flagged low | {len(small)} | {min(r['flagged_misses'] for r in small):.2f} | "
        ">= 0.90 |")
    rows = V.v8_m6_rows()
    add(f"| V8 | M6 log p95 ratio, scale and heterogeneous shifts | {len(rows)} | coverage {span(rows, 'coverage')} | "
        ">= 0.93 |")
    rows = V.v9_rows()
    add(f"| V9 | planner, §8 rows (+ robust) | {len(rows)} | power at plan {span(rows, 'power')}; at plan/1.1 "
        f"{span(rows, 'power_smaller')}; planned C {', '.join(str(r['planned']) for r in rows)} | "
        ">= 0.78 at plan, < 0.8 at plan/1.1 |")
    rows = V.cost_rows()
    rare = [r for r in rows if r["shape"] == "rare"]
    add(f"| cost | cost_usd thresholds, lognormal costs (sigma 1, 2; between, within cases, intra-case correlation "
        f"0.9) and 1% of attempts at 100x, C 30-400, R 1 and 5 | {len(rows)} | worst tail "
        f"{worst(rows, 'over', 'under')} with no bound known, its upper bound deciding nothing (before: up to "
        f"{worst(rows, 'model_confirmed', 'model_refuted')}); rare huge costs with the bound known "
        f"{worst(rare, 'bound_confirmed', 'bound_refuted')} | tails <= 0.035 |")
    rows = V.cost_of_pass_threshold_rows()
    rare = [r for r in rows if r["shape"] == "rare"]
    add(f"| cost-of-pass threshold | cost_of_pass thresholds on the cost cells, C 30 and 100 | {len(rows)} | worst tail "
        f"{worst(rows, 'over', 'under')} with no bound known (M7 alone: up to "
        f"{worst(rows, 'before_confirmed', 'before_refuted')}); rare huge costs with the bound known "
        f"{worst(rare, 'bound_confirmed', 'bound_refuted')} | tails <= 0.035 |")
    rows = V.cost_pair_rows()
    add(f"| cost-pair | relative cost_usd guardrail on the same cells | {len(rows)} | worst tail "
        f"{worst([r for r in rows if r['shape'] != 'rare'], 'over', 'under')} | tails <= 0.035 |")
    rows = V.cost_of_pass_rows()
    add(f"| cost-of-pass | relative cost_of_pass guardrail on the cost cells, pass rates U(0.4, 1) | {len(rows)} | "
        f"worst tail {worst([r for r in rows if r['cases'] >= 100], 'over', 'under')} at C >= 100, "
        f"{worst([r for r in rows if r['cases'] < 100], 'over', 'under')} at C = 30 | <= 0.035 at C >= 100, "
        "<= 0.045 at 30 |")
    rows = V.cost_shape_rows()
    add(f"| cost-shape | cost_usd thresholds on V6's other shapes | {len(rows)} | worst tail {worst(rows, 'over', 'under')}, "
        f"width {span(rows, 'width')}x the skewness-corrected t's | for comparison |")
    rows = V.width_rows()
    ratios = sorted(r["ratio"] for r in rows)
    widest = max(rows, key=lambda r: r["ratio"])
    add(f"| width | robust hull / M1 median width on rates, C 12-100, R 1-20 | {len(rows)} | median "
        f"{ratios[len(ratios) // 2]:.2f}x, widest {widest['ratio']:.2f}x (its floor {widest['floor']:.2f}x), worst tail "
        f"{worst(rows, 'over', 'under')} | median <= 1.25x, each <= 1.35x max(1.25, floor) |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
