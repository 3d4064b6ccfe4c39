import hashlib

from pytest_aqven.experiments.split import choose, split_of, unit
from pytest_aqven.project.specs import DatasetSpec


def test_unit_follows_the_aqven_recipe_byte_for_byte():
    salt = hashlib.sha256(b"aqven-split-v1:lumen").hexdigest().encode()
    digest = hashlib.sha256(salt + b"\x00support_case_cases\x00refund_late").digest()
    assert unit("lumen", "support_case_cases", "refund_late") == int.from_bytes(digest[:8], "big") / 2**64
    # pinned values: a change here moves cases between halves in every user's project
    assert unit("lumen", "support_case_cases", "refund_late") == 0.6287188443781907
    assert unit("helpdesk", "tickets", "refund_gift") == 0.5049163400386649


def test_the_low_half_is_held_out_and_package_and_dataset_change_the_split():
    names = [f"case_{i}" for i in range(2000)]
    held = [n for n in names if split_of("pkg", "ds", n) == "holdout"]
    assert 900 < len(held) < 1100
    assert all(unit("pkg", "ds", n) < 0.5 for n in held)
    assert held != [n for n in names if split_of("pkg", "other_ds", n) == "holdout"]
    assert held != [n for n in names if split_of("other_pkg", "ds", n) == "holdout"]


def test_a_series_takes_the_first_n_selected_cases_of_its_half_in_file_order():
    cases = [{"name": f"c{i}", "inputs": {}, "tags": {"kind": "a" if i % 3 else "b"}} for i in range(60)]
    ds = DatasetSpec.model_validate({"apiVersion": "aqven/v1", "kind": "Dataset", "cases": cases})
    chosen, available = choose("pkg", "ds", ds, {"kind": "a"}, "dev", 5)
    half = [c["name"] for c in cases if c["tags"]["kind"] == "a" and split_of("pkg", "ds", c["name"]) == "dev"]
    assert [c.name for c in chosen] == half[:5]
    assert available == len(half)
    everything, _ = choose("pkg", "ds", ds, {"kind": "a"}, "dev", None)
    assert [c.name for c in everything] == half
