"""The series' snapshot of its text inputs: where a path resolves is settled once per series."""
from __future__ import annotations

from pytest_aqven.engine.sources import Sources


def test_a_snapshot_refuses_a_path_out_of_the_project_and_resolves_each_path_once(tmp_path):
    root, away = tmp_path / "proj", tmp_path / "away"
    root.mkdir()
    away.mkdir()
    (away / "secret.md").write_text("secret")
    (root / "ok.md").write_text("ok")
    (root / "leak.md").symlink_to(away / "secret.md")
    sources = Sources({(root / "ok.md").resolve(): b"ok"})
    assert sources.outside(root, root / "ok.md") is None
    assert "resolves outside the project" in sources.outside(root, root / "leak.md")
    (root / "ok.md").unlink()
    (root / "ok.md").symlink_to(away / "secret.md")      # after the start: the series runs on what it read then
    assert sources.outside(root, root / "ok.md") is None
    assert Sources().outside(root, root / "ok.md") is not None     # no snapshot: the disk as it is now
