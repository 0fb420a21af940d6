"""Run a throwaway local ArcadeDB server that speaks Bolt, for benchmarks and tests.

Not part of the runtime packages: `kgplan bench graph_ops` starts one to measure the Neo4j
backend, and the tests reuse it for their real Bolt server.

The server, its jars and a Java runtime all ship in the PyPI package
``arcadedb-embedded`` (a test/bench extra, imported only when a server is started);
it runs as a separate Java process (not through the package's in-process JVM), so
the Neo4j backend talks to it exactly as to a Neo4j server: over Bolt, with the
``neo4j`` driver.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from neo4j import GraphDatabase
from neo4j.exceptions import DriverError, Neo4jError

SERVER_MAIN_CLASS = "com.arcadedb.server.ArcadeDBServer"
BOLT_PLUGIN = "Bolt:com.arcadedb.bolt.BoltProtocolPlugin"
HOST = "127.0.0.1"


@dataclass(frozen=True)
class BoltServer:
    """Connection details of a running server."""

    uri: str
    user: str
    password: str
    database: str
    log_file: Path

    @property
    def auth(self) -> tuple[str, str]:
        """``(user, password)`` as the neo4j driver expects it."""
        return (self.user, self.password)


def arcadedb_runtime() -> tuple[Path, Path]:
    """Return ``(java executable, jar directory)`` of the installed package.

    Raises:
        RuntimeError: if the package or its bundled files are missing.
    """
    try:
        from arcadedb_embedded.jvm import get_jar_path
    except ImportError as exc:
        raise RuntimeError("arcadedb-embedded is not installed") from exc
    jar_dir = Path(get_jar_path())
    if not any(jar_dir.glob("arcadedb-server-*.jar")):
        raise RuntimeError(f"no ArcadeDB server jar in {jar_dir}")
    exe = "java.exe" if os.name == "nt" else "java"
    java = jar_dir.parent / "jre" / "bin" / exe
    if not java.is_file():
        found = shutil.which("java")
        if found is None:
            raise RuntimeError(f"no Java runtime at {java} nor on PATH")
        java = Path(found)
    return java, jar_dir


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _log_tail(log_file: Path, lines: int = 40) -> str:
    try:
        text = log_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "<no log>"
    return "\n".join(text.splitlines()[-lines:])


def _bolt_ready(server: BoltServer) -> Exception | None:
    """Run ``RETURN 1``; return the error, or None once it succeeds.

    A fresh driver per attempt: after a DatabaseNotFound (Bolt starts before
    the database is created) a pooled connection stays bound to it.
    """
    try:
        with (
            GraphDatabase.driver(server.uri, auth=server.auth, connection_timeout=2.0) as driver,
            driver.session(database=server.database) as session,
        ):
            session.run("RETURN 1 AS ok").consume()
    except (DriverError, Neo4jError, OSError) as exc:
        return exc
    return None


@contextmanager
def running_arcadedb(
    root: Path,
    bolt_port: int | None = None,
    *,
    database: str = "kgplan",
    extra_databases: Sequence[str] = (),
    password: str = "kgplan-test-pw",
    max_heap: str = "1g",
    start_timeout: float = 60.0,
    stop_timeout: float = 15.0,
) -> Iterator[BoltServer]:
    """Start an ArcadeDB server with Bolt on 127.0.0.1 and stop it on exit.

    Args:
        root: scratch directory; server files live in ``root/server`` and
            its output in ``root/arcadedb.log``.
        bolt_port: Bolt port; a free one is picked when None.
        database: database created at startup (the one `BoltServer` names).
        extra_databases: more databases to create at startup.
        password: root user password.
        max_heap: JVM ``-Xmx`` value.
        start_timeout: seconds to wait for ``RETURN 1`` to succeed over Bolt.
        stop_timeout: seconds between SIGTERM and SIGKILL on exit.

    Raises:
        RuntimeError: if the server exits or is not ready in time; the
            message includes the tail of the server log.
    """
    java, jar_dir = arcadedb_runtime()
    server_root = root / "server"
    server_root.mkdir(parents=True, exist_ok=True)
    log_file = root / "arcadedb.log"
    port = bolt_port if bolt_port is not None else free_port()
    server = BoltServer(
        uri=f"bolt://{HOST}:{port}",
        user="root",
        password=password,
        database=database,
        log_file=log_file,
    )
    settings = {
        "arcadedb.server.rootPath": server_root,
        "arcadedb.server.rootPassword": password,
        # Format: name[user:password]; "[root]" just grants the root user.
        "arcadedb.server.defaultDatabases": ";".join(f"{db}[root]" for db in (database, *extra_databases)),
        "arcadedb.server.httpIncomingHost": HOST,
        "arcadedb.server.httpIncomingPort": free_port(),
        "arcadedb.server.plugins": BOLT_PLUGIN,
        "arcadedb.bolt.host": HOST,
        "arcadedb.bolt.port": port,
    }
    command = [
        str(java),
        f"-Xmx{max_heap}",
        "-cp",
        str(jar_dir / "*"),
        *(f"-D{key}={value}" for key, value in settings.items()),
        SERVER_MAIN_CLASS,
    ]
    with log_file.open("ab") as log:
        process = subprocess.Popen(
            command,
            cwd=server_root,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + start_timeout
        while (error := _bolt_ready(server)) is not None:
            if process.poll() is not None:
                raise RuntimeError(
                    f"ArcadeDB exited with code {process.returncode}; "
                    f"log tail:\n{_log_tail(log_file)}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"ArcadeDB Bolt not ready at {server.uri} after "
                    f"{start_timeout:.0f}s (last error: {error!r}); "
                    f"log tail:\n{_log_tail(log_file)}"
                )
            time.sleep(0.25)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=stop_timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
