"""Does a finding prove its own verdict? Its hash, its place, and its cells decided again from its data.

A forger who edits the state and recomputes `self_sha256` is caught by the recomputation: the data
give the old cells and verdict. To forge a verdict one has to forge data consistent with it.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import stats
from ..stats import evidence
from ..stats.model import STATISTICS_VERSION
from ..stats.verdicts import decide_table
from .fields import cell_dict, estimate_dict
from .selfhash import self_hash

Problem = tuple[tuple, str]   # (key path in the file, what is wrong)

REQUIRED = ("experiment", "series", "state", "statement", "cells", "variants", "scope", "method", "data",
            "self_sha256")


def expected_salt(package: str, experiment: str) -> str:
    return stats.experiment_salt(package, experiment)


def problems(document: Any, *, stem: str, folder: str, package: str | None, made: bool = False) -> list[Problem]:
    """Why the finding `<folder>/findings/<stem>.yaml` does not stand, or [] when it does. `made`: the
    document is one this process built, hashed and wrote from a verdict it decided (files.finding_text with
    decided), so its hash and cells hold by construction; only its place and salt are checked."""
    if not isinstance(document, Mapping):
        return [((), "it is not a mapping of finding keys")]
    missing = [k for k in REQUIRED if k not in document]
    if missing:
        return [((), f"it has no {', '.join(missing)}: it is not a finding this version writes")]
    out: list[Problem] = []
    if document["series"] != stem:
        out.append((("series",), f"the file is named {stem}, but it holds series {document['series']}"))
    if document["experiment"] != folder:
        out.append((("experiment",), f"it names experiment {document['experiment']}, "
                                     f"but lies in the findings of experiment {folder}"))
    digest = document["self_sha256"] if made else self_hash(document)
    if document["self_sha256"] != digest:
        out.append((("self_sha256",), f"self_sha256 is {document['self_sha256']}, but the body hashes to "
                                      f"{digest}: the file was edited"))
    salt = _get(document, ("method", "salt"))
    renamed = isinstance(salt, str) and salt.rsplit("/", 1)[-1] == folder    # the package was renamed since:
    if package is not None and salt != expected_salt(package, folder) and not renamed:   # W_HALVES_MOVED says so
        out.append((("method", "salt"), f"method.salt is {_get(document, ('method', 'salt'))}, but cases of this "
                                        f"experiment are keyed with {expected_salt(package, folder)}"))
    if made:
        return out
    found = _recomputed(document)
    if earlier_statistics(document) and not out and found and not _unreadable(found):
        return []       # intact, from a release that decided it another way: it stands (method_changed says so)
    return out + found


def _unreadable(found: list[Problem]) -> bool:
    return any(where == ("data",) for where, _ in found)


def earlier_statistics(document: Mapping) -> int | None:
    """The statistics version of a finding written by an earlier release (1 when none is recorded), else None:
    its verdict stands as written; today's decision of its data is said beside it (method_changed)."""
    version = _get(document, ("method", "statistics"))
    version = 1 if version is None else version
    return version if isinstance(version, int) and version < STATISTICS_VERSION else None


def method_changed(document: Mapping) -> str | None:
    """For an intact finding of earlier statistics: what today's method decides from its data, when that
    differs from what the finding says; else None."""
    version = earlier_statistics(document)
    found = _recomputed(document) if version is not None else []
    if not found or _unreadable(found):      # the same decision, or data no method reads (E_FINDING_TAMPERED)
        return None
    today = _cached_recompute(repr(document), document)     # it read the data just now: cached
    return (f"decided with statistics version {version}: {document['state']}; today's version {STATISTICS_VERSION} "
            f"would decide its data as {today.state}: {today.text}")


def _get(d: Any, path: tuple) -> Any:
    for key in path:
        if isinstance(d, Mapping):
            d = d.get(key)
        elif isinstance(d, list) and isinstance(key, int) and key < len(d):
            d = d[key]
        else:
            return None
    return d


def _judges(recorded) -> Mapping[str, str] | frozenset[str]:
    """method.unvalidated_judges: check id -> why (a list of ids in findings written before the why was kept)."""
    return dict(recorded) if isinstance(recorded, Mapping) else frozenset(recorded)


def recompute(document: Mapping) -> stats.ExperimentVerdict:
    """The verdict its method decides from its data."""
    method, data, scope = document["method"], document["data"], document["scope"]
    facts = stats.SeriesFacts(
        series_id=str(document["series"]), split=scope["split"], variants=tuple(method["variants"]),
        check_kinds=dict(method["check_kinds"]),
        check_scales={c: (float(low), float(high)) for c, (low, high) in method.get("check_scales", {}).items()},
        unvalidated_judges=_judges(method["unvalidated_judges"]),
        total_attempts=int(data["attempts"]), family=method["family"], salt=method["salt"],
        cost_bound=method.get("cost_bound"), planned_cases=int((method.get("stop_early") or {}).get("planned", 0)))
    table = evidence.EvidenceTable(data, facts.check_kinds)
    return decide_table(evidence.question_from(method["question"]), table, facts)


def _recomputed(document: Mapping) -> list[Problem]:

    try:
        verdict = _cached_recompute(repr(document), document)
    except Exception as exc:  # malformed data: the finding does not stand, and says why
        return [(("data",), f"its data cannot be decided again ({type(exc).__name__}: {exc})")]
    expected: list[tuple[tuple, Any]] = [
        (("state",), verdict.state), (("reason",), verdict.reason), (("statement",), verdict.text)]
    for i, cell in enumerate(verdict.cells):
        expected.append((("cells", i), cell_dict(cell)))
    expected.append((("cells",), len(verdict.cells)))
    for i, variant in enumerate(document["variants"]):
        vid = _get(variant, ("id",))
        computed = {m: estimate_dict(e) for m, e in sorted(verdict.metrics.get(vid, {}).items())}
        expected.append((("variants", i, "metrics"), computed))
    expected += [(("scope", "attempts"), document["data"]["attempts"]),
                 (("scope", "infra_errors"), document["data"]["infra_errors"])]
    for path, value in expected:
        if path == ("cells",):
            stored = len(document["cells"]) if isinstance(document["cells"], list) else None
        else:
            stored = _get(document, path)
        if stored != value:
            where, was, want = _first_difference(path, stored, value)
            return [(where, f"{_dotted(where)} is {_show(was)}, but its data give {_show(want)}")]
    return []


_RECOMPUTED: dict[str, stats.ExperimentVerdict] = {}


def _cached_recompute(key: str, document: Mapping) -> stats.ExperimentVerdict:
    """Collection and `aqven check` read the same findings: decide each one once per process."""
    if key not in _RECOMPUTED:
        if len(_RECOMPUTED) > 256:
            _RECOMPUTED.clear()
        _RECOMPUTED[key] = recompute(document)
    return _RECOMPUTED[key]


def _first_difference(path: tuple, stored: Any, value: Any) -> tuple[tuple, Any, Any]:
    """The deepest key where the two differ, so the diagnostic points at the edited line."""
    if isinstance(stored, Mapping) and isinstance(value, Mapping):
        for key in list(value) + [k for k in stored if k not in value]:
            if stored.get(key) != value.get(key):
                return _first_difference(path + (key,), stored.get(key), value.get(key))
    if isinstance(stored, list) and isinstance(value, list) and len(stored) == len(value):
        for i, (a, b) in enumerate(zip(stored, value)):
            if a != b:
                return _first_difference(path + (i,), a, b)
    return path, stored, value


def _dotted(path: tuple) -> str:
    out = ""
    for i, seg in enumerate(path):
        out += f"[{seg}]" if isinstance(seg, int) else (str(seg) if i == 0 else f".{seg}")
    return out or "the finding"


def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 120 else text[:117] + "..."
