'use strict';
// The shapes of the contract every runtime shares (docs/src/contract.md), as Node says them:
// "not acquired" is null for every acquire, section forms reject with LockTimeoutError, every
// error has its class, its code and its number, the remaining lease has three answers, lost
// events carry kind and reason, holds extend, and the client says whether it is suspended. The
// conformance suite (conformance/runners/node) runs the same scenarios as every other runtime.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const polylock = require('..');

const REDIS = process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379';
const ZK = process.env.POLYLOCK_ZK_URL || 'zk://127.0.0.1:2181';
const unique = (p) => `polylock-node:${p}:${randomUUID()}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const { newFlow } = polylock;

test('not acquired is null for a lock, a semaphore and an expiring permit alike', async () => {
  const c = await polylock.connect(REDIS);
  const lock = c.lock(unique('na'));
  const held = await lock.acquire();
  assert.equal(await newFlow(() => lock.acquire({ waitMs: 100 })), null);
  const sem = c.semaphore(unique('na-sem'));
  await sem.trySetPermits(1);
  const taken = await sem.acquire({ waitMs: 0 });
  assert.ok(taken);
  assert.equal(await sem.acquire({ waitMs: 100 }), null);
  const pes = c.permitExpirableSemaphore(unique('na-pes'));
  await pes.trySetPermits(1);
  const permit = await pes.acquire({ waitMs: 0 });
  assert.match(permit.id, /^[0-9a-f]{32}$/);
  assert.equal(await pes.acquire({ waitMs: 100 }), null);
  await Promise.all([held.release(), taken.release(), permit.release()]);
  await c.close();
});

test('section forms reject with LockTimeoutError, a PolylockError with code and number', async () => {
  const c = await polylock.connect(REDIS);
  const name = unique('section');
  const held = await c.lock(name).acquire();
  const isTimeout = (e) =>
    e instanceof polylock.LockTimeoutError &&
    e instanceof polylock.PolylockError &&
    e.code === 'ERR_POLYLOCK_TIMEOUT' &&
    e.number === 3;
  await assert.rejects(newFlow(() => c.lock(name).using(() => 'ran', { waitMs: 100 })), isTimeout);
  await assert.rejects(newFlow(() => c.withLock(name, () => 'ran', { waitMs: 100 })()), isTimeout);
  await assert.rejects(newFlow(() => c.lock(name).hold({ waitMs: 100 })), isTimeout);
  await held.release();
  assert.equal(await newFlow(() => c.lock(name).using(() => 'ran', { waitMs: 100 })), 'ran');
  await c.close();
});

test('every kind has its error class, its code and its number', async () => {
  const table = polylock.errorNumbers;
  assert.deepEqual(Object.values(table), Array.from({ length: 16 }, (_, i) => i + 1));
  const classes = {
    TIMEOUT: polylock.LockTimeoutError,
    NOT_OWNER: polylock.NotOwnerError,
    LOCK_LOST: polylock.LockLostError,
    CONNECTION: polylock.PolylockConnectionError,
    AUTH: polylock.AuthError,
    BACKEND: polylock.BackendError,
    INVALID_STATE: polylock.InvalidStateError,
    INTERNAL: polylock.InternalError,
    PANIC: polylock.PanicError,
    CANCELLED: polylock.OperationCancelledError,
    UNSUPPORTED: polylock.UnsupportedError,
    UPGRADE_NOT_SUPPORTED: polylock.UpgradeNotSupportedError,
    NOT_REPLICATED: polylock.NotReplicatedError,
    STALE_TOKEN: polylock.StaleTokenError,
  };
  for (const [name, cls] of Object.entries(classes)) {
    const e = new cls('x');
    assert.ok(e instanceof polylock.PolylockError && e instanceof Error, name);
    assert.equal(e.code, `ERR_POLYLOCK_${name}`);
    assert.equal(e.number, table[name]);
    assert.equal(e.name, cls.name);
  }
  const c = await polylock.connect(REDIS);
  await assert.rejects(c.lock(unique('no')).release(), (e) => e instanceof polylock.NotOwnerError && e.number === 4);
  assert.throws(() => c.mutex(unique('m')), (e) => e instanceof polylock.UnsupportedError && e.number === 13);
  await assert.rejects(
    polylock.connect('nosuch://127.0.0.1:1'),
    (e) => e instanceof RangeError && e.code === 'ERR_POLYLOCK_INVALID_ARGUMENT' && e.number === 2 && e.message.includes('docs/src/contract.md#urls'),
  );
  await c.close();
});

test('the remaining lease has three answers: null, Infinity, ms', async () => {
  const c = await polylock.connect(REDIS);
  const lock = c.lock(unique('lease'));
  assert.equal(await lock.remainingLeaseMs(), null);
  const held = await lock.acquire();
  const left = await lock.remainingLeaseMs();
  assert.ok(left > 0 && left <= 30000, `${left}`);
  await held.release();
  const zk = await polylock.connect(ZK);
  const zl = zk.lock(`/polylock-node/lease-${randomUUID()}`);
  assert.equal(await zl.remainingLeaseMs(), null);
  const zh = await zl.acquire();
  assert.equal(await zl.remainingLeaseMs(), Infinity);
  await zh.release();
  await Promise.all([c.close(), zk.close()]);
});

test('lost events carry the kind and the reason; extend(ms) moves a fixed lease; suspended', async () => {
  const c = await polylock.connect(REDIS, { watchdogTimeoutMs: 900 });
  assert.equal(c.suspended, false);
  const rw = c.readWriteLock(unique('lost'));
  const seen = [];
  const held = await rw.writeLock().acquire();
  rw.writeLock().on('lost', (ev) => seen.push(ev));
  const admin = await polylock.connect(REDIS);
  assert.equal(await admin.readWriteLock(rw.name).writeLock().forceUnlock(), true);
  for (let i = 0; i < 300 && seen.length === 0; i++) await sleep(20);
  assert.deepEqual(seen.map(({ name, kind, reason }) => [name, kind, reason]), [[rw.name, 'write', 'DELETED']]);
  assert.equal(held.lostReason, 'DELETED');
  await assert.rejects(held.release(), (e) => e instanceof polylock.LockLostError);

  const lock = c.lock(unique('extend'));
  await assert.rejects(lock.extend(1000), (e) => e instanceof polylock.NotOwnerError);
  const kept = await lock.acquire();
  await assert.rejects(kept.extend(1000), (e) => e instanceof polylock.InvalidStateError);
  await kept.release();
  const leased = await lock.acquire({ leaseMs: 400 });
  assert.equal(await leased.extend(3000), leased);
  await sleep(700);
  assert.equal(leased.isLost, false);
  assert.equal(await newFlow(() => lock.acquire({ waitMs: 0 })), null);
  const left = await lock.remainingLeaseMs();
  assert.ok(left > 1500 && left <= 3000, `${left}`);
  await leased.release();
  await assert.rejects(leased.extend(1000), (e) => e instanceof polylock.NotOwnerError);
  await Promise.all([c.close(), admin.close()]);
  assert.equal(c.suspended, false);
});
