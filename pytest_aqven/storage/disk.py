"""The project database on disk: where it is, one clear error for damaged or read-only storage.

A damaged file is moved aside (never overwritten, never deleted) and the session stops with one message
naming it and what to do. A normal run checks quickly (PRAGMA quick_check); `aqven db check` fully."""
from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

HEADER = b"SQLite format 3\x00"
RERUNS = 10         # a transaction cut this many times in a row: the server keeps failing, which is said
FOLDER = ".aqven"
FILE = "aqven.sqlite"


class StorageError(Exception):
    """The whole message a person reads: the file, what is wrong, what to do."""


class StoreAway(StorageError):
    """The store's server stayed away longer than the run waits for it: the run stops with this message."""


class Stalled(StoreAway):
    """Another runner held the writer's turn longer than a writer waits for it (a runner stopped inside a
    transaction: Ctrl-Z, a paused CI job, a sleeping laptop): the run stops with this message, naming it."""


class DiskFull(StoreAway):
    """The disk under the store filled up: the run takes no more attempts, and still decides the series whose
    every attempt was recorded before."""


LOCK_WAIT_S = 60.0      # how long a writer waits for another's turn before the run stops, saying who holds it


def stalled(location: str, holder: str) -> Stalled:
    return Stalled(f"pytest-aqven: the project database {location} was held by another writer for more than "
                   f"{LOCK_WAIT_S:.0f} s: {holder}. This run stops here; what was committed is kept. Resume or "
                   f"end that runner, then run the same command: it continues the series.")


def holder(pid: int, host: str) -> str:
    """A runner named for a message: its pid and host, and on this host whether it is stopped or gone."""
    import socket  # noqa: PLC0415
    if host != socket.gethostname():
        return f"pid {pid} on {host}"
    try:
        letter = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]    # the process's run state
    except (OSError, IndexError):
        return f"pid {pid} on this machine (gone)"
    if letter in ("T", "t"):
        return f"pid {pid} on this machine, stopped (Ctrl-Z or SIGSTOP: `kill -CONT {pid}` resumes it)"
    return f"pid {pid} on this machine"


MIN_FREE_BYTES = 64 * 2**20     # the free space a run starts with at the least (its records, WAL and findings)


def _megabytes(n: int) -> str:
    return f"{n / 2**20:.0f} MB"


def full(path: Path) -> DiskFull:
    """The disk filled up under a transaction: the run stops taking attempts, with this message."""
    return DiskFull(f"pytest-aqven: the disk holding {path} is full ({_megabytes(_free(path.parent))} free): "
                     f"the run stops here and takes no more attempts; what was committed is kept. Free space on "
                     f"that disk, then run the same command: it continues the series.")


def gone(path: Path) -> StoreAway:
    """The database file was removed or replaced since this process opened it (`git clean -xdf`, a restore)."""
    return StoreAway(f"pytest-aqven: the project database {path} was removed or replaced during the run (`git "
                     f"clean -xdf` removes .aqven/): the run stops here; nothing more was recorded, and nothing "
                     f"was paid into the removed file. Run the same command: it continues from what the database "
                     f"now holds.")


def _free(folder: Path) -> int:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return 0


class Interrupted(Exception):
    """The connection was cut before the transaction committed: nothing of it was kept, so it may run again."""


def database_path(root: Path) -> Path:
    """The project database of the module root `root` (the folder holding aqven.yaml), outside git: the one
    place it is defined."""
    return Path(root) / FOLDER / FILE


def refuse_outside(path: Path) -> None:
    """A project database (`database_path`) that is, or lies in, a symlink is refused before anything opens
    it: through one, SQLite would write outside the project, into whatever file it points at (another
    application's database). StorageError with the one message; nothing is written."""
    for file in (path.parent, path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if file.is_symlink():
            raise StorageError(
                f"pytest-aqven: {file} is a symlink (to {os.readlink(file)}): the project database is kept inside "
                f"the project, never written through a link to somewhere else. Remove the link (a plain "
                f"{FOLDER}/ folder is made on the next run); nothing was written.")


def _writable(folder: Path) -> str | None:
    """Why nothing can be written in `folder`, or None. A real probe: permission bits lie to root."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".aqven-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
        return None
    except OSError as exc:
        return exc.strerror or str(exc)


def _set_aside(path: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    n = 0
    while True:
        aside = path.with_name(f"{path.name}.damaged-{stamp}" + (f"-{n}" if n else ""))
        if not aside.exists():
            break
        n += 1
    os.link(path, aside)        # never overwrites: link fails if the name exists
    os.unlink(path)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            os.replace(side, aside.with_name(aside.name + suffix))
    return aside


BUSY_SECONDS = 60.0        # how long a check waits for a database another process writes


def check_file(path: Path, *, full: bool = False) -> str | None:
    """What is wrong with an existing database file, or None when it is sound."""
    try:
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror})"
    if len(head) == 0:
        return None                                         # an empty file is an empty database
    if len(head) < 100 or not head.startswith(HEADER):
        return "it is not an SQLite database (truncated or overwritten)"
    size = path.stat().st_size
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    counted = head[92:96] == head[24:28]                   # the header's page count is valid
    if counted and pages and size < pages * page and not path.with_name(path.name + "-wal").exists():
        return f"it is truncated ({size} bytes of the {pages * page} its header announces)"
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_SECONDS)
        try:
            rows = conn.execute("PRAGMA integrity_check" if full else "PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return None     # another runner holds it: a live database, never set aside for being busy
        return f"SQLite cannot read it ({exc})"
    except sqlite3.DatabaseError as exc:
        return f"SQLite cannot read it ({exc})"
    problems = [r[0] for r in rows if r[0] != "ok"]
    if problems:
        more = f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        return f"{'integrity_check' if full else 'quick_check'} reports: {'; '.join(problems[:3])}{more}"
    return None


_CHECKED: dict[Path, None] = {}


def preflight(root: Path, *, again: bool = False) -> None:
    """Before a series writes anything: the folder is writable and an existing database is sound.
    Once per project and process (again: at each session start). Raises StorageError with the one message."""
    root = Path(root)
    if root in _CHECKED and not again:
        return
    path = database_path(root)
    refuse_outside(path)
    folder = path.parent
    target = folder if folder.is_dir() else root
    why = _writable(target)
    if why is not None:
        raise StorageError(
            f"pytest-aqven: cannot write in {target} ({why}). Series and their attempts are stored in {path}: "
            f"make {target} writable for this user, or run from a writable copy of the project.")
    free = _free(target)
    if free < MIN_FREE_BYTES:
        raise StorageError(
            f"pytest-aqven: the disk holding {target} has {_megabytes(free)} free, less than the "
            f"{_megabytes(MIN_FREE_BYTES)} a run starts with (series, attempts and their traces are stored in "
            f"{path}): free space on that disk (old .aqven/*.damaged-* files, caches, build output), then run "
            f"the same command; nothing was run.")
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if file.exists():
            try:
                with open(file, "r+b"):
                    pass
            except OSError as exc:
                raise StorageError(
                    f"pytest-aqven: the project database file {file} is read-only ({exc.strerror}): "
                    f"make it writable for this user; nothing was changed.") from None
    if path.exists():
        problem = check_file(path)
        if problem is not None:
            try:
                aside = _set_aside(path)
            except OSError as exc:
                raise StorageError(
                    f"pytest-aqven: the project database {path} is damaged: {problem}. It could not be moved aside "
                    f"({exc.strerror}): move it away yourself (keep it: its attempts may be readable), then rerun "
                    f"the same command to start a new database.") from None
            raise StorageError(
                f"pytest-aqven: the project database {path} is damaged: {problem}. It was moved aside to {aside} "
                f"(kept, nothing deleted). Rerun the same command to start a new database (its series start over); "
                f"`aqven db check {aside}` shows what is wrong with the old file.")
    _CHECKED[root] = None


def preflight_findings(root: Path) -> None:
    """Before a held-out run: every place its findings are written is writable (each experiment's findings
    folder, or the experiment's folder before it has one, and FINDINGS.md at the module root), so a full or
    read-only tree is one message before anything is spent, not a failure after the attempts were paid."""
    root = Path(root)
    folders = [f for f in sorted((root / "experiments").glob("*")) if (f / "experiment.yaml").is_file()]
    targets = [f / "findings" if (f / "findings").is_dir() else f for f in folders] + [root]
    for target in targets:
        why = _writable(target)
        if why is None and target == root and (root / "FINDINGS.md").exists():
            try:
                with open(root / "FINDINGS.md", "r+b"):
                    pass
            except OSError as exc:
                why, target = exc.strerror, root / "FINDINGS.md"
        if why is not None:
            raise StorageError(f"pytest-aqven: cannot write in {target} ({why}). A held-out run writes its findings "
                               f"there (experiments/<id>/findings/ and FINDINGS.md): make it writable, or run from a "
                               f"writable copy of the project; nothing was run.")


def forget(root: Path) -> None:
    """Check again on next use (tests, and the CLI after it moved a file)."""
    _CHECKED.pop(Path(root), None)
