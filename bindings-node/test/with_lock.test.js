'use strict';
// client.withLock and client.using, against the real Redis (scripts/servers.sh starts it).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const polylock = require('..');

const REDIS = process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379';
const unique = (p) => `polylock-node:${p}:${randomUUID()}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('withLock names the lock from the arguments; one key excludes, two keys do not', async () => {
  const c = await polylock.connect(REDIS);
  const base = unique('order');
  let inside = 0;
  let most = 0;
  const pay = c.withLock(
    (orderId) => `${base}:${orderId}`,
    async (orderId, amount, signal) => {
      assert.ok(signal instanceof AbortSignal);
      inside += 1;
      most = Math.max(most, inside);
      await sleep(20);
      inside -= 1;
      return `${orderId}:${amount}`;
    },
  );
  const same = await Promise.all([1, 2, 3, 4].map((n) => pay('a', n)));
  assert.deepEqual(same, ['a:1', 'a:2', 'a:3', 'a:4']);
  assert.equal(most, 1, 'calls with one key never ran together');
  most = 0;
  await Promise.all(['x', 'y'].map((id) => pay(id, 1)));
  assert.equal(most, 2, 'calls with different keys ran together');
  assert.equal(await c.lock(`${base}:a`).isLocked(), false, 'released after the calls');
  // An exception inside releases the lock and reaches the caller.
  const boom = c.withLock(base, async () => {
    throw new Error('boom');
  });
  await assert.rejects(boom(), /boom/);
  assert.equal(await c.lock(base).isLocked(), false);
  // A bounded wait against another holder rejects with TIMEOUT without running fn.
  const other = c.lock(base);
  const held = await polylock.newFlow(() => other.acquire());
  assert.ok(held);
  let ran = false;
  const bounded = c.withLock(base, () => { ran = true; }, { waitMs: 100 });
  await assert.rejects(bounded(), (e) => e instanceof polylock.PolylockError && /TIMEOUT/.test(e.code));
  assert.equal(ran, false);
  await held.release();
  // Bad input is refused when the function is made.
  assert.throws(() => c.withLock(42, () => {}), TypeError);
  assert.throws(() => c.withLock('', () => {}), RangeError);
  assert.throws(() => c.withLock('x', 'not a function'), TypeError);
  await c.close();
});

test('client.using: the signal aborts on a loss and the call rejects with LOCK_LOST', async () => {
  const c = await polylock.connect(REDIS, { watchdogTimeoutMs: 600 });
  const admin = await polylock.connect(REDIS);
  const key = unique('using');
  let aborted = null;
  await assert.rejects(
    c.using(key, async (signal) => {
      assert.equal(await admin.lock(key).forceUnlock(), true);
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      aborted = signal.reason;
      return 'done';
    }),
    (e) => e instanceof polylock.PolylockError && /LOCK_LOST/.test(e.code),
  );
  assert.ok(aborted instanceof polylock.PolylockError, 'the signal carried the loss');
  await admin.close();
  await c.close();
});
