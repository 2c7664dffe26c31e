"""Fencing at the resource from Python: a write under an older token than one already accepted is
refused by Redis (client.fenced_write) and by PostgreSQL and MariaDB (polylock.fence.sql in the
caller's own psycopg, psycopg2, PyMySQL transaction), against the servers of scripts/servers.sh."""

from __future__ import annotations

import os
import threading
import time
import urllib.parse
import uuid

import psycopg
import psycopg2
import pymysql
import pytest
import redis

import polylock

REDIS = os.environ.get("POLYLOCK_REDIS_URL", "redis://127.0.0.1:6379")
ZK = os.environ.get("POLYLOCK_ZK_URL", "zk://127.0.0.1:2181")
MYSQL = os.environ.get("POLYLOCK_MYSQL_URL", "mysql://polylock:polylock-pw@127.0.0.1:3307/polylock")
PG = os.environ.get("POLYLOCK_PG_URL", "postgres://polylock:polylock-pw@127.0.0.1:5433/polylock")


def unique(prefix: str) -> str:
    return f"py-{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def client():
    c = polylock.connect(REDIS)
    yield c
    c.close()


@pytest.fixture
def raw():
    r = redis.Redis.from_url(REDIS)
    yield r
    r.close()


def test_a_late_write_under_an_older_token_is_refused_and_nothing_runs(client, raw):
    name = unique("fence")
    stock, orders = f"{{{name}}}:stock", f"{{{name}}}:orders"
    lock = client.lock(name)
    assert lock.acquire()
    t1 = lock.fencing_token
    replies = client.fenced_write(
        name,
        t1,
        [["SET", stock, 10], ["DECR", stock], ["RPUSH", orders, b"a-1"], ["GET", f"{{{name}}}:none"],
         ["LRANGE", orders, 0, -1]],
    )
    assert replies == ["OK", 9, 1, None, [b"a-1"]]
    fence = client.fence(name)
    assert fence.accepted() == t1

    # The holder pauses past its lease: here it is force-unlocked, and another owner takes it.
    assert lock.force_unlock()
    other = polylock.connect(REDIS)
    try:
        lock2 = other.lock(name)
        assert lock2.acquire()
        t2 = lock2.fencing_token
        assert t2 > t1
        for _ in range(2):  # the same token writes any number of times
            other.fenced_write(name, t2, [["DECR", stock]])
        assert raw.get(stock) == b"7"
        with pytest.raises(polylock.StaleTokenError) as e:
            client.fenced_write(name, t1, [["DECR", stock], ["RPUSH", orders, "a-2"]])
        assert e.value.code == "STALE_TOKEN" and e.value.number == 16
        assert f"already accepted token {t2}" in str(e.value)
        assert raw.get(stock) == b"7", "nothing of the late write ran"
        assert raw.lrange(orders, 0, -1) == [b"a-1"]
        assert fence.accepted() == t2
        lock2.release()
    finally:
        other.close()
        raw.delete(stock, orders, f"polylock_fence:{{{name}}}")


def test_bad_writes_are_typed_errors(client, raw):
    name = unique("fence-bad")
    fence = client.fence(name)
    for token in (0, -1, 2**63, 2**70):
        with pytest.raises(polylock.InvalidArgumentError):
            fence.write(token, [["PING"]])
    for token in (True, "5", 1.5, None):
        with pytest.raises(TypeError):
            fence.write(token, [["PING"]])  # type: ignore[arg-type]
    with pytest.raises(polylock.InvalidArgumentError):
        fence.write(1, [])
    with pytest.raises(polylock.InvalidArgumentError):
        fence.write(1, [[]])
    with pytest.raises(TypeError):
        fence.write(1, "PING")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        fence.write(1, [["SET", "k", object()]])  # type: ignore[list-item]
    with pytest.raises(polylock.InvalidArgumentError):
        client.fence("")
    with pytest.raises(polylock.InvalidArgumentError):
        client.fence("a\0b")
    assert fence.accepted() is None, "nothing reached the server"
    with pytest.raises(polylock.BackendError):
        fence.write(3, [["NOSUCHCOMMAND"]])
    raw.delete(f"polylock_fence:{{{name}}}")


def test_a_fence_needs_a_redis_client():
    zk = polylock.connect(ZK)
    try:
        with pytest.raises(polylock.UnsupportedError):
            zk.fence("/py-fence")
    finally:
        zk.close()


def test_use_after_close_is_invalid_state():
    c = polylock.connect(REDIS)
    fence = c.fence(unique("fence-closed"))
    c.close()
    with pytest.raises(polylock.InvalidStateError):
        fence.write(1, [["PING"]])


def _pg_dsn() -> str:
    return PG.split("?")[0]


def _mysql_kwargs() -> dict:
    u = urllib.parse.urlparse(MYSQL)
    return dict(host=u.hostname, port=u.port, user=u.username, password=u.password, database=u.path.lstrip("/"))


def _connections():
    yield "psycopg", lambda: psycopg.connect(_pg_dsn())
    yield "psycopg2", lambda: psycopg2.connect(_pg_dsn())
    yield "pymysql", lambda: pymysql.connect(**_mysql_kwargs())


CONNECT = dict(_connections())


@pytest.mark.parametrize("driver", list(CONNECT))
def test_sql_refuses_a_stale_writer_in_its_own_transaction(driver):
    connect = CONNECT[driver]
    a, b, look = connect(), connect(), connect()
    try:
        polylock.fence.setup(a)
        cur = a.cursor()
        if driver == "pymysql":
            cur.execute("CREATE TABLE IF NOT EXISTS fence_py_stock (item VARCHAR(64) PRIMARY KEY, left_ BIGINT NOT NULL)")
        else:
            cur.execute("CREATE TABLE IF NOT EXISTS fence_py_stock (item TEXT PRIMARY KEY, left_ BIGINT NOT NULL)")
        name = unique(f"fence-{driver}")
        cur.execute("INSERT INTO fence_py_stock VALUES (%s, 10)", (name,))
        a.commit()

        def sell(conn, token):
            c = conn.cursor()
            try:
                polylock.fence.sql(conn, name, token)
                c.execute("UPDATE fence_py_stock SET left_ = left_ - 1 WHERE item = %s", (name,))
                conn.commit()
                return True
            except polylock.StaleTokenError:
                conn.rollback()
                return False

        def left():
            c = look.cursor()
            c.execute("SELECT left_ FROM fence_py_stock WHERE item = %s", (name,))
            n = c.fetchone()[0]
            look.commit()
            return n

        assert sell(b, 5) is True
        assert sell(a, 4) is False, "an older token is refused"
        assert left() == 9
        assert sell(a, 5) is True, "the same token writes again"
        # A newer token whose transaction rolls back is not remembered.
        polylock.fence.sql(a, name, 9)
        a.rollback()
        assert sell(a, 6) is True
        assert left() == 7

        # B (token 7) holds the guard row in an open transaction; A (token 6) comes then, waits,
        # and is refused once B commits.
        polylock.fence.sql(b, name, 7)
        b.cursor().execute("UPDATE fence_py_stock SET left_ = left_ - 1 WHERE item = %s", (name,))
        result = {}
        late = threading.Thread(target=lambda: result.setdefault("sold", sell(a, 6)))
        late.start()
        late.join(0.3)
        assert late.is_alive(), "the stale writer waits for the guard row while B's transaction is open"
        b.commit()
        late.join(60)
        assert result == {"sold": False}
        assert left() == 6, "only the newer holder's sale committed"

        with pytest.raises(polylock.InvalidArgumentError):
            polylock.fence.sql(a, "x" * 256, 1)
        with pytest.raises(polylock.InvalidArgumentError):
            polylock.fence.sql(a, name, 0)
        with pytest.raises(TypeError):
            polylock.fence.sql(a, name, "7")  # type: ignore[arg-type]
        a.rollback()
        cur = a.cursor()
        cur.execute("DELETE FROM polylock_fence WHERE name = %s", (name,))
        cur.execute("DELETE FROM fence_py_stock WHERE item = %s", (name,))
        a.commit()
    finally:
        for c in (a, b, look):
            c.close()


def test_sql_names_the_drivers_it_knows():
    with pytest.raises(polylock.InvalidArgumentError) as e:
        polylock.fence.sql(object(), "n", 1)
    assert "psycopg" in str(e.value)
    assert polylock.fence.STATEMENTS["postgres_guard"].startswith("INSERT INTO polylock_fence")
