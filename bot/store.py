"""Persistent state shared by every bot surface and every replica.

Why a claim table: Slack delivers events at least once (retries, app_mention + message double
delivery) and Discourse webhooks and the poller can see the same post; several replicas may
process the same delivery at the same time. "Exactly one reply" therefore needs an atomic
claim that only one process can win: an INSERT into a table whose primary key is the dedupe
key. The database's unique constraint is the arbiter, so it holds across processes and hosts,
on SQLite (one file) and on PostgreSQL alike.

Tables (schema versioned in `schema_version`, migrations applied in order by `migrate()`):
- claims(namespace, key)          — first writer wins; e.g. ("slack-event", event_id)
- replies(namespace, key)         — our reply to a message/topic (its ts / post id + metadata)
- cursors(name)                   — pollers' resume points
- flags(namespace, key)           — kill switches and per-channel/category settings
- feedback                        — "this helped / this was wrong" votes
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Column,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError, OperationalError

DEFAULT_SQLITE_PATH = "kvdoctor.sqlite"

metadata = MetaData()

schema_version = Table(
    "kvd_schema_version",
    metadata,
    Column("version", Integer, primary_key=True),
    Column("applied_at", Float, nullable=False),
)

claims = Table(
    "kvd_claims",
    metadata,
    Column("namespace", String(64), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("owner", String(128)),
    Column("created_at", Float, nullable=False),
)

replies = Table(
    "kvd_replies",
    metadata,
    Column("namespace", String(64), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("reply_ref", String(255)),
    Column("meta", Text),
    Column("updated_at", Float, nullable=False),
)

cursors = Table(
    "kvd_cursors",
    metadata,
    Column("name", String(128), primary_key=True),
    Column("value", Text),
    Column("updated_at", Float, nullable=False),
)

flags = Table(
    "kvd_flags",
    metadata,
    Column("namespace", String(64), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("value", Text),
)

feedback = Table(
    "kvd_feedback",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("source", String(32), nullable=False),
    Column("ref", String(255), nullable=False),
    Column("user", String(128)),
    Column("verdict", String(32), nullable=False),
    Column("created_at", Float, nullable=False),
)


def _v1(conn) -> None:
    for table in (claims, replies, cursors, flags, feedback):
        table.create(conn, checkfirst=True)


# Ordered migrations: index + 1 is the schema version each one produces. Append, never edit.
MIGRATIONS: list[Callable[[Any], None]] = [_v1]


@dataclass(frozen=True)
class Reply:
    """Our reply to one message/topic: where it is (`reply_ref`) and what we know about it."""

    namespace: str
    key: str
    reply_ref: str | None
    meta: dict


# Arbitrary constant naming kvdoctor's schema lock among the database's advisory locks.
_MIGRATION_LOCK_ID = 0x6B76646F63  # "kvdoc"
_KEY_MAX = 255  # the key columns' String(255)


def _key(key: object) -> str:
    """The stored form of a key: as given when it fits the column, else a stable digest.

    PostgreSQL rejects a value longer than VARCHAR(255) while SQLite stores it whole; hashing
    long keys gives both databases the same behaviour (same key → same row, no error).
    """
    k = str(key)
    if len(k) <= _KEY_MAX:
        return k
    return "sha256:" + hashlib.sha256(k.encode("utf-8", "surrogatepass")).hexdigest()


def database_url(url: str | None = None) -> str:
    """The SQLAlchemy URL: explicit, else KVDOCTOR_DATABASE_URL, else a SQLite file."""
    return url or os.environ.get("KVDOCTOR_DATABASE_URL") or f"sqlite:///{DEFAULT_SQLITE_PATH}"


class Store:
    """Thin, synchronous data access for the bots. Safe to share between threads."""

    def __init__(self, url: str | None = None, *, migrate: bool = True) -> None:
        self.url = database_url(url)
        kwargs: dict[str, Any] = {"future": True, "pool_pre_ping": True}
        if self.url.startswith("sqlite"):
            # Several processes share one file: wait for locks instead of failing at once.
            kwargs["connect_args"] = {"timeout": 30, "check_same_thread": False}
        elif self.url.startswith("postgresql"):
            # Fail fast when the server is unreachable (/readyz must answer, not hang), and
            # recycle connections before a load balancer / PgBouncer idles them out.
            kwargs["connect_args"] = {"connect_timeout": int(os.environ.get("KVDOCTOR_DB_CONNECT_TIMEOUT") or 5)}
            kwargs["pool_recycle"] = 1800
            kwargs["pool_size"] = int(os.environ.get("KVDOCTOR_DB_POOL_SIZE") or 5)
            kwargs["max_overflow"] = int(os.environ.get("KVDOCTOR_DB_MAX_OVERFLOW") or 10)
        self.engine: Engine = create_engine(self.url, **kwargs)
        if self.engine.dialect.name == "sqlite":
            event.listen(self.engine, "connect", _sqlite_pragmas)
        if migrate:
            self.migrate()

    # -- schema -------------------------------------------------------------------------
    def migrate(self) -> int:
        """Apply pending migrations; returns the schema version. Safe to race between replicas.

        Replicas starting together all call this. Each run holds a database-wide lock for the
        whole upgrade (PostgreSQL: a transaction-scoped advisory lock, and its DDL is
        transactional; SQLite: BEGIN IMMEDIATE, the file's write lock), so exactly one process
        creates the tables and the others then see the new version and do nothing.
        """
        with self.engine.begin() as conn:
            self._lock_schema(conn)
            schema_version.create(conn, checkfirst=True)
            current = int(conn.execute(select(func.coalesce(func.max(schema_version.c.version), 0))).scalar())
            for number, step in enumerate(MIGRATIONS, start=1):
                if number <= current:
                    continue
                step(conn)
                conn.execute(insert(schema_version).values(version=number, applied_at=time.time()))
        return self.version()

    def _lock_schema(self, conn) -> None:
        dialect = self.engine.dialect.name
        if dialect == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK_ID})
        elif dialect == "sqlite":
            # pysqlite opens transactions lazily; take the write lock now (waits busy_timeout).
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    def version(self) -> int:
        """The schema version applied; 0 for a database nobody has migrated yet."""
        with self.engine.connect() as conn:
            if not inspect(conn).has_table(schema_version.name):
                return 0
            return int(conn.execute(select(func.coalesce(func.max(schema_version.c.version), 0))).scalar())

    def ping(self) -> bool:
        """True when the database answers a trivial query (used by /readyz)."""
        try:
            with self.engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return True
        except Exception:  # any driver/network error means "not ready"
            return False

    # -- dedupe -------------------------------------------------------------------------
    def claim(self, namespace: str, key: str, owner: str | None = None) -> bool:
        """Atomically claim (namespace, key). True for exactly one caller across all processes."""
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    insert(claims).values(namespace=namespace, key=_key(key), owner=owner, created_at=time.time())
                )
            return True
        except IntegrityError:
            return False

    def is_claimed(self, namespace: str, key: str) -> bool:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(claims.c.key).where(claims.c.namespace == namespace, claims.c.key == _key(key))
            ).first()
        return row is not None

    def release(self, namespace: str, key: str) -> None:
        """Give a claim back (processing failed before anything was posted; a retry may try again)."""
        with self.engine.begin() as conn:
            conn.execute(claims.delete().where(claims.c.namespace == namespace, claims.c.key == _key(key)))

    def reclaim(self, namespace: str, key: str, owner: str | None = None, *, older_than: float) -> bool:
        """Take over a claim whose holder has not finished within `older_than` seconds (it crashed).

        One conditional UPDATE, so it is a compare-and-swap: of several processes racing for the
        same stale claim exactly one sees rowcount 1 (PostgreSQL re-checks the WHERE on the row
        the winner wrote; SQLite serialises writers), and the claim is fresh again afterwards.
        """
        now = time.time()
        with self.engine.begin() as conn:
            result = conn.execute(
                update(claims)
                .where(claims.c.namespace == namespace, claims.c.key == _key(key),
                       claims.c.created_at < now - older_than)
                .values(owner=owner, created_at=now)
            )
        return result.rowcount == 1

    # -- replies ------------------------------------------------------------------------
    def get_reply(self, namespace: str, key: str) -> Reply | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(replies.c.reply_ref, replies.c.meta).where(
                    replies.c.namespace == namespace, replies.c.key == _key(key)
                )
            ).first()
        if row is None:
            return None
        return Reply(namespace, str(key), row.reply_ref, json.loads(row.meta or "{}"))

    def save_reply(self, namespace: str, key: str, reply_ref: str | None, meta: dict | None = None) -> None:
        self._upsert(
            replies,
            {"namespace": namespace, "key": _key(key)},
            {"reply_ref": reply_ref, "meta": json.dumps(meta or {}), "updated_at": time.time()},
        )

    # -- cursors and flags --------------------------------------------------------------
    def get_cursor(self, name: str) -> str | None:
        with self.engine.connect() as conn:
            return conn.execute(select(cursors.c.value).where(cursors.c.name == name)).scalar()

    def set_cursor(self, name: str, value: str) -> None:
        self._upsert(cursors, {"name": name}, {"value": str(value), "updated_at": time.time()})

    def get_flag(self, namespace: str, key: str) -> str | None:
        with self.engine.connect() as conn:
            return conn.execute(
                select(flags.c.value).where(flags.c.namespace == namespace, flags.c.key == _key(key))
            ).scalar()

    def set_flag(self, namespace: str, key: str, value: str | None) -> None:
        if value is None:
            with self.engine.begin() as conn:
                conn.execute(flags.delete().where(flags.c.namespace == namespace, flags.c.key == _key(key)))
            return
        self._upsert(flags, {"namespace": namespace, "key": _key(key)}, {"value": str(value)})

    # -- feedback -----------------------------------------------------------------------
    def record_feedback(self, source: str, ref: str, user: str | None, verdict: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                insert(feedback).values(
                    source=source, ref=str(ref), user=user, verdict=verdict, created_at=time.time()
                )
            )

    def feedback_counts(self, source: str | None = None) -> dict[str, int]:
        query = select(feedback.c.verdict, func.count()).group_by(feedback.c.verdict)
        if source:
            query = query.where(feedback.c.source == source)
        with self.engine.connect() as conn:
            return {verdict: int(n) for verdict, n in conn.execute(query)}

    # -- helpers ------------------------------------------------------------------------
    def _upsert(self, table: Table, keys: dict, values: dict) -> None:
        """Insert or update one row, portable across SQLite and PostgreSQL, race-safe."""
        for _ in range(3):
            with self.engine.begin() as conn:
                where = [table.c[k] == v for k, v in keys.items()]
                result = conn.execute(update(table).where(*where).values(**values))
                if result.rowcount:
                    return
                try:
                    with conn.begin_nested():
                        conn.execute(insert(table).values(**keys, **values))
                    return
                except IntegrityError:
                    continue  # a concurrent insert won; loop and update it
        raise OperationalError("upsert kept colliding", None, Exception(table.name))

    def dispose(self) -> None:
        self.engine.dispose()


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    """WAL (readers do not block the writer) and a 30 s busy timeout.

    Why the loop: switching a fresh file to WAL needs its exclusive lock, and SQLite answers
    "database is locked" at once — without the busy handler — when another process is doing the
    same; several workers starting together on a new database hit that. The mode is stored in
    the file, so once one process has switched it the others only read it back.
    """
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    deadline = time.monotonic() + 30
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    cursor.close()
