'use strict';
// The fair lock, the multi-lock and RedLock from Node, against real servers (RedLock against the
// three masters of scripts/servers.sh).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const polylock = require('..');

const REDIS = process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379';
const ZK = process.env.POLYLOCK_ZK_URL || 'zk://127.0.0.1:2181';
const REDLOCK = (
  process.env.POLYLOCK_REDLOCK_URLS || 'redis://127.0.0.1:6381,redis://127.0.0.1:6382,redis://127.0.0.1:6383'
).split(',');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const unique = (p) => `polylock-node:${p}:${randomUUID()}`;
const isCode = (code) => (e) => e instanceof polylock.PolylockError && e.code === code;
const { newFlow } = polylock;

test('a fair lock is granted in the order of asking', async () => {
  const c = await polylock.connect(REDIS);
  const name = unique('fair');
  const holder = c.fairLock(name);
  assert.equal(holder.kind, 'fair');
  assert.ok(await holder.acquire());
  const order = [];
  const waiters = [];
  for (let i = 0; i < 6; i++) {
    const l = c.fairLock(name);
    waiters.push(
      // Each waiter a flow of its own (this one holds the lock: its acquires would re-enter).
      newFlow(() => l.acquire()).then(async (held) => {
        assert.ok(held);
        order.push(i);
        await sleep(10);
        await held.release();
      }),
    );
    await sleep(100); // each is queued before the next asks
  }
  await holder.release();
  await Promise.all(waiters);
  assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
  assert.equal(await holder.isLocked(), false);
  await c.close();
});

test('a multi-lock over Redis and ZooKeeper takes all or nothing', async () => {
  const [r, z, other] = await Promise.all([polylock.connect(REDIS), polylock.connect(ZK), polylock.connect(ZK)]);
  const aName = unique('multi');
  const bPath = `/polylock-node/multi-${randomUUID()}`;
  const a = r.lock(aName);
  const b = z.lock(bPath);
  const both = new polylock.MultiLock([b, a]);
  assert.ok(both instanceof polylock.Lock);
  assert.equal(both.kind, 'multi');
  assert.deepEqual(both.members, [b, a]);
  assert.ok(await both.acquire({ waitMs: 5000 }));
  assert.equal(await a.isLocked(), true);
  assert.equal(await b.isLocked(), true);
  const [tb, ta] = both.fencingTokens;
  assert.ok(ta > 0 && tb > 0);
  assert.equal(both.fencingToken, Math.max(ta, tb));
  assert.ok(await both.acquire({ waitMs: 0 }), 're-entry');
  assert.equal(both.holdCount, 2);
  assert.ok(await a.acquire({ waitMs: 0 }), 'a member re-enters inside the section');
  await a.release();
  await both.release();
  await both.release();
  assert.equal(await a.isLocked(), false);
  await assert.rejects(both.release(), isCode('ERR_POLYLOCK_NOT_OWNER'));

  // The ZooKeeper member held elsewhere: the wait runs out and the Redis member is given back.
  const held = other.lock(bPath);
  assert.ok(await held.acquire());
  assert.equal(await both.acquire({ waitMs: 300 }), null);
  assert.equal(await a.isLocked(), false, 'nothing left held');
  // An abort ends the wait the same way.
  const ac = new AbortController();
  const waiting = both.acquire({ signal: ac.signal });
  await sleep(100);
  ac.abort();
  await assert.rejects(waiting, { name: 'AbortError' });
  assert.equal(await a.isLocked(), false);
  await held.release();

  // A member lost: the multi-lock emits 'lost'.
  const lost = new Promise((resolve) => both.once('lost', resolve));
  assert.ok(await both.acquire({ waitMs: 5000 }));
  await r.lock(aName).forceUnlock();
  const keepAlive = setInterval(() => {}, 1000); // 'lost' listeners are weak by design
  const event = await lost;
  clearInterval(keepAlive);
  assert.equal(event.name, aName);
  await assert.rejects(both.release(), isCode('ERR_POLYLOCK_LOCK_LOST'));
  await Promise.all([r.close(), z.close(), other.close()]);
});

test('two multi-locks in opposite orders never deadlock', async () => {
  const c = await polylock.connect(REDIS);
  const [x, y] = [unique('order-x'), unique('order-y')];
  let count = 0;
  const work = async (names) => {
    const m = new polylock.MultiLock(names.map((n) => c.lock(n)));
    for (let i = 0; i < 50; i++) {
      assert.ok(await m.acquire({ waitMs: 20000 }));
      const v = count;
      await sleep(0);
      count = v + 1;
      await m.release();
    }
  };
  await Promise.all([work([x, y]), work([y, x]), work([x, y]), work([y, x])]);
  assert.equal(count, 200);
  await c.close();
});

test('MultiLock rejects bad input', async () => {
  const c = await polylock.connect(REDIS);
  const a = c.lock(unique('bad'));
  assert.throws(() => new polylock.MultiLock([]), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  assert.throws(() => new polylock.MultiLock([a, a]), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  assert.throws(() => new polylock.MultiLock(a), TypeError);
  assert.throws(() => new polylock.MultiLock([a, 'b']), TypeError);
  await c.close();
});

test('RedLock keeps a counter exact over three masters and releases on each', async () => {
  const name = unique('redlock');
  const clients = [await polylock.connectRedlock(REDLOCK), await polylock.connectRedlock(REDLOCK, { watchdogTimeoutMs: 5000 })];
  const masters = await Promise.all(REDLOCK.map((u) => polylock.connect(u)));
  let count = 0;
  let inside = 0;
  let overlaps = 0;
  const work = async (c) => {
    const l = c.lock(name);
    for (let i = 0; i < 15; i++) {
      assert.ok(await l.acquire({ waitMs: 30000 }));
      inside += 1;
      if (inside > 1) overlaps += 1;
      const v = count;
      await sleep(1);
      count = v + 1;
      inside -= 1;
      await l.release();
    }
  };
  await Promise.all([work(clients[0]), work(clients[1]), work(clients[0]), work(clients[1])]);
  assert.deepEqual([count, overlaps], [60, 0]);
  const l = clients[0].lock(name);
  assert.ok(await l.acquire());
  for (const m of masters) assert.equal(await m.lock(name).isLocked(), true, 'held on every master');
  assert.ok(l.fencingToken > 0);
  await l.release();
  for (const m of masters) assert.equal(await m.lock(name).isLocked(), false, 'released on every master');
  await Promise.all([...clients, ...masters].map((c) => c.close()));
});

test('connectRedlock rejects bad input with typed errors', async () => {
  await assert.rejects(polylock.connectRedlock(REDLOCK.slice(0, 2)), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  await assert.rejects(polylock.connectRedlock([REDLOCK[0], REDLOCK[1], REDLOCK[0]]), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  await assert.rejects(polylock.connectRedlock(REDLOCK[0]), TypeError);
  await assert.rejects(polylock.connectRedlock([REDLOCK[0], 7, REDLOCK[2]]), TypeError);
  await assert.rejects(
    polylock.connectRedlock([REDLOCK[0], 'redis://127.0.0.1:1', 'redis://127.0.0.1:2']),
    isCode('ERR_POLYLOCK_CONNECTION'),
  );
  const c = await polylock.connectRedlock(REDLOCK);
  for (const make of ['fairLock', 'readWriteLock', 'semaphore', 'countDownLatch']) {
    assert.throws(() => c[make]('x'), isCode('ERR_POLYLOCK_UNSUPPORTED'), make);
  }
  await c.close();
});
