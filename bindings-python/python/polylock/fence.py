"""Fencing at the resource: the write of a holder whose lease ended is refused by the data store.

A lock's fencing token (``lock.fencing_token`` while held) grows with every new owner. The resource
remembers the largest token it accepted for the name and refuses a smaller one atomically with
the write, so a holder that paused past its lease cannot write after the next holder did:

- data in Redis: ``client.fenced_write(name, token, [["DECR", "{sale}:stock"]])`` runs the
  commands in one script with the check (:class:`Fence`);
- data in PostgreSQL or MySQL/MariaDB, written through the application's own connection:
  :func:`sql` takes the name's guard row in the caller's transaction and raises
  :class:`~polylock.StaleTokenError` when a larger token was accepted; roll back then, and the
  stale write never commits. :func:`setup` makes the table once.

    with client.lock("sale") as lock, db.transaction():      # psycopg 3
        polylock.fence.sql(db, "sale", lock.fencing_token)
        db.execute("UPDATE stock SET left_ = left_ - 1")

The statements are the core's (``polylock.fence.STATEMENTS``), the same text every runtime sends.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence, Union

from . import _native
from ._errors import InvalidArgumentError, StaleTokenError

__all__ = ["Fence", "setup", "sql", "STATEMENTS", "Command", "Arg"]

#: The SQL of the guards, by name (``postgres_guard``, ``mysql_read``, ...), as the core has it.
STATEMENTS: "dict[str, str]" = dict(_native.FENCE_SQL)

Arg = Union[str, bytes, bytearray, memoryview, int, float]
Command = Sequence[Arg]

_MAX_TOKEN = 2**63 - 1


def _token(token: int) -> int:
    if isinstance(token, bool) or not isinstance(token, int):
        raise TypeError(f"a fencing token is an int (a held lock's token), got {type(token).__name__}")
    # The core checks the range too; an int past 64 bits would reach it as PyO3's OverflowError.
    if not 1 <= token <= _MAX_TOKEN:
        raise InvalidArgumentError(f"a fencing token is from 1 to 2**63 - 1, got {token}")
    return token


def _arg(a: Arg) -> bytes:
    if isinstance(a, bytes):
        return a
    if isinstance(a, (bytearray, memoryview)):
        return bytes(a)
    if isinstance(a, str):
        return a.encode("utf-8", "surrogatepass")
    if isinstance(a, bool):
        raise TypeError("a command's argument is str, bytes, int or float, not bool")
    if isinstance(a, (int, float)):
        return repr(a).encode()
    raise TypeError(f"a command's argument is str, bytes, int or float, not {type(a).__name__}")


def _commands(commands: Sequence[Command]) -> "list[list[bytes]]":
    if isinstance(commands, (str, bytes)) or not isinstance(commands, Sequence):
        raise TypeError('commands are a list of commands, each a list: [["DECR", "stock"]]')
    out = []
    for c in commands:
        if isinstance(c, (str, bytes)) or not isinstance(c, Sequence):
            raise TypeError(f'each command is a list of its name and arguments (["DECR", "stock"]), got {c!r}')
        out.append([_arg(a) for a in c])
    return out


class Fence:
    """The fence of one name on the lock server's own Redis: fenced writes of Redis commands
    (``client.fence(name)``; ``UnsupportedError`` on ZooKeeper, etcd, SQL and RedLock)."""

    def __init__(self, native: _native.NativeFence) -> None:
        self._native = native

    @property
    def name(self) -> str:
        return self._native.name

    def write(self, token: int, commands: Sequence[Command]) -> "list[Any]":
        """Run ``commands`` (each a list: the command's name, then its arguments) in one atomic
        step if ``token`` is not smaller than the largest token this fence accepted, recording
        it; their replies (None, int, bytes, str for a status, list). A smaller token raises
        :class:`~polylock.StaleTokenError` and nothing runs; the same token may write any number
        of times. In a Redis Cluster the keys must carry the name's hash tag (``{name}``)."""
        return self._native.write(_token(token), _commands(commands))

    def accepted(self) -> Optional[int]:
        """The largest token this fence accepted, or None."""
        return self._native.accepted()

    def __repr__(self) -> str:
        return f"<polylock.fence.Fence {self.name!r}>"


def _dialect(conn: Any) -> str:
    module = type(conn).__module__.split(".")[0]
    if module in ("psycopg", "psycopg2"):
        return "postgres"
    if module in ("pymysql", "MySQLdb"):
        return "mysql"
    raise InvalidArgumentError(
        f"polylock.fence: no SQL dialect known for a {type(conn).__module__}.{type(conn).__name__}: "
        "pass a psycopg (3), psycopg2, PyMySQL or mysqlclient connection"
    )


def _text(what: str) -> str:
    # The core's statements number PostgreSQL's placeholders ($1); these drivers take %s.
    return re.sub(r"\$\d+|\?", "%s", STATEMENTS[what])


def setup(conn: Any) -> None:
    """Make the fence table (``polylock_fence``) on ``conn``'s database and commit. DDL commits
    on MySQL: call it once at setup, never inside the transaction that writes. Two processes
    that make it at the same moment can collide in PostgreSQL's catalog (a unique violation,
    though ``IF NOT EXISTS``): the one that lost finds the table there and returns too."""
    dialect = _dialect(conn)
    cur = conn.cursor()
    try:
        cur.execute(STATEMENTS[f"{dialect}_table"])
        conn.commit()
    except Exception as first:
        conn.rollback()
        try:
            cur.execute("SELECT token FROM polylock_fence WHERE 1 = 0")
            cur.fetchall()
            conn.commit()
        except Exception:
            conn.rollback()
            raise first from None
    finally:
        cur.close()


def sql(conn: Any, name: str, token: int) -> None:
    """Take the guard row of ``name`` with ``token`` in the transaction ``conn`` is in (psycopg,
    psycopg2, PyMySQL, mysqlclient). :class:`~polylock.StaleTokenError` when a larger token was
    accepted: roll the transaction back, so that its writes never commit. The row stays locked
    until the transaction ends, so a stale writer that comes meanwhile waits, then is refused."""
    if not isinstance(name, str):
        raise TypeError(f"a fence's name is a str, got {type(name).__name__}")
    dialect = _dialect(conn)
    name, token = _native.fence_checked(name, _token(token))
    cur = conn.cursor()
    try:
        cur.execute(_text(f"{dialect}_guard"), (name, token))
        if dialect == "postgres" and cur.rowcount == 1:
            return
        cur.execute(_text(f"{dialect}_read"), (name,))
        row = cur.fetchone()
    finally:
        cur.close()
    accepted = int(row[0]) if row else None
    if accepted is not None and accepted <= token:
        return
    raise StaleTokenError(
        f"the fence of {name!r} already accepted token {accepted}; token {token} is older: its "
        "holder's lease had ended. Roll the transaction back: its writes must not commit"
    )
