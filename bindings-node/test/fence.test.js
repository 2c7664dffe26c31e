'use strict';
// Fencing at the resource from Node: a write under an older token than one already accepted is
// refused by Redis (client.fencedWrite) and by PostgreSQL and MariaDB (polylock.fence.sql in the
// caller's own pg or mysql2 transaction), against the servers of scripts/servers.sh.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const pg = require('pg');
const mysql = require('mysql2/promise');
const polylock = require('..');

const REDIS = process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379';
const ZK = process.env.POLYLOCK_ZK_URL || 'zk://127.0.0.1:2181';
const MYSQL = process.env.POLYLOCK_MYSQL_URL || 'mysql://polylock:polylock-pw@127.0.0.1:3307/polylock';
const PG = process.env.POLYLOCK_PG_URL || 'postgres://polylock:polylock-pw@127.0.0.1:5433/polylock';
const unique = (p) => `node-${p}-${randomUUID().slice(0, 12)}`;

test('Redis: a late write under an older token is refused and nothing of it runs', async () => {
  const a = await polylock.connect(REDIS);
  const b = await polylock.connect(REDIS);
  const name = unique('fence');
  const stock = `{${name}}:stock`;
  const orders = `{${name}}:orders`;
  try {
    const lock = a.lock(name);
    assert.ok(await lock.acquire());
    const t1 = lock.fencingToken;
    const replies = await a.fencedWrite(name, t1, [
      ['SET', stock, 10],
      ['DECR', stock],
      ['RPUSH', orders, Buffer.from('a-1')],
      ['GET', `{${name}}:none`],
      ['LRANGE', orders, 0, -1],
      ['SET', `{${name}}:bin`, Buffer.from([0xff, 0x00])],
      ['GET', `{${name}}:bin`],
    ]);
    assert.deepEqual(replies.slice(0, 6), ['OK', 9, 1, null, ['a-1'], 'OK']);
    assert.ok(Buffer.isBuffer(replies[6]), 'bytes that are not UTF-8 come back as a Buffer');
    assert.deepEqual([...replies[6]], [0xff, 0x00]);
    const fence = a.fence(name);
    assert.equal(await fence.accepted(), t1);

    // The holder pauses past its lease: here it is force-unlocked, and B takes the lock.
    assert.equal(await lock.forceUnlock(), true);
    const lockB = b.lock(name);
    assert.ok(await lockB.acquire());
    const t2 = lockB.fencingToken;
    assert.ok(t2 > t1);
    await b.fencedWrite(name, t2, [['DECR', stock]]);
    await b.fencedWrite(name, BigInt(t2), [['DECR', stock]]); // the same token, again
    await assert.rejects(a.fencedWrite(name, t1, [['DECR', stock], ['RPUSH', orders, 'a-2']]), (e) => {
      assert.ok(e instanceof polylock.StaleTokenError, String(e));
      assert.equal(e.code, 'ERR_POLYLOCK_STALE_TOKEN');
      assert.equal(e.number, 16);
      assert.match(e.message, new RegExp(`already accepted token ${t2}`));
      return true;
    });
    const [left, list] = await b.fencedWrite(name, t2, [['GET', stock], ['LRANGE', orders, 0, -1]]);
    assert.equal(left, '7', 'nothing of the late write ran');
    assert.deepEqual(list, ['a-1']);
    assert.equal(await fence.accepted(), t2);
    await lockB.release();
    await b.fencedWrite(name, t2, [['DEL', stock, orders, `{${name}}:bin`, `polylock_fence:{${name}}`]]);
  } finally {
    await a.close();
    await b.close();
  }
});

test('bad writes are typed errors; a fence needs a Redis client; use after close', async () => {
  const c = await polylock.connect(REDIS);
  const fence = c.fence(unique('fence-bad'));
  for (const token of [0, -1, 1.5, 2 ** 60]) {
    await assert.rejects(fence.write(token, [['PING']]), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  }
  for (const token of ['5', null, true]) {
    await assert.rejects(fence.write(token, [['PING']]), TypeError);
  }
  await assert.rejects(fence.write(1, []), RangeError);
  await assert.rejects(fence.write(1, [[]]), RangeError);
  await assert.rejects(fence.write(1, 'PING'), TypeError);
  await assert.rejects(fence.write(1, [['SET', 'k', {}]]), TypeError);
  assert.throws(() => c.fence(''), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  assert.equal(await fence.accepted(), null, 'nothing reached the server');
  await assert.rejects(fence.write(3, [['NOSUCHCOMMAND']]), polylock.BackendError);
  await c.fencedWrite(fence.name, 3, [['DEL', `polylock_fence:{${fence.name}}`]]);
  await c.close();
  await assert.rejects(fence.write(4, [['PING']]), polylock.InvalidStateError);

  const zk = await polylock.connect(ZK);
  try {
    assert.throws(() => zk.fence('/node-fence'), polylock.UnsupportedError);
  } finally {
    await zk.close();
  }
});

const drivers = {
  pg: async () => {
    const c = new pg.Client({ connectionString: PG.split('?')[0] });
    await c.connect();
    return { c, q: (text, v) => c.query(text.replace(/\?/g, (_, i) => '$' + (text.slice(0, i).split('?').length)), v), end: () => c.end() };
  },
  mysql2: async () => {
    const c = await mysql.createConnection(MYSQL);
    return { c, q: (text, v) => c.query(text, v), end: () => c.end() };
  },
};

for (const [driver, open] of Object.entries(drivers)) {
  test(`${driver}: the guard refuses a stale writer in its own transaction`, async () => {
    const a = await open();
    const b = await open();
    const look = await open();
    const name = unique(`fence-${driver}`);
    try {
      await polylock.fence.setup(a.c);
      await a.q(`CREATE TABLE IF NOT EXISTS fence_node_stock (item VARCHAR(64) PRIMARY KEY, left_ BIGINT NOT NULL)`, []);
      await a.q('INSERT INTO fence_node_stock VALUES (?, 10)', [name]);
      const sell = async (x, token) => {
        await x.q('BEGIN', []);
        try {
          await polylock.fence.sql(x.c, name, token);
        } catch (e) {
          await x.q('ROLLBACK', []);
          if (e instanceof polylock.StaleTokenError) return false;
          throw e;
        }
        await x.q('UPDATE fence_node_stock SET left_ = left_ - 1 WHERE item = ?', [name]);
        await x.q('COMMIT', []);
        return true;
      };
      const left = async () => {
        const r = await look.q('SELECT left_ FROM fence_node_stock WHERE item = ?', [name]);
        const rows = driver === 'pg' ? r.rows : r[0];
        return Number(rows[0].left_);
      };
      assert.equal(await sell(b, 5), true);
      assert.equal(await sell(a, 4), false, 'an older token is refused');
      assert.equal(await left(), 9);
      assert.equal(await sell(a, 5), true, 'the same token writes again');
      // A newer token whose transaction rolls back is not remembered.
      await a.q('BEGIN', []);
      await polylock.fence.sql(a.c, name, 9);
      await a.q('ROLLBACK', []);
      assert.equal(await sell(a, 6), true);
      assert.equal(await left(), 7);

      // B (token 7) holds the guard row in an open transaction; A (token 6) waits, then is refused.
      await b.q('BEGIN', []);
      await polylock.fence.sql(b.c, name, 7);
      await b.q('UPDATE fence_node_stock SET left_ = left_ - 1 WHERE item = ?', [name]);
      let settled = false;
      const late = sell(a, 6).finally(() => {
        settled = true;
      });
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(settled, false, "the stale writer waits for the guard row while B's transaction is open");
      await b.q('COMMIT', []);
      assert.equal(await late, false);
      assert.equal(await left(), 6, "only the newer holder's sale committed");

      await assert.rejects(polylock.fence.sql(a.c, 'x'.repeat(256), 1), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
      await assert.rejects(polylock.fence.sql(a.c, name, 0), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
      await assert.rejects(polylock.fence.sql(a.c, name, '7'), TypeError);
      await assert.rejects(polylock.fence.sql({}, name, 7), TypeError);
      await a.q('DELETE FROM polylock_fence WHERE name = ?', [name]);
      await a.q('DELETE FROM fence_node_stock WHERE item = ?', [name]);
    } finally {
      await a.end();
      await b.end();
      await look.end();
    }
  });
}

test('a pg Pool is refused: the guard must run on the transaction\'s own client', async () => {
  const pool = new pg.Pool({ connectionString: PG.split('?')[0] });
  try {
    await assert.rejects(polylock.fence.sql(pool, 'n', 1), TypeError);
  } finally {
    await pool.end();
  }
  assert.ok(polylock.fence.statements.postgres_guard.startsWith('INSERT INTO polylock_fence'));
});
