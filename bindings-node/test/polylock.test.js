'use strict';
// polylock from Node, against real Redis and ZooKeeper (scripts/servers.sh starts them).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const polylock = require('..');

const REDIS = process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379';
const ZK = process.env.POLYLOCK_ZK_URL || 'zk://127.0.0.1:2181';
const ETCD = process.env.POLYLOCK_ETCD_URL || 'etcd://127.0.0.1:2379';
const unique = (p) => `polylock-node:${p}:${randomUUID()}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const { newFlow } = polylock;

test('a flow re-enters what it holds; another flow waits, on any handle', async () => {
  const c = await polylock.connect(REDIS);
  const a = c.lock(unique('handles'));
  const b = c.lock(a.name);
  const first = await a.acquire();
  assert.ok(first instanceof polylock.LockHold);
  assert.equal(first.lock, a);
  assert.ok(await a.acquire());
  assert.equal(a.holdCount, 2);
  assert.equal(b.holdCount, 2, 'the flow holds it, whichever handle asks');
  assert.equal(await newFlow(() => b.acquire({ waitMs: 0 })), null);
  assert.equal(await newFlow(() => b.tryLock()), null);
  assert.equal(await newFlow(() => b.acquire({ waitMs: 150 })), null);
  await assert.rejects(newFlow(() => c.lock(a.name).release()), (e) => e instanceof polylock.PolylockError && e.code === 'ERR_POLYLOCK_NOT_OWNER');
  const token = a.fencingToken;
  assert.ok(token > 0);
  assert.equal(first.fencingToken, token);
  await a.release();
  assert.equal(await a.isLocked(), true);
  await a.release();
  assert.equal(await a.isLocked(), false);
  assert.equal(first.released, true);
  const other = await newFlow(() => b.tryLock());
  assert.ok(other);
  assert.ok(other.fencingToken > token, 'tokens grow with every new holder');
  await b.release(); // the handle's one acquisition, from any flow
  assert.equal(await a.isLocked(), false);
  await c.close();
});

test('a waiter is woken by the release, and the event loop keeps running meanwhile', async () => {
  const c = await polylock.connect(REDIS);
  const a = c.lock(unique('wake'));
  const b = c.lock(a.name);
  await a.acquire();
  let settled = false;
  const waiting = newFlow(() => b.acquire()).finally(() => { settled = true; });
  // The loop runs timers while the acquire waits: 20 rounds complete with the waiter still
  // waiting (a blocked loop would run none of them before the wait ended, and the wait ends only
  // with the release below). No tick is counted against the clock.
  for (let i = 0; i < 20; i++) await sleep(1);
  assert.equal(settled, false, 'the waiter got a held lock');
  const released = Date.now();
  await a.release();
  assert.ok(await waiting);
  // Woken by the release's notification: without it the waiter would look again only when the
  // holder's 30 s lease ran out. 5 s tells the two apart on any machine.
  const latency = Date.now() - released;
  assert.ok(latency < 5000, `woken after ${latency} ms`);
  await b.release();
  await c.close();
});

test('AbortSignal cancels a wait and leaves nothing behind', async () => {
  const c = await polylock.connect(REDIS);
  const a = c.lock(unique('abort'));
  const b = c.lock(a.name);
  await a.acquire();
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 100);
  await assert.rejects(newFlow(() => b.acquire({ signal: ac.signal })), { name: 'AbortError' });
  await assert.rejects(newFlow(() => b.acquire({ signal: ac.signal })), { name: 'AbortError' }, 'an aborted signal rejects at once');
  await a.release();
  await sleep(100);
  assert.equal(await a.isLocked(), false, 'the aborted waiter must not take the lock afterwards');
  assert.equal(b.holdCount, 0);
  await c.close();
});

test('using() releases after the work and aborts its signal when the lock is lost', async () => {
  const c = await polylock.connect(REDIS, { watchdogTimeoutMs: 600 });
  const lock = c.lock(unique('using'));
  assert.equal(await lock.using(async () => 42), 42);
  assert.equal(await lock.isLocked(), false);
  const other = await polylock.connect(REDIS);
  const events = [];
  lock.on('lost', (e) => events.push(e));
  const work = lock.using(async (signal) => {
    await other.lock(lock.name).forceUnlock();
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    return signal.reason;
  });
  await assert.rejects(work, (e) => e.code === 'ERR_POLYLOCK_LOCK_LOST', 'release reports the loss');
  assert.equal(events.length, 1);
  assert.equal(events[0].reason, 'DELETED');
  await other.close();
  await c.close();
});

test('hold() is disposable with Symbol.asyncDispose', async () => {
  const c = await polylock.connect(REDIS);
  const lock = c.lock(unique('dispose'));
  const held = await lock.hold();
  assert.ok(held instanceof polylock.LockHold);
  assert.ok(held.fencingToken > 0);
  assert.equal(await lock.isLocked(), true);
  const dispose = held[Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose')];
  assert.equal(typeof dispose, 'function');
  await dispose();
  await dispose(); // idempotent
  assert.equal(await lock.isLocked(), false);
  await c.close();
});

test('a fixed lease expires; the handle learns it', async () => {
  const c = await polylock.connect(REDIS);
  const lock = c.lock(unique('lease'));
  const lost = new Promise((resolve) => lock.once('lost', resolve));
  assert.ok(await lock.acquire({ leaseMs: 300 }));
  const ttl = await lock.remainingLeaseMs();
  assert.ok(ttl > 0 && ttl <= 300, `ttl ${ttl}`);
  const keepAlive = setInterval(() => {}, 1000); // 'lost' listeners are weak by design
  assert.equal((await lost).reason, 'EXPIRED');
  clearInterval(keepAlive);
  assert.equal(lock.isLost, true);
  await assert.rejects(lock.release(), { code: 'ERR_POLYLOCK_LOCK_LOST' });
  await c.close();
});

test('every bad input gets a typed error with a code', async () => {
  const c = await polylock.connect(REDIS);
  for (const bad of [undefined, 42, '']) {
    assert.throws(() => c.lock(bad), (e) => (e instanceof TypeError || e instanceof RangeError) && e.code === 'ERR_POLYLOCK_INVALID_ARGUMENT');
  }
  assert.throws(() => c.lock('a\u0000b'), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  // A lone surrogate has no UTF-8 form: refused, never made U+FFFD (two such names were one lock).
  for (const bad of ['a\uD800', 'a\uDC00b', '\uDBFF']) {
    for (const make of [() => c.lock(bad), () => c.semaphore(bad), () => c.countDownLatch(bad), () => c.readWriteLock(bad)]) {
      assert.throws(make, { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' }, JSON.stringify(bad));
    }
  }
  assert.equal(c.lock('a\uD83D\uDD12').name, 'a\u{1F512}', 'a surrogate pair is one character');
  assert.throws(() => c.lock('x'.repeat(64 * 1024 + 1)), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  const lock = c.lock(unique('bad'));
  for (const options of [{ waitMs: -1 }, { waitMs: 'soon' }, { leaseMs: 0 }, { leaseMs: -5 }, { leaseMs: Infinity }, { waitMs: NaN }, { signal: {} }]) {
    await assert.rejects(lock.acquire(options), (e) => (e instanceof TypeError || e instanceof RangeError) && e.code === 'ERR_POLYLOCK_INVALID_ARGUMENT', JSON.stringify(options));
  }
  await assert.rejects(lock.acquire(null), TypeError);
  assert.equal(await lock.isLocked(), false);
  await assert.rejects(polylock.connect('http://127.0.0.1:6379'), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  await assert.rejects(polylock.connect(REDIS, { watchdogTimeoutMs: 0 }), RangeError);
  await assert.rejects(polylock.connect('redis://127.0.0.1:1'), { code: 'ERR_POLYLOCK_CONNECTION' });
  await assert.rejects(polylock.connect(42), TypeError);
  await c.close();
  await assert.rejects(lock.acquire(), { code: 'ERR_POLYLOCK_INVALID_STATE' });
  assert.throws(() => c.lock('x'), { code: 'ERR_POLYLOCK_INVALID_STATE' });
});

test('ZooKeeper lock and mutex', async () => {
  const z = await polylock.connect(ZK);
  const p = `/polylock-node/${randomUUID()}`;
  const a = z.lock(p);
  const b = z.lock(p);
  assert.ok(await a.acquire());
  assert.equal(await newFlow(() => b.acquire({ waitMs: 100 })), null);
  await assert.rejects(a.acquire({ leaseMs: 1000 }), { code: 'ERR_POLYLOCK_UNSUPPORTED' });
  await a.release();
  assert.throws(() => z.lock('relative'), { code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  const m = z.mutex(`${p}-m`);
  assert.ok(await m.acquire());
  assert.equal(await m.acquire({ waitMs: 100 }), null, 'not reentrant, not even in its own flow');
  await m.release();
  const r = await polylock.connect(REDIS);
  assert.throws(() => r.mutex('x'), { code: 'ERR_POLYLOCK_UNSUPPORTED' });
  await r.close();
  await z.close();
});

test('etcd lock', async () => {
  const e = await polylock.connect(ETCD);
  const a = e.lock(`polylock-node/${randomUUID()}`);
  const b = e.lock(a.name);
  const first = await a.acquire();
  assert.ok(first, 'held');
  assert.ok(await a.acquire(), 're-entered in its own flow');
  assert.equal(a.holdCount, 2);
  assert.equal(await newFlow(() => b.acquire({ waitMs: 100 })), null, 'another flow waits');
  await assert.rejects(a.acquire({ leaseMs: 1000 }), { code: 'ERR_POLYLOCK_UNSUPPORTED' });
  const token = first.fencingToken;
  await a.release();
  await a.release();
  const second = await newFlow(() => b.acquire({ waitMs: 1000 }));
  assert.ok(second, 'free after both releases');
  assert.ok(second.fencingToken > token);
  await second.release();
  assert.throws(() => e.mutex('x'), { code: 'ERR_POLYLOCK_UNSUPPORTED' });
  await e.close();
});

test('a process holding a lock exits once the client is closed (nothing keeps the loop alive)', () => {
  const script = `
    const p = require(${JSON.stringify(path.join(__dirname, '..'))});
    (async () => {
      const c = await p.connect(${JSON.stringify(REDIS)}, { watchdogTimeoutMs: 1000 });
      const l = c.lock(${JSON.stringify(unique('exit'))});
      l.on('lost', () => {});
      await l.acquire();
      await c.close();
    })();`;
  const started = Date.now();
  const r = spawnSync(process.execPath, ['-e', script], { timeout: 20000 });
  assert.equal(r.status, 0, String(r.stderr));
  assert.ok(Date.now() - started < 10000, 'exited promptly');
});

test('a process that exits without close() leaves no ZooKeeper node (the exit hook closes it)', async () => {
  const p = `/polylock-node/exit-${randomUUID()}`;
  const script = `
    const polylock = require(${JSON.stringify(path.join(__dirname, '..'))});
    (async () => {
      const c = await polylock.connect(${JSON.stringify(ZK)});
      if (!(await c.lock(${JSON.stringify(p)}).acquire())) process.exit(3);
      console.log('held');
    })();`;
  const r = spawnSync(process.execPath, ['-e', script], { timeout: 30000, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /held/);
  const z = await polylock.connect(ZK);
  const started = Date.now();
  const lock = z.lock(p);
  // Its node would stay for the 10 s session timeout had the process not closed its session.
  assert.ok(await lock.acquire({ waitMs: 2000 }), "the exited process's node was still there");
  console.log(`the exited process's node was gone ${Date.now() - started} ms after`);
  await lock.release();
  await z.close();
});
