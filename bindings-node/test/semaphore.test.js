'use strict';
// Semaphores and the count-down latch from Node, the same cases on Redis and on ZooKeeper.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const { spawn } = require('node:child_process');
const path = require('node:path');
const v8 = require('node:v8');
const vm = require('node:vm');
const polylock = require('..');

const REDIS = process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379';
const ZK = process.env.POLYLOCK_ZK_URL || 'zk://127.0.0.1:2181';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const nameFor = (url, p) => (url.startsWith('zk') ? `/polylock-node/${p}-${randomUUID()}` : `polylock-node:${p}:${randomUUID()}`);
const isCode = (code) => (e) => e instanceof polylock.PolylockError && e.code === code;

for (const [server, url] of [
  ['redis', REDIS],
  ['zookeeper', ZK],
]) {
  test(`${server}: 3 permits and 16 workers: exactly 3 inside at the busiest, all finish`, async () => {
    const [a, b] = [await polylock.connect(url), await polylock.connect(url)];
    const name = nameFor(url, 'sem16');
    assert.equal(await a.semaphore(name).trySetPermits(3), true);
    assert.equal(await b.semaphore(name).trySetPermits(9), false);
    let inside = 0;
    let most = 0;
    let finished = 0;
    await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const sem = (i % 2 ? a : b).semaphore(name);
        for (let k = 0; k < 3; k++) {
          const permit = await sem.acquire({ waitMs: 30000 });
          inside++;
          most = Math.max(most, inside);
          // Until 3 have been seen inside at once, stay up to 2 s for the others: a slow acquire
          // must not pass for a semaphore that admits fewer than its permits.
          for (let waited = 0; waited < 2000 && most < 3; waited++) await sleep(1);
          await sleep(10);
          inside--;
          assert.equal(permit.isLost, false);
          await permit.release();
        }
        finished++;
      }),
    );
    assert.equal(finished, 16);
    assert.equal(most, 3);
    assert.equal(await a.semaphore(name).availablePermits(), 3);
    await a.close();
    await b.close();
  });

  test(`${server}: timeouts reject typed, a release wakes a waiter, bad input, AbortSignal`, async () => {
    const [c, other] = [await polylock.connect(url), await polylock.connect(url)];
    const name = nameFor(url, 'semwait');
    const sem = c.semaphore(name);
    await sem.trySetPermits(1);
    const held = await sem.acquire();
    assert.equal(await other.semaphore(name).acquire({ waitMs: 150 }), null, 'not acquired: null, as a lock says it');
    await assert.rejects(
      other.semaphore(name).acquire({ signal: AbortSignal.timeout(100) }),
      (e) => e.name === 'TimeoutError',
    );
    const waiting = other.semaphore(name).acquire({ waitMs: 10000 });
    await sleep(100);
    const released = Date.now();
    await held[Symbol.asyncDispose]();
    const second = await waiting;
    // Not woken, the waiter would wait out its 10 s: half of that is the bound.
    assert.ok(Date.now() - released < 5000, 'woken by the release');
    await second.release();
    await second.release(); // once only
    for (const bad of [0, -1, 1.5, 'x']) {
      await assert.rejects(sem.acquire({ permits: bad }), (e) => e.code === 'ERR_POLYLOCK_INVALID_ARGUMENT');
    }
    await assert.rejects(sem.release(0), (e) => e.code === 'ERR_POLYLOCK_INVALID_ARGUMENT');
    assert.equal(await sem.availablePermits(), 1);
    await sem.addPermits(2);
    assert.equal(await sem.drainPermits(), 3);
    assert.equal(await sem.availablePermits(), 0);
    await sem.release(3);
    await other.close();
    await c.close();
  });

  test(`${server}: the latch wakes every waiter at zero and times out otherwise`, async () => {
    const [c, other] = [await polylock.connect(url), await polylock.connect(url)];
    const name = nameFor(url, 'latch');
    const latch = c.countDownLatch(name);
    assert.equal(await latch.count(), 0);
    assert.equal(await latch.wait({ waitMs: 0 }), true);
    await assert.rejects(latch.trySetCount(0), (e) => e.code === 'ERR_POLYLOCK_INVALID_ARGUMENT');
    for (const bad of [-1, 1.5, NaN, 2 ** 53 + 2]) {
      await assert.rejects(async () => latch.trySetCount(bad), (e) => e.code === 'ERR_POLYLOCK_INVALID_ARGUMENT');
    }
    if (server === 'redis') {
      // The core's count is 64 bits: a JS number up to 2^53 passes whole (ZooKeeper's is 32 bits).
      const big = c.countDownLatch(nameFor(url, 'latch-big'));
      assert.equal(await big.trySetCount(2 ** 40), true);
      assert.equal(await big.count(), 2 ** 40);
      assert.equal(await big.delete(), true);
    }
    assert.equal(await latch.trySetCount(2), true);
    assert.equal(await other.countDownLatch(name).trySetCount(5), false);
    assert.equal(await latch.wait({ waitMs: 150 }), false);
    const waiters = [0, 1, 2].map((i) => (i % 2 ? c : other).countDownLatch(name).wait({ waitMs: 10000 }));
    await sleep(100);
    await latch.countDown();
    assert.equal(await latch.count(), 1);
    await other.countDownLatch(name).countDown();
    assert.deepEqual(await Promise.all(waiters), [true, true, true]);
    await other.close();
    await c.close();
  });
}

test('redis: expiring permits: ids, the watchdog, a lost lease, unknown ids', async () => {
  const c = await polylock.connect(REDIS, { watchdogTimeoutMs: 600 });
  const name = nameFor(REDIS, 'permits');
  const sem = c.permitExpirableSemaphore(name);
  const lost = [];
  sem.on('lost', (e) => lost.push(e.reason));
  assert.equal(await sem.trySetPermits(1), true);
  const permit = await sem.acquire();
  assert.match(permit.id, /^[0-9a-f]{32}$/);
  await sleep(1900);
  assert.equal(await sem.availablePermits(), 0, 'renewed past three leases');
  assert.equal(await sem.acquire({ waitMs: 0 }), null);
  await permit.release();
  await assert.rejects(sem.release(permit.id), isCode('ERR_POLYLOCK_NOT_OWNER'));
  await assert.rejects(sem.release('nope'), (e) => e.code === 'ERR_POLYLOCK_INVALID_ARGUMENT');
  assert.equal(await sem.tryRelease(permit.id), false);
  const short = await sem.acquire({ leaseMs: 300 });
  for (let i = 0; i < 100 && lost.length === 0; i++) await sleep(20);
  assert.deepEqual(lost, ['EXPIRED']);
  await assert.rejects(sem.release(short.id), isCode('ERR_POLYLOCK_LOCK_LOST'));
  assert.equal(await sem.availablePermits(), 1);
  await c.close();
  const z = await polylock.connect(ZK);
  assert.throws(() => z.permitExpirableSemaphore('/polylock-node/nope'), isCode('ERR_POLYLOCK_UNSUPPORTED'));
  await z.close();
});

test('redis: expiring permits: no entry is kept for a name whose handles stopped listening or are gone', async () => {
  // Issue 46 §6: the client's map of names with 'lost' listeners must not grow with the names a
  // process watched in turn.
  const c = await polylock.connect(REDIS);
  const prefix = nameFor(REDIS, 'listened');
  for (let i = 0; i < 1000; i++) {
    const sem = c.permitExpirableSemaphore(`${prefix}:${i}`);
    const first = () => {};
    sem.on('lost', first);
    sem.on('lost', () => {});
    sem.off('lost', first);
    assert.equal(c._permitSems.has(sem.name), true, 'still listening');
    sem.removeAllListeners('lost');
  }
  assert.equal(c._permitSems.size, 0, 'listeners removed: no name left');
  // Handles collected while they listen.
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  (() => {
    for (let i = 0; i < 1000; i++) c.permitExpirableSemaphore(`${prefix}:gone:${i}`).on('lost', () => {});
  })();
  assert.equal(c._permitSems.size, 1000);
  // Bounded: a collection, then a turn of the loop for the finalizers, at most 50 times.
  for (let i = 0; i < 50 && c._permitSems.size > 0; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(c._permitSems.size, 0, 'handles collected: no name left');
  // Two live handles of one name both hear a loss (the map kept only the newest one before).
  const name = `${prefix}:two`;
  const [a, b] = [c.permitExpirableSemaphore(name), c.permitExpirableSemaphore(name)];
  const heard = [];
  a.on('lost', (e) => heard.push(`a ${e.reason}`));
  b.on('lost', (e) => heard.push(`b ${e.reason}`));
  assert.equal(c._permitSems.size, 1);
  assert.equal(await a.trySetPermits(1), true);
  await a.acquire({ leaseMs: 200 });
  for (let i = 0; i < 100 && heard.length < 2; i++) await sleep(20);
  assert.deepEqual(heard.sort(), ['a EXPIRED', 'b EXPIRED']);
  await c.close();
});

test('redis: a killed holder\'s expiring permit comes back within its lease', async () => {
  const name = nameFor(REDIS, 'permits-kill');
  const script = `
    const p = require(${JSON.stringify(path.join(__dirname, '..'))});
    (async () => {
      const c = await p.connect(${JSON.stringify(REDIS)}, { watchdogTimeoutMs: 1000 });
      const s = c.permitExpirableSemaphore(${JSON.stringify(name)});
      await s.trySetPermits(1);
      await s.acquire();
      console.log('held');
      setInterval(() => {}, 1000);
    })();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve) => child.stdout.once('data', resolve));
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  const started = Date.now();
  const c = await polylock.connect(REDIS);
  const permit = await c.permitExpirableSemaphore(name).acquire({ waitMs: 5000 });
  const took = Date.now() - started;
  // At the 1 s lease's end, not at the 5 s wait's (which would give null).
  assert.ok(took < 4000, `back within its 1 s lease (took ${took} ms)`);
  await permit.release();
  await c.close();
});
