"""Small builders for attempts in the stats tests."""

from pytest_aqven.stats import Attempt, CheckValue, SeriesFacts


def binary_attempts(variant, passes_per_case, repeats, check="promises", **extra):
    """One variant: case i passes its first passes_per_case[i] repeats of `repeats`."""
    out = []
    for i, passes in enumerate(passes_per_case):
        for r in range(1, repeats + 1):
            ok = r <= passes
            value = CheckValue("passed" if ok else "failed", 1.0 if ok else 0.0)
            out.append(Attempt(variant, f"case{i:03d}", r, "ok", ok, {check: value}, **extra))
    return out


def facts(variants=("gpt",), split="holdout", check_kinds=None, **kw):
    kinds = {"promises": "binary"} if check_kinds is None else check_kinds
    return SeriesFacts(series_id=kw.pop("series_id", "series-1"), split=split, variants=tuple(variants),
                       check_kinds=kinds, **kw)
