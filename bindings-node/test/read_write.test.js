'use strict';
// The read-write lock from Node, the same cases on Redis and on ZooKeeper.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const polylock = require('..');

const REDIS = process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379';
const ZK = process.env.POLYLOCK_ZK_URL || 'zk://127.0.0.1:2181';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const nameFor = (url, p) => (url.startsWith('zk') ? `/polylock-node/${p}-${randomUUID()}` : `polylock-node:${p}:${randomUUID()}`);
const isCode = (code) => (e) => e instanceof polylock.PolylockError && e.code === code;
const { newFlow } = polylock;

for (const [server, url] of [
  ['redis', REDIS],
  ['zookeeper', ZK],
]) {
  test(`${server}: readers share, a writer excludes and is woken by the last reader`, async () => {
    const c = await polylock.connect(url);
    const name = nameFor(url, 'share');
    const [a, b, w] = [c.readWriteLock(name), c.readWriteLock(name), c.readWriteLock(name)];
    assert.ok(a instanceof polylock.ReadWriteLock);
    assert.equal(a.readLock().kind, 'read');
    assert.equal(a.writeLock().kind, 'write');
    // Each reader in a flow of its own (one flow would re-enter its read hold).
    const ra = await newFlow(() => a.readLock().acquire({ waitMs: 0 }));
    const rb = await newFlow(() => b.readLock().acquire({ waitMs: 0 }));
    assert.ok(ra && rb, 'readers share');
    assert.equal(await a.readLock().isLocked(), true);
    assert.equal(await newFlow(() => w.writeLock().acquire({ waitMs: 0 })), null);
    const waiting = newFlow(() => w.writeLock().acquire({ waitMs: 10000 }));
    await ra.release();
    await sleep(100);
    const released = Date.now();
    await rb.release();
    const held = await waiting;
    assert.ok(held);
    // Not woken, the waiter would wait out its 10 s: half of that is the bound.
    assert.ok(Date.now() - released < 5000, 'woken by the release');
    assert.equal(await newFlow(() => a.readLock().acquire({ waitMs: 0 })), null);
    assert.equal(await newFlow(() => b.writeLock().acquire({ waitMs: 0 })), null);
    await held.release();
    await c.close();
  });

  test(`${server}: reentrant halves, downgrade, and the upgrade refused at once`, async () => {
    const c = await polylock.connect(url);
    const other = await polylock.connect(url);
    const name = nameFor(url, 'down');
    const rw = c.readWriteLock(name);
    const r = rw.readLock();
    const w = rw.writeLock();
    assert.ok(await r.acquire());
    assert.ok(await r.acquire());
    assert.equal(r.holdCount, 2);
    const started = Date.now();
    await assert.rejects(w.acquire(), isCode('ERR_POLYLOCK_UPGRADE_NOT_SUPPORTED'));
    assert.ok(Date.now() - started < 5000, 'refused, not waited for (Redisson and Curator wait forever)');
    assert.equal(r.holdCount, 2);
    await r.release();
    await r.release();
    await assert.rejects(r.release(), isCode('ERR_POLYLOCK_NOT_OWNER'));
    assert.ok(await w.acquire());
    const token = w.fencingToken;
    assert.ok(token > 0);
    assert.ok(await r.acquire({ waitMs: 0 }), 'the writer may read');
    assert.equal(await newFlow(() => rw.readLock().acquire({ waitMs: 0 })), null, 'another flow may not, on the same handle');
    const stranger = other.readWriteLock(name);
    assert.equal(await stranger.readLock().acquire({ waitMs: 0 }), null);
    await w.release();
    assert.ok(await stranger.readLock().acquire({ waitMs: 2000 }), 'readers share after the downgrade');
    const writer = other.readWriteLock(name);
    assert.equal(await newFlow(() => writer.writeLock().acquire({ waitMs: 0 })), null);
    await stranger.readLock().release();
    await r.release();
    assert.ok(await newFlow(() => writer.writeLock().acquire({ waitMs: 2000 })));
    await writer.writeLock().release();
    await other.close();
    await c.close();
  });

  test(`${server}: readers and writers on two clients keep a counter exact`, async () => {
    const [a, b] = [await polylock.connect(url), await polylock.connect(url)];
    const name = nameFor(url, 'counter');
    let counter = 0;
    let readers = 0;
    let writers = 0;
    let mostReaders = 0;
    let overlaps = 0;
    const work = async (client, writer) => {
      const rw = client.readWriteLock(name);
      const lock = writer ? rw.writeLock() : rw.readLock();
      for (let i = 0; i < 15; i++) {
        await lock.acquire({ waitMs: 30000 });
        if (writer) {
          writers++;
          if (writers > 1 || readers > 0) overlaps++;
          const v = counter;
          await sleep(2);
          counter = v + 1;
          writers--;
        } else {
          readers++;
          mostReaders = Math.max(mostReaders, readers);
          if (writers > 0) overlaps++;
          await sleep(3);
          readers--;
        }
        await lock.release();
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5].map((i) => work(i % 2 ? a : b, i < 2)));
    assert.equal(overlaps, 0);
    assert.equal(counter, 30);
    assert.ok(mostReaders >= 2, `readers never shared (${mostReaders})`);
    await a.close();
    await b.close();
  });

  test(`${server}: AbortSignal cancels a waiting writer and leaves nothing`, async () => {
    const c = await polylock.connect(url);
    const name = nameFor(url, 'abort');
    const reader = c.readWriteLock(name);
    await reader.readLock().acquire();
    const writer = c.readWriteLock(name);
    await assert.rejects(
      newFlow(() => writer.writeLock().acquire({ signal: AbortSignal.timeout(150) })),
      (e) => e.name === 'TimeoutError',
    );
    await reader.readLock().release();
    const next = c.readWriteLock(name);
    assert.ok(await newFlow(() => next.writeLock().acquire({ waitMs: 2000 })), 'nothing left behind');
    await next.writeLock().release();
    await c.close();
  });

  test(`${server}: a read hold lost elsewhere emits 'lost' on the read half only`, async () => {
    const c = await polylock.connect(url, { watchdogTimeoutMs: 600 });
    const other = await polylock.connect(url);
    const name = nameFor(url, 'lost');
    const rw = c.readWriteLock(name);
    const seen = [];
    rw.readLock().on('lost', (e) => seen.push(['read', e.reason]));
    rw.writeLock().on('lost', (e) => seen.push(['write', e.reason]));
    await rw.readLock().acquire();
    if (server === 'redis') {
      await sleep(1900); // the watchdog keeps the read hold past three leases
      assert.equal(rw.readLock().isLost, false);
      assert.equal(await other.readWriteLock(name).writeLock().acquire({ waitMs: 0 }), null);
    }
    assert.equal(await other.readWriteLock(name).readLock().forceUnlock(), true);
    for (let i = 0; i < 100 && seen.length === 0; i++) await sleep(20);
    assert.deepEqual(seen, [['read', 'DELETED']]);
    await assert.rejects(rw.readLock().release(), isCode('ERR_POLYLOCK_LOCK_LOST'));
    await other.close();
    await c.close();
  });
}
