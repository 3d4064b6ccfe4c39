"""The text a series runs on, read once at its start: prompts, fragments, instructions, variant texts.

During a series the engine reads these from here, never from disk, so that an edit while it runs cannot
reach an attempt, and the hash the finding records is the hash of the bytes that ran. Without a
snapshot (an engine test, a run outside a series) `Sources()` reads the disk."""
from __future__ import annotations

from pathlib import Path

from ..project.paths import outside


class Sources:
    def __init__(self, files: dict[Path, bytes] | None = None, *, conflict: str | None = None) -> None:
        self.files = files                 # resolved path -> bytes; None: read the disk
        self.conflict = conflict           # why this process may not run the series' attempts (inputs changed)
        self._texts: dict[Path, str] = {}
        self._outside: dict[tuple[Path, Path], str | None] = {}

    @staticmethod
    def _get(files: dict[Path, bytes], path: Path) -> bytes | None:
        # the engine's paths are built from the resolved project root: resolving is only needed on a miss
        data = files.get(path)
        return data if data is not None else files.get(Path(path).resolve())

    def read_bytes(self, path: Path) -> bytes:
        if self.files is None:
            return Path(path).read_bytes()
        data = self._get(self.files, path)
        if data is None:
            raise FileNotFoundError(2, "not an input of the series (it was not there when the series started)",
                                    str(path))
        return data

    def read_text(self, path: Path) -> str:
        if self.files is None:
            return Path(path).read_text(encoding="utf-8")
        text = self._texts.get(path)
        if text is None:
            text = self._texts[path] = self.read_bytes(path).decode("utf-8")
        return text

    def outside(self, root: Path, path: Path) -> str | None:
        """project.paths.outside, once per path in a series: its inputs were read at its start, so where a
        path resolves is settled then (resolving it cost 7% of an attempt's event loop at 100 in flight)."""
        if self.files is None:
            return outside(root, path)
        key = (root, path)
        if key not in self._outside:
            self._outside[key] = outside(root, path)
        return self._outside[key]

    def is_file(self, path: Path) -> bool:
        return Path(path).is_file() if self.files is None else self._get(self.files, path) is not None


LIVE = Sources()
