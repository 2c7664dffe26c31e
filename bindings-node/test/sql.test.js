'use strict';
// polylock from Node on MySQL/MariaDB (GET_LOCK) and PostgreSQL (advisory locks), against the
// servers of scripts/servers.sh: exclusion, reentrancy and the lost signal on both.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const polylock = require('..');

const MYSQL = process.env.POLYLOCK_MYSQL_URL || 'mysql://polylock:polylock-pw@127.0.0.1:3307/polylock';
const PG = process.env.POLYLOCK_PG_URL || 'postgres://polylock:polylock-pw@127.0.0.1:5433/polylock';
const unique = (p) => `node-${p}-${randomUUID().slice(0, 12)}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const { newFlow } = polylock;

for (const [server, url] of [['MySQL', MYSQL], ['PostgreSQL', PG]]) {
  test(`${server}: handles on two clients keep a counter exact, tokens in order`, async () => {
    const clients = [await polylock.connect(url), await polylock.connect(url)];
    const name = unique('excl');
    let inside = false;
    let overlaps = 0;
    let counter = 0;
    const tokens = [];
    await Promise.all([0, 1, 2, 3].map(async (i) => {
      const lock = clients[i % 2].lock(name);
      for (let r = 0; r < 8; r++) {
        assert.ok(await lock.acquire());
        if (inside) overlaps++;
        inside = true;
        tokens.push(lock.fencingToken);
        const v = counter;
        await sleep(1);
        counter = v + 1;
        inside = false;
        await lock.release();
      }
    }));
    assert.equal(overlaps, 0);
    assert.equal(counter, 32);
    assert.deepEqual(tokens, [...tokens].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    assert.equal(new Set(tokens.map(String)).size, 32);
    for (const c of clients) await c.close();
  });

  test(`${server}: a flow re-enters; another flow waits for the last release`, async () => {
    const c = await polylock.connect(url);
    const a = c.lock(unique('reent'));
    const b = c.lock(a.name);
    assert.ok(await a.acquire());
    assert.ok(await a.acquire({ waitMs: 0 }));
    assert.equal(a.holdCount, 2);
    const token = a.fencingToken;
    assert.equal(await newFlow(() => b.acquire({ waitMs: 0 })), null);
    await a.release();
    assert.equal(await newFlow(() => b.acquire({ waitMs: 150 })), null);
    await a.release();
    const held = await newFlow(() => b.acquire({ waitMs: 0 }));
    assert.ok(held);
    assert.ok(held.fencingToken > token);
    await b.release();
    await assert.rejects(a.release(), (e) => e.code === 'ERR_POLYLOCK_NOT_OWNER');
    await c.close();
  });

  test(`${server}: a killed connection emits 'lost' within a watchdog period`, async () => {
    const c = await polylock.connect(url, { watchdogTimeoutMs: 1500 });
    const other = await polylock.connect(url);
    const lock = c.lock(unique('lost'));
    const lost = new Promise((resolve) => lock.once('lost', resolve));
    const keepAlive = setInterval(() => {}, 1000); // 'lost' listeners are weak by design
    assert.ok(await lock.acquire());
    const token = lock.fencingToken;
    // On SQL servers forceUnlock kills the holder's connection (KILL / pg_terminate_backend).
    assert.equal(await other.lock(lock.name).forceUnlock(), true);
    const killed = Date.now();
    await lost;
    clearInterval(keepAlive);
    // Found by a keep-alive (every 500 ms); 4.5 s leaves room for a loaded machine.
    assert.ok(Date.now() - killed < 4500, `lost after ${Date.now() - killed} ms`);
    await assert.rejects(lock.release(), (e) => e.code === 'ERR_POLYLOCK_LOCK_LOST');
    const next = other.lock(lock.name);
    assert.ok(await next.acquire({ waitMs: 5000 }));
    assert.ok(next.fencingToken > token);
    await next.release();
    await other.close();
    await c.close();
  });
}
