'use strict';
// polylock for Node.js: distributed locks on Redis (Redisson-compatible) and ZooKeeper
// (Curator-compatible). A thin wrapper over the native addon (src/lib.rs): it validates
// arguments, picks the owner (one per lock handle), and turns native outcomes into errors with a
// stable `code`. Nothing blocks the event loop: every call settles a Promise from polylock's own
// threads.

const { EventEmitter } = require('node:events');

const native = require('./native').load();

const asyncDispose = Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose');

/** Errors of polylock's error table; `code` is `ERR_POLYLOCK_<NAME>` (e.g. `ERR_POLYLOCK_NOT_OWNER`). */
class PolylockError extends Error {
  constructor(message, name) {
    super(message);
    this.name = 'PolylockError';
    this.code = `ERR_POLYLOCK_${name}`;
  }
}

function argError(Kind, message) {
  const e = new Kind(message);
  e.code = 'ERR_POLYLOCK_INVALID_ARGUMENT';
  return e;
}

const OK_TRUE = Object.freeze({ ok: true, value: true });
const OK_FALSE = Object.freeze({ ok: true, value: false });

/** A native answer as an outcome: the hot calls answer a plain boolean when they succeeded. */
function norm(outcome) {
  return typeof outcome === 'boolean' ? (outcome ? OK_TRUE : OK_FALSE) : outcome;
}

function check(answer) {
  const outcome = norm(answer);
  if (!outcome.ok) throw new PolylockError(outcome.message, outcome.code);
  return outcome;
}

/** Runs a synchronous native call, turning its `CODE\u0001message` errors into PolylockErrors
 * (a panic caught in native code is one: ERR_POLYLOCK_PANIC). */
function call(fn) {
  try {
    return fn();
  } catch (e) {
    const text = String(e && e.message);
    const at = text.indexOf('\u0001');
    if (at < 0) throw e;
    const name = text.slice(0, at);
    const message = text.slice(at + 1);
    if (name === 'INVALID_ARGUMENT') throw argError(RangeError, message);
    throw new PolylockError(message, name);
  }
}

function ms(value, what, { allowZero = false } = {}) {
  if (typeof value !== 'number' || Number.isNaN(value)) {
    throw argError(TypeError, `${what} must be a number of milliseconds, got ${typeof value}`);
  }
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    throw argError(RangeError, `${what} must be a ${allowZero ? 'non-negative' : 'positive'} finite number, got ${value}`);
  }
  return value;
}

function name(value, what) {
  if (typeof value !== 'string') throw argError(TypeError, `${what} must be a string, got ${typeof value}`);
  if (value.length === 0) throw argError(RangeError, `${what} must not be empty`);
  return value;
}

function checkSignal(signal) {
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw argError(TypeError, 'signal must be an AbortSignal');
  }
  signal?.throwIfAborted();
}

/** Runs a native waiting call with a CancelToken that `signal` aborts; rejects with the signal's
 * reason when it was aborted, with a PolylockError when the call failed. */
async function cancellable(signal, start) {
  checkSignal(signal);
  // A call without a signal needs no token (making one costs a native object per call).
  const token = signal ? call(() => new native.CancelToken()) : undefined;
  const onAbort = () => call(() => token.cancel());
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const outcome = norm(await call(() => start(token)));
    if (!outcome.ok && outcome.code === 'CANCELLED' && signal?.aborted) signal.throwIfAborted();
    return check(outcome);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

function options(value) {
  if (value === null || typeof value !== 'object') throw argError(TypeError, 'options must be an object');
  return value;
}

function waitOf(waitMs) {
  return waitMs === undefined || waitMs === null ? null : ms(waitMs, 'waitMs', { allowZero: true });
}

function leaseOf(leaseMs) {
  return leaseMs === undefined || leaseMs === null ? null : ms(leaseMs, 'leaseMs');
}

function permitsOf(value, what = 'permits') {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw argError(TypeError, `${what} must be a whole number, got ${typeof value === 'number' ? value : typeof value}`);
  }
  if (value < 1 || value > 2 ** 31 - 1) throw argError(RangeError, `${what} must be at least 1, got ${value}`);
  return value;
}

function timeoutError(what, waitMs) {
  return new PolylockError(`${what} not acquired within ${waitMs} ms`, 'TIMEOUT');
}

function durations(options) {
  if (options === null || typeof options !== 'object') throw argError(TypeError, 'options must be an object');
  const {
    watchdogTimeoutMs = 30000,
    connectTimeoutMs = 5000,
    commandTimeoutMs = 5000,
    sessionTimeoutMs = 10000,
    fairWaitTimeoutMs = 5000,
  } = options;
  return [
    ms(watchdogTimeoutMs, 'watchdogTimeoutMs'),
    ms(connectTimeoutMs, 'connectTimeoutMs'),
    ms(commandTimeoutMs, 'commandTimeoutMs'),
    ms(sessionTimeoutMs, 'sessionTimeoutMs'),
    ms(fairWaitTimeoutMs, 'fairWaitTimeoutMs'),
  ];
}

/**
 * Connect to `redis://[user:password@]host:port[/db]`, `rediss://...` or
 * `zk://[user:password@]host:port[,host:port...][/chroot]`.
 */
async function connect(url, options = {}) {
  name(url, 'url');
  const slot = call(() => new native.ClientSlot());
  check(await call(() => native.connect(url, durations(options), slot)));
  return new Client(call(() => slot.take()));
}

/**
 * A RedLock over 3 to 16 independent Redis masters (`redis://` or `rediss://` URLs of different
 * servers): its `lock(name)` is held while a majority of them hold it. A master that does not
 * answer now is tried again every second as long as a majority answers. Only `lock()` exists on
 * such a client. RedLock's safety rests on bounded process pauses and clock drift: read the
 * README's RedLock section, and prefer one Redis with replicas or ZooKeeper where you can.
 */
async function connectRedlock(urls, options = {}) {
  if (!Array.isArray(urls)) throw argError(TypeError, 'urls must be an array of URL strings');
  urls.forEach((u, i) => name(u, `urls[${i}]`));
  const slot = call(() => new native.ClientSlot());
  check(await call(() => native.connectRedlock(urls, durations(options), slot)));
  return new Client(call(() => slot.take()));
}

// Clients not closed yet. When the process (or a worker thread) exits they are closed, so that the
// server forgets their holds and waits now (a ZooKeeper session would keep its nodes until it timed
// out, and the next waiter would queue behind them). 'exit' runs no asynchronous work: the native
// close blocks this thread for the few round trips it takes.
// Weakly held: a client the program dropped is freed (and its connections closed) by the GC.
const openClients = new Map(); // client id -> WeakRef<Client>
let exitHooked = false;
function closeAtExit(client) {
  openClients.set(client.id, new WeakRef(client));
  if (exitHooked) return;
  exitHooked = true;
  process.once('exit', () => {
    for (const ref of openClients.values()) {
      const c = ref.deref();
      if (c && !c._closed) call(() => c._native.closeSync());
    }
    openClients.clear();
  });
}

class Client {
  constructor(nativeClient) {
    this._native = nativeClient;
    this._closed = false;
    closeAtExit(this);
    this._watched = new Map(); // owner -> WeakRef<Lock>
    this._watching = false;
  }

  /** This client's random id (the `<clientId>` part of stored owners). */
  get id() {
    return call(() => this._native.id);
  }

  get closed() {
    return this._closed;
  }

  /** A reentrant lock handle. The handle is the owner: acquiring twice through it re-enters. */
  lock(lockName) {
    name(lockName, 'name');
    return new Lock(this, call(() => this._native.lock(lockName, 'reentrant')));
  }

  /**
   * A fair lock: granted in the order of asking, across polylock and Redisson clients (Redisson's
   * RFairLock on Redis; a polylock waiter that stops asking is dropped from the queue after
   * `fairWaitTimeoutMs`, 5 s by default). On ZooKeeper every lock is fair: this is the ordinary
   * lock.
   */
  fairLock(lockName) {
    name(lockName, 'name');
    return new Lock(this, call(() => this._native.lock(lockName, 'fair')));
  }

  /** A non-reentrant ZooKeeper mutex (Curator's InterProcessSemaphoreMutex). */
  mutex(lockPath) {
    name(lockPath, 'path');
    return new Lock(this, call(() => this._native.lock(lockPath, 'mutex')));
  }

  /**
   * A read-write lock (Redisson's RReadWriteLock on Redis, Curator's InterProcessReadWriteLock on
   * ZooKeeper): `readLock()` and `writeLock()` are Locks. The read-write lock handle is the owner
   * of both halves, so its write half may take its read half (a downgrade).
   */
  readWriteLock(lockName) {
    name(lockName, 'name');
    return new ReadWriteLock(this, lockName);
  }

  /**
   * A semaphore (Redisson's RSemaphore on Redis: permits belong to nobody; Curator's
   * InterProcessSemaphoreV2 on ZooKeeper: permits are leases of this client, freed with its session).
   */
  semaphore(semName) {
    name(semName, 'name');
    return new Semaphore(call(() => this._native.semaphore(semName)));
  }

  /** A semaphore of expiring permits (Redisson's RPermitExpirableSemaphore; Redis only). */
  permitExpirableSemaphore(semName) {
    name(semName, 'name');
    return new PermitExpirableSemaphore(this, call(() => this._native.permitSemaphore(semName)));
  }

  /** A count-down latch (Redisson's RCountDownLatch on Redis, a SharedCount on ZooKeeper). */
  countDownLatch(latchName) {
    name(latchName, 'name');
    return new CountDownLatch(call(() => this._native.countDownLatch(latchName)));
  }

  /**
   * Run `fn(signal)` under the lock `lockName` (a fresh handle, so a fresh owner, per call) and
   * release it after: `lock.using` by name. `signal` aborts if the lock is lost meanwhile, and the
   * call then rejects with LOCK_LOST when `fn` returns.
   */
  async using(lockName, fn, options = {}) {
    return this.lock(lockName).using(fn, options);
  }

  /**
   * A function that runs `fn` under a lock: `lockName` is a name, or a function of the call's
   * arguments that returns one (`(orderId) => \`order:${orderId}\``). The wrapped function
   * takes `fn`'s arguments and returns a Promise of its result; `fn` gets the arguments and then
   * the AbortSignal that fires when the lock is lost. `options` as for `acquire` (`waitMs`,
   * `leaseMs`); a wait that runs out rejects with TIMEOUT.
   */
  withLock(lockName, fn, options = {}) {
    if (typeof lockName !== 'string' && typeof lockName !== 'function') {
      throw argError(TypeError, 'lockName must be a string or a function of the arguments');
    }
    if (typeof lockName === 'string') name(lockName, 'name');
    if (typeof fn !== 'function') throw argError(TypeError, 'fn must be a function');
    const client = this;
    return async function withLock(...args) {
      const key = typeof lockName === 'function' ? lockName(...args) : lockName;
      name(key, 'the name lockName returned');
      return client.lock(key).using((signal) => fn.call(this, ...args, signal), options);
    };
  }

  /** Release every lock this client still holds and close it. Idempotent. */
  async close() {
    this._closed = true;
    openClients.delete(this.id);
    check(await call(() => this._native.close()));
  }

  /** Send the lost events of `lock`'s owner on locks of `kind` (default: its own) to `lock`. */
  _watch(lock, kind = lock.kind) {
    const key = kind === 'permit' ? `permit:${lock.name}` : `${lock._owner}:${kind}`;
    this._watched.set(key, new WeakRef(lock));
    if (this._watching) return;
    this._watching = true;
    // One weak callback for the whole client: it never keeps the process alive by itself.
    call(() => this._native.watchLost((event) => {
      const key = event.kind === 'permit' ? `permit:${event.name}` : `${event.owner}:${event.kind}`;
      const lock = this._watched.get(key)?.deref();
      if (!lock) return;
      lock._holds = 0;
      lock.emit('lost', { name: event.name, reason: event.reason });
    }));
  }
}

class Lock extends EventEmitter {
  constructor(client, nativeLock, owner = call(() => native.freshOwner())) {
    super();
    this._client = client;
    this._native = nativeLock;
    this._owner = owner;
    this._holds = 0;
    this.on('newListener', (event) => {
      if (event === 'lost') this._watchLost();
    });
  }

  _watchLost() {
    this._client._watch(this);
  }

  get name() {
    return call(() => this._native.name);
  }

  /** `reentrant`, `mutex`, `read`, `write`, `fair`, or `multi`. */
  get kind() {
    return call(() => this._native.kind);
  }

  /** How many times this handle holds the lock. */
  get holdCount() {
    return this._holds;
  }

  /** The fencing token of this handle's hold, or null. */
  get fencingToken() {
    return call(() => this._native.fencingToken(this._owner)) ?? null;
  }

  /** True if this handle's hold was lost and not yet released. */
  get isLost() {
    return call(() => this._native.isLost(this._owner));
  }

  /**
   * Acquire (or re-enter). Resolves true when held, false when `waitMs` ran out (`waitMs`
   * omitted: wait until acquired; 0: one try). `leaseMs`: the lock expires after it, no
   * watchdog. `signal`: aborting it cancels the wait and rejects with its reason (an AbortError).
   */
  async acquire(opts = {}) {
    const { waitMs, leaseMs, signal } = options(opts);
    const wait = waitOf(waitMs);
    const lease = leaseOf(leaseMs);
    const outcome = await cancellable(signal, (token) => this._native.acquire(this._owner, wait, lease, token));
    if (outcome.value) this._holds += 1;
    return outcome.value;
  }

  /** Release one hold. ERR_POLYLOCK_NOT_OWNER if this handle holds nothing. */
  async release() {
    const outcome = norm(await call(() => this._native.release(this._owner)));
    if (!outcome.ok && (outcome.code === 'LOCK_LOST' || outcome.code === 'NOT_OWNER')) this._holds = 0;
    check(outcome);
    this._holds = Math.max(0, this._holds - 1);
  }

  /**
   * Acquire, run `fn(signal)`, release. `signal` aborts if the lock is lost meanwhile. Rejects
   * with ERR_POLYLOCK_TIMEOUT if `waitMs` ran out.
   */
  async using(fn, options = {}) {
    if (typeof fn !== 'function') throw argError(TypeError, 'fn must be a function');
    if (!(await this.acquire(options))) {
      throw new PolylockError(`lock '${this.name}' not acquired within ${options.waitMs} ms`, 'TIMEOUT');
    }
    // While the work runs the process stays alive (a 'lost' listener alone never keeps it so).
    const keepAlive = setInterval(() => {}, 1 << 30);
    const controller = new AbortController();
    const onLost = (event) =>
      controller.abort(new PolylockError(`lock '${this.name}' was lost (${event.reason})`, 'LOCK_LOST'));
    this.on('lost', onLost);
    try {
      if (this.isLost) onLost({ reason: 'lost before the work started' });
      return await fn(controller.signal);
    } finally {
      clearInterval(keepAlive);
      this.off('lost', onLost);
      await this.release();
    }
  }

  /** Acquire and return a disposable hold: `await using held = await lock.hold();`. */
  async hold(options = {}) {
    if (!(await this.acquire(options))) {
      throw new PolylockError(`lock '${this.name}' not acquired within ${options.waitMs} ms`, 'TIMEOUT');
    }
    let released = false;
    const release = async () => {
      if (released) return;
      released = true;
      await this.release();
    };
    return { fencingToken: this.fencingToken, release, [asyncDispose]: release };
  }

  /** Whether anybody holds the lock (asks the server). */
  async isLocked() {
    return check(await call(() => this._native.isLocked())).value;
  }

  /** Free the lock whoever holds it (Redisson's forceUnlock); true if it was held. */
  async forceUnlock() {
    return check(await call(() => this._native.forceUnlock())).value;
  }

  /** Remaining lease of the holder in ms, or null if free or without a lease (ZooKeeper). */
  async remainingLeaseMs() {
    const o = check(await call(() => this._native.remainingLease()));
    return o.value ? o.number : null;
  }
}

/**
 * All of several locks or none (Redisson's RedissonMultiLock, Curator's InterProcessMultiLock),
 * even from different clients and servers: `new MultiLock([redisLock, zkLock])`. A Lock: acquire
 * takes every member within the one `waitMs` or gives back what it took and resolves false;
 * release gives back all. Members are taken in one order (by name, then server, then kind) whatever
 * order they are given in, so multi-locks over overlapping sets never deadlock. The multi-lock
 * handle is the owner of its members' holds (not the member handles); `fencingTokens` lists each
 * member's token, `fencingToken` is the largest. 'lost' fires when any member's hold is lost.
 */
class MultiLock extends Lock {
  constructor(locks) {
    if (!Array.isArray(locks)) throw argError(TypeError, 'MultiLock takes an array of locks');
    locks.forEach((l, i) => {
      if (!(l instanceof Lock)) throw argError(TypeError, `locks[${i}] is not a polylock Lock`);
    });
    const builder = call(() => new native.MultiLockBuilder());
    for (const l of locks) call(() => builder.add(l._native));
    super(null, call(() => builder.build()));
    this._members = [...locks];
  }

  /** The locks, as given. */
  get members() {
    return [...this._members];
  }

  /** Each member's fencing token for this handle's hold (null where it holds none). */
  get fencingTokens() {
    return this._members.map((m) => call(() => m._native.fencingToken(this._owner)) ?? null);
  }

  _watchLost() {
    for (const m of this._members) m._client._watch(this, m.kind);
  }
}

/**
 * Many readers or one writer. Both halves are Locks with one owner, this handle: its write half
 * may take its read half and keep it after releasing the write half (a downgrade); its read half
 * asking for the write half rejects at once with ERR_POLYLOCK_UPGRADE_NOT_SUPPORTED (Redisson and
 * Curator would wait forever). Another owner is another `client.readWriteLock(name)`.
 */
class ReadWriteLock {
  constructor(client, lockName) {
    const owner = call(() => native.freshOwner());
    this._read = new Lock(client, call(() => client._native.lock(lockName, 'read')), owner);
    this._write = new Lock(client, call(() => client._native.lock(lockName, 'write')), owner);
  }

  get name() {
    return this._read.name;
  }

  /** The read half: shared by any number of owners while nobody writes. */
  readLock() {
    return this._read;
  }

  /** The write half: exclusive of readers and other writers. */
  writeLock() {
    return this._write;
  }
}

/** Makes a taken thing disposable: `release()` once, also as `Symbol.asyncDispose`. */
function releasable(props, giveBack) {
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await giveBack();
  };
  return { ...props, release, [asyncDispose]: release };
}

/**
 * A semaphore. On Redis permits belong to nobody: any caller may release them, and a crashed
 * holder's permits are not given back (use `permitExpirableSemaphore`). On ZooKeeper the permits
 * taken are leases of this client: only it releases them, and a lost session frees them.
 */
class Semaphore {
  constructor(nativeSemaphore) {
    this._native = nativeSemaphore;
  }

  get name() {
    return call(() => this._native.name);
  }

  /** Set the number of permits if nobody set it yet; true if this call did. */
  async trySetPermits(permits) {
    if (!Number.isInteger(permits) || permits < 0 || permits > 2 ** 31 - 1) {
      throw argError(RangeError, `permits must be a whole number from 0, got ${permits}`);
    }
    return check(await call(() => this._native.trySetPermits(permits))).value;
  }

  /** Add permits, or take free ones away with a negative delta. */
  async addPermits(delta) {
    if (!Number.isInteger(delta) || Math.abs(delta) > 2 ** 31 - 1) {
      throw argError(RangeError, `delta must be a whole number, got ${delta}`);
    }
    check(await call(() => this._native.addPermits(delta)));
  }

  /**
   * Take `permits` permits (default 1). Resolves a permit you `release()` (or dispose); rejects with
   * ERR_POLYLOCK_TIMEOUT when `waitMs` ran out, with the signal's reason when aborted.
   */
  async acquire(opts = {}) {
    const { permits = 1, waitMs, signal } = options(opts);
    const n = permitsOf(permits);
    const wait = waitOf(waitMs);
    const outcome = await cancellable(signal, (token) => this._native.acquire(n, wait, token));
    if (!outcome.value) throw timeoutError(`${n} permits of semaphore '${this.name}'`, waitMs);
    return releasable({ permits: n }, () => this.release(n));
  }

  /** Give back `permits` permits (default 1). */
  async release(permits = 1) {
    check(await call(() => this._native.release(permitsOf(permits))));
  }

  /** The permits free now. */
  async availablePermits() {
    return check(await call(() => this._native.availablePermits())).number;
  }

  /** Take every permit free now; how many. */
  async drainPermits() {
    return check(await call(() => this._native.drainPermits())).number;
  }
}

/**
 * A semaphore of expiring permits (Redis): each permit has an id and a lease, so a crashed
 * holder's permits come back when their lease ends. Without `leaseMs` the watchdog renews a
 * permit while the client lives; a permit lost anyway emits 'lost'.
 */
class PermitExpirableSemaphore extends EventEmitter {
  constructor(client, nativeSemaphore) {
    super();
    this._native = nativeSemaphore;
    this.on('newListener', (event) => {
      if (event === 'lost') client._watch(this);
    });
  }

  get name() {
    return call(() => this._native.name);
  }

  get kind() {
    return 'permit';
  }

  async trySetPermits(permits) {
    if (!Number.isInteger(permits) || permits < 0 || permits > 2 ** 31 - 1) {
      throw argError(RangeError, `permits must be a whole number from 0, got ${permits}`);
    }
    return check(await call(() => this._native.trySetPermits(permits))).value;
  }

  async addPermits(delta) {
    if (!Number.isInteger(delta) || Math.abs(delta) > 2 ** 31 - 1) {
      throw argError(RangeError, `delta must be a whole number, got ${delta}`);
    }
    check(await call(() => this._native.addPermits(delta)));
  }

  /**
   * Take one permit: resolves `{ id, release() }` (disposable); rejects with ERR_POLYLOCK_TIMEOUT
   * when `waitMs` ran out.
   */
  async acquire(opts = {}) {
    const { waitMs, leaseMs, signal } = options(opts);
    const wait = waitOf(waitMs);
    const lease = leaseOf(leaseMs);
    const outcome = await cancellable(signal, (token) => this._native.acquire(wait, lease, token));
    if (!outcome.text) throw timeoutError(`a permit of semaphore '${this.name}'`, waitMs);
    const id = outcome.text;
    return releasable({ id }, () => this.release(id));
  }

  /** Give back the permit `id`: ERR_POLYLOCK_NOT_OWNER if there is no such permit,
   * ERR_POLYLOCK_LOCK_LOST if its lease had run out (counted back all the same). */
  async release(id) {
    name(id, 'id');
    check(await call(() => this._native.release(id)));
  }

  /** Redisson's tryRelease: true if the permit was there. */
  async tryRelease(id) {
    name(id, 'id');
    return check(await call(() => this._native.tryRelease(id))).value;
  }

  async availablePermits() {
    return check(await call(() => this._native.availablePermits())).number;
  }
}

/** A count-down latch: waiters wake when the count reaches zero. */
class CountDownLatch {
  constructor(nativeLatch) {
    this._native = nativeLatch;
  }

  get name() {
    return call(() => this._native.name);
  }

  /** Set the count (at least 1) if the latch is not counting; true if this call did. */
  async trySetCount(count) {
    return check(await call(() => this._native.trySetCount(count))).value;
  }

  async countDown() {
    check(await call(() => this._native.countDown()));
  }

  /** The count now (0 when open). */
  async count() {
    return check(await call(() => this._native.count())).number;
  }

  /** Wait until the count is zero: true when open, false when `waitMs` ran out. */
  async wait(opts = {}) {
    const { waitMs, signal } = options(opts);
    const wait = waitOf(waitMs);
    return (await cancellable(signal, (token) => this._native.wait(wait, token))).value;
  }

  /** Delete the latch (it opens); true if it was counting. */
  async delete() {
    return check(await call(() => this._native.delete())).value;
  }
}

module.exports = {
  connect,
  connectRedlock,
  Client,
  Lock,
  MultiLock,
  ReadWriteLock,
  Semaphore,
  PermitExpirableSemaphore,
  CountDownLatch,
  PolylockError,
  version: call(() => native.version()),
  /** The driver of this thread's calls: 'loop' (Redis I/O on Node's own event loop) or 'runtime'. */
  driver: () => call(() => native.driverName()),
};

// TEST ONLY, not API (not enumerable, not in index.d.ts): a native call that panics where `at`
// says ('sync', 'poll', 'callback'), for test/panic.test.js; it rejects with ERR_POLYLOCK_PANIC.
Object.defineProperty(module.exports, '__testPanic', {
  enumerable: false,
  value: async (at) => check(await call(() => native.__testPanic(at))),
});
