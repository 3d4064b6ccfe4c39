"""A real PostgreSQL server for the tests, from the machine's binaries (/usr/lib/postgresql/*/bin).

One server serves the whole test session, xdist workers included: the first worker that needs it starts it
(initdb and pg_ctl in a temporary folder, as the user `postgres` when the tests run as root: initdb refuses
root), the others find it through a file beside their basetemp, and the last one to finish stops it. Each test
gets a database of its own. The server listens on a unix socket in its folder only (no port is shared), trusts
the user `postgres` and asks every other role for a password (the refused-credentials tests)."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

PORT = 5432          # the socket's name: unique by its folder
PASSWORD_ROLE = ("aqven_pw", "s3cret-only-in-env")


def binaries() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    return found[-1].parent if found else None


@dataclass
class Server:
    folder: Path
    bin: Path

    @property
    def host(self) -> str:
        return str(self.folder / "sock")

    def url(self, database: str = "postgres", user: str = "postgres", password: str | None = None) -> str:
        auth = f"{user}:{password}" if password else user
        return f"postgresql://{auth}@/{database}?host={self.host}&port={PORT}"

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(_as_postgres([str(self.bin / args[0]), *args[1:]]), check=True, capture_output=True,
                              text=True, cwd=self.folder)

    def start(self) -> None:
        self.run("pg_ctl", "-D", str(self.folder / "data"), "-l", str(self.folder / "log"), "-w", "-t", "60",
                 "-o", f"-k {self.host} -p {PORT} -c listen_addresses=''", "start")

    def stop(self, mode: str = "fast") -> None:
        self.run("pg_ctl", "-D", str(self.folder / "data"), "-m", mode, "-w", "stop")

    def sql(self, statement: str, database: str = "postgres") -> None:
        import psycopg  # noqa: PLC0415
        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(statement)

    def new_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:16]}"
        self.sql(f"CREATE DATABASE {name}")
        return name


def _as_postgres(argv: list[str]) -> list[str]:
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *argv] if os.geteuid() == 0 else argv


def create(bin: Path) -> Server:
    """A new server in a new folder under /tmp (pytest's basetemp is root's 0700: postgres could not enter)."""
    folder = Path(tempfile.mkdtemp(prefix="aqven-pg-"))
    (folder / "sock").mkdir()
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        for path in (folder, folder / "sock"):
            os.chown(path, user.pw_uid, user.pw_gid)
    server = Server(folder, bin)
    hba = folder / "hba"
    hba.write_text("local all postgres trust\nlocal all all scram-sha-256\n")
    os.chmod(hba, 0o644)
    server.run("initdb", "-D", str(folder / "data"), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8",
               "--locale=C")
    with open(folder / "data" / "postgresql.conf", "a") as conf:      # a test server: speed over durability
        conf.write(f"fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nhba_file = '{hba}'\n"
                   "max_connections = 200\n")
    server.start()
    try:
        role, password = PASSWORD_ROLE
        server.sql(f"CREATE ROLE {role} LOGIN SUPERUSER PASSWORD '{password}'")
    except BaseException:       # never leave a server running that nobody will stop
        destroy(server)
        raise
    return server


def destroy(server: Server) -> None:
    with contextlib.suppress(subprocess.CalledProcessError):
        server.stop("immediate")
    shutil.rmtree(server.folder, ignore_errors=True)


@contextlib.contextmanager
def shared(meeting: Path, bin: Path) -> Iterator[Server]:
    """The session's one server, met at `meeting` (a folder every xdist worker of the session shares)."""
    meeting.mkdir(parents=True, exist_ok=True)
    state = meeting / "postgres.json"

    @contextlib.contextmanager
    def locked() -> Iterator[None]:
        with open(meeting / "postgres.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    with locked():
        if state.exists():
            known = json.loads(state.read_text())
            server, users = Server(Path(known["folder"]), Path(known["bin"])), known["users"] + 1
        else:
            server, users = create(bin), 1
        state.write_text(json.dumps({"folder": str(server.folder), "bin": str(server.bin), "users": users}))
    try:
        yield server
    finally:
        with locked():
            known = json.loads(state.read_text())
            if known["users"] <= 1:
                destroy(server)
                state.unlink()
            else:
                state.write_text(json.dumps({**known, "users": known["users"] - 1}))
