"""A PostgreSQL server for the audit tests: `.ci/services.sh`'s when it set one, else our own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from checkrein.testing.services import PostgresServer, shared_postgres_dsn


@contextmanager
def postgres_dsn() -> Iterator[str]:
    """A DSN of a server nobody stops during the test (the shared one, or a fresh cluster)."""
    shared = shared_postgres_dsn()
    if shared is not None:
        yield shared
        return
    with PostgresServer.start() as pg:
        yield pg.dsn


def fresh_table() -> str:
    """A table name of its own per test, so tests sharing one server never see each other's rows."""
    return f"t_{uuid.uuid4().hex[:12]}"


def rows(dsn: str, table: str) -> list[tuple[str, int, str]]:
    with psycopg.connect(dsn) as conn:
        return [(r[0], int(r[1]), r[2]) for r in conn.execute(f"SELECT log_id, seq, line FROM {table} ORDER BY log_id, seq")]
