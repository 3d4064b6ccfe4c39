"""Each cost cell's tails before and after the rule that a cost with no per-attempt bound known decides nothing
on its upper bound (docs/statistics.md, costs): cost_usd and cost_of_pass thresholds, and cost_usd pairs whose
candidate alone runs away (`cost_runaway_rows`), 2,000 series a cell.

    PYTHONPATH=. python bench/cost_tails.py
"""
from tests.stats import validation as V


def pair(r, prefix=""):
    return f"{r[prefix + 'confirmed']:.4f}/{r[prefix + 'refuted']:.4f}"


def main() -> None:
    print("| metric | cell | before: confirmed/refuted | after, no bound | after, bound known |")
    print("|---|---|---|---|---|")
    for r in V.cost_rows():
        bound = pair(r, "bound_") if "bound_confirmed" in r else "-"
        print(f"| cost_usd | {r['cell']} | {pair(r, 'model_')} | {pair(r)} | {bound} |")
    for r in V.cost_of_pass_threshold_rows():
        bound = pair(r, "bound_") if "bound_confirmed" in r else "-"
        print(f"| cost_of_pass | {r['cell']} | {pair(r, 'before_')} | {pair(r)} | {bound} |")
    for r in V.cost_runaway_rows():
        print(f"| cost_usd pair, the candidate alone runs away | {r['cell']} | {pair(r, 'before_')} | {pair(r)} | "
              f"{pair(r, 'bound_')} |")


if __name__ == "__main__":
    main()
