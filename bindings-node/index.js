'use strict';
// polylock for Node.js: distributed locks on Redis (Redisson-compatible) and ZooKeeper
// (Curator-compatible). A thin wrapper over the native addon (src/lib.rs): it validates
// arguments, picks the owner (the async call chain: see "Owners" below), and turns native
// outcomes into errors with a stable `code`. Nothing blocks the event loop: every call settles a
// Promise from polylock's own threads.

const { AsyncLocalStorage } = require('node:async_hooks');
const { EventEmitter } = require('node:events');
const { createRequire } = require('node:module');
const path = require('node:path');
const util = require('node:util');

const native = require('./native').load();

const asyncDispose = Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose');

// BEGIN generated from core/api/errors.toml (numbers) by `python3 scripts/gen-bindings.py`: do not edit
// The one error table of polylock's core (core/api/errors.toml): each kind's stable number.
const NUMBERS = Object.freeze({
  NULL_PARAMETER: 1,
  INVALID_ARGUMENT: 2,
  TIMEOUT: 3,
  NOT_OWNER: 4,
  LOCK_LOST: 5,
  CONNECTION: 6,
  AUTH: 7,
  BACKEND: 8,
  INVALID_STATE: 9,
  INTERNAL: 10,
  PANIC: 11,
  CANCELLED: 12,
  UNSUPPORTED: 13,
  UPGRADE_NOT_SUPPORTED: 14,
  NOT_REPLICATED: 15,
  STALE_TOKEN: 16,
});
// END generated (errors, numbers)

/**
 * Errors of polylock's error table: `code` is `ERR_POLYLOCK_<NAME>` (e.g.
 * `ERR_POLYLOCK_NOT_OWNER`, a string as Node's own error codes are), `number` the kind's stable
 * number in the table (4). Each kind has a subclass (`LockTimeoutError`, `NotOwnerError`, ...).
 */
class PolylockError extends Error {
  constructor(message, name = 'INTERNAL') {
    super(message);
    this.name = 'PolylockError';
    this.code = `ERR_POLYLOCK_${name}`;
    this.number = NUMBERS[name] ?? NUMBERS.INTERNAL;
  }
}

/** The one class of each kind (INVALID_ARGUMENT: a TypeError or RangeError, see argError). */
const ERROR_CLASSES = {};
function kindClass(className, name) {
  const cls = {
    [className]: class extends PolylockError {
      constructor(message) {
        super(message, name);
        this.name = className;
      }
    },
  }[className];
  ERROR_CLASSES[name] = cls;
  return cls;
}
// BEGIN generated from core/api/errors.toml (classes) by `python3 scripts/gen-bindings.py`: do not edit
const LockTimeoutError = kindClass('LockTimeoutError', 'TIMEOUT');
const NotOwnerError = kindClass('NotOwnerError', 'NOT_OWNER');
const LockLostError = kindClass('LockLostError', 'LOCK_LOST');
const PolylockConnectionError = kindClass('PolylockConnectionError', 'CONNECTION');
const AuthError = kindClass('AuthError', 'AUTH');
const BackendError = kindClass('BackendError', 'BACKEND');
const InvalidStateError = kindClass('InvalidStateError', 'INVALID_STATE');
const InternalError = kindClass('InternalError', 'INTERNAL');
const PanicError = kindClass('PanicError', 'PANIC');
const OperationCancelledError = kindClass('OperationCancelledError', 'CANCELLED');
const UnsupportedError = kindClass('UnsupportedError', 'UNSUPPORTED');
const UpgradeNotSupportedError = kindClass('UpgradeNotSupportedError', 'UPGRADE_NOT_SUPPORTED');
const NotReplicatedError = kindClass('NotReplicatedError', 'NOT_REPLICATED');
const StaleTokenError = kindClass('StaleTokenError', 'STALE_TOKEN');
// END generated (errors, classes)

/** The error of kind `name` (`NOT_OWNER`, ...): its subclass, or a PolylockError. */
function makeError(name, message) {
  if (name === 'INVALID_ARGUMENT') return argError(RangeError, message);
  const cls = ERROR_CLASSES[name];
  return cls ? new cls(message) : new PolylockError(message, name);
}

/** A bad argument: the TypeError or RangeError a Node API throws, with polylock's code and number. */
function argError(Kind, message) {
  const e = new Kind(message);
  e.code = 'ERR_POLYLOCK_INVALID_ARGUMENT';
  e.number = NUMBERS.INVALID_ARGUMENT;
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
  if (!outcome.ok) throw makeError(outcome.code, outcome.message);
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
    throw makeError(name, message);
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

/** The runtime operators see next to this process's holds (`polylock status`). */
const RUNTIME = process.versions.bun ? `bun ${process.versions.bun}` : `node ${process.versions.node}`;

/** The connect options that are not durations: `service`, `metricNames`. */
function extra(options) {
  const { service, metricNames } = options;
  if (service !== undefined && service !== null) name(service, 'service');
  if (metricNames !== undefined && metricNames !== null) {
    if (!Array.isArray(metricNames)) throw argError(TypeError, 'metricNames must be an array of glob strings');
    metricNames.forEach((g, i) => name(g, `metricNames[${i}]`));
  }
  return { service: service ?? undefined, metricNames: metricNames ? [...metricNames] : undefined, runtime: RUNTIME };
}

/**
 * Connect to a lock server: `redis://[user:password@]host:port[/db]`, `rediss://...`,
 * `redis+sentinel://...`, `redis+cluster://...`, `zk://host:port[,...][/chroot]`, `zks://...`,
 * `etcd://...`, `mysql://...` or `postgres://...`. Every form with its options: the URL table in
 * docs/src/contract.md#urls.
 */
async function connect(url, options = {}) {
  name(url, 'url');
  const slot = call(() => new native.ClientSlot());
  check(await call(() => native.connect(url, durations(options), extra(options), slot)));
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
  check(await call(() => native.connectRedlock(urls, durations(options), extra(options), slot)));
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

// Owners. An acquisition's owner is the async call chain it runs in, as an asyncio task is in
// Python and a thread in Java: Node's async call chain is what AsyncLocalStorage follows. The
// chain carries the sections it runs inside (`sections`: a list of nodes, innermost first, each
// one acquisition). Inside a section of a lock (a `using`/`withLock` callback, or the code after
// `await lock.acquire()` until the release), acquiring that lock again re-enters: it takes the
// section's owner, and the core counts one more hold. Anywhere else an acquisition takes a fresh
// owner, so two flows that did not start inside each other's section exclude each other, even
// on one shared handle, and `Promise.all([lock.using(f), lock.using(g)])` runs f, then g.
//
// A section is visible to what starts inside it (awaits, callbacks, timers) while it is held.
// `using` runs its callback in a node of its own (AsyncLocalStorage.run); a bare `acquire` opens
// its node in the calling context (enterWith), which is the caller's next steps: Node gives that
// context also to whatever the same synchronous code starts after the call (`Promise.all([a(),
// b()])` where `a` begins with `await lock.acquire()`). Such a sibling is not inside the section
// while the acquisition waits (a node joins the list only once held, and a list never takes in a
// node that waits), which covers the flows that begin by acquiring; one that asks for the lock
// only later, after `a` got it, would re-enter it. The README says so and points to `using`,
// `withLock` and `newFlow`, which give each flow its own context.

/** The context's sections: `{ hold, up }`, innermost first. */
const sections = new AsyncLocalStorage();

const PENDING = 0; // asked for, not granted (yet)
const HELD = 1; // granted, not released
const RELEASING = 2; // its release is under way
const DONE = 3; // released, lost and released, or never granted

/** The hold of the node that starts a new flow: no acquisition. */
const NO_HOLD = Object.freeze({ _state: DONE, _keys: [], _lock: null });

/** The nearest node at or above `node` whose acquisition is held: what a new node hangs under. */
function heldFrom(node) {
  while (node && node.hold._state !== HELD) node = node.up;
  return node;
}

/** The innermost held acquisition of this context that lets `key` re-enter, or null. */
function sectionOf(key) {
  for (let n = sections.getStore(); n; n = n.up) {
    const h = n.hold;
    if (h._state === HELD && h._keys.includes(key)) return h;
  }
  return null;
}

/**
 * Run `fn()` as a flow of its own: no section of the calling flow is visible inside it, so its
 * acquisitions take fresh owners and exclude the caller's (what starting an asyncio task or a
 * thread is in Python and Java). Returns what `fn` returns.
 */
function newFlow(fn) {
  if (typeof fn !== 'function') throw argError(TypeError, 'fn must be a function');
  // A store of its own, never `undefined`: AsyncLocalStorage#run calls straight through when the
  // store is already the current one, and an acquire inside would then open its section in the
  // caller's context.
  return sections.run({ hold: NO_HOLD, up: null }, fn);
}

class Client {
  constructor(nativeClient) {
    this._native = nativeClient;
    this._id = call(() => nativeClient.id);
    this._closed = false;
    closeAtExit(this);
    // `${owner}:${kind}:${name}` -> the held acquisitions of that owner (lost events name it).
    this._holds = new Map();
    // name -> the WeakRefs of the PermitExpirableSemaphore handles of that name with 'lost'
    // listeners. A name's entry goes with its last such handle (its listeners removed, or the
    // handle collected): a process that watches many names in turn keeps only the live ones.
    this._permitSems = new Map();
    this._permitSemsGone = new FinalizationRegistry(({ semName, ref }) => this._unlistenPermits(semName, ref));
    this._watching = false;
  }

  /** This client's random id (the `<clientId>` part of stored owners). */
  get id() {
    return this._id;
  }

  get closed() {
    return this._closed;
  }

  /** True while the connection to ZooKeeper (or etcd) is down but the session may live: holds
   * stay held, nothing can be acquired or released until it is back. Always false elsewhere. */
  get suspended() {
    return !this._closed && call(() => this._native.suspended);
  }

  /**
   * A reentrant lock handle. Its owner is the flow (async call chain) that acquires: inside a
   * section of the lock, acquiring it again re-enters; other flows wait, even on this handle.
   */
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
   * ZooKeeper): `readLock()` and `writeLock()` are Locks of one owner per flow, so inside a
   * section of the write half the read half re-enters (a downgrade).
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

  /**
   * A candidate in the leader election `electionName` that campaigns as `identity` (Curator's
   * LeaderLatch on ZooKeeper, etcd's concurrency.Election, a Redisson lock plus a leader record
   * on Redis).
   */
  election(electionName, identity) {
    name(electionName, 'name');
    name(identity, 'identity');
    return new Election(call(() => this._native.election(electionName, identity)));
  }

  /** A count-down latch (Redisson's RCountDownLatch on Redis, a SharedCount on ZooKeeper). */
  countDownLatch(latchName) {
    name(latchName, 'name');
    return new CountDownLatch(call(() => this._native.countDownLatch(latchName)));
  }

  /**
   * The fence of `fenceName` on the lock server's own Redis: fenced writes of Redis commands under
   * a lock's fencing token (UnsupportedError on ZooKeeper, etcd, SQL and RedLock, whose data is
   * fenced by `fence.sql` in the application's own transaction).
   */
  fence(fenceName) {
    name(fenceName, 'name');
    return new Fence(call(() => this._native.fence(fenceName)));
  }

  /**
   * Run `commands` (each an array: the command's name, then its arguments) through the fence of
   * `fenceName` under `token`, the fencing token of the hold the write is made under: their
   * replies, or a StaleTokenError with nothing run when a later holder already wrote.
   */
  async fencedWrite(fenceName, token, commands) {
    return this.fence(fenceName).write(token, commands);
  }

  /**
   * Run `fn(signal)` under the lock `lockName` and release it after: `lock.using` by name (a
   * section of its own; inside a section of the same lock it re-enters). `signal` aborts if the
   * lock is lost meanwhile, and the call then rejects with LOCK_LOST when `fn` returns.
   */
  async using(lockName, fn, options = {}) {
    return this.lock(lockName).using(fn, options);
  }

  /**
   * A function that runs `fn` under a lock: `lockName` is a name, or a function of the call's
   * arguments that returns one (`(orderId) => \`order:${orderId}\``). The wrapped function
   * takes `fn`'s arguments and returns a Promise of its result; `fn` gets the arguments and then
   * the AbortSignal that fires when the lock is lost. `options` as for `acquire` (`waitMs`,
   * `leaseMs`); a wait that runs out rejects with TIMEOUT. Each call is a section of its own.
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

  /** This client's metrics alone, in the Prometheus text format (every client of the process:
   * `polylock.metrics.text()`). */
  metricsText() {
    return call(() => this._native.metricsText());
  }

  /** Release every lock this client still holds and close it. Idempotent. */
  async close() {
    this._closed = true;
    openClients.delete(this.id);
    check(await call(() => this._native.close()));
  }

  /** Have the lost events of this client's holds delivered (one weak native callback). */
  _watch() {
    if (this._watching) return;
    this._watching = true;
    // One weak callback for the whole client: it never keeps the process alive by itself.
    call(() => this._native.watchLost((event) => this._lostEvent(event)));
  }

  _lostEvent(event) {
    const { name: lostName, kind, reason } = event;
    if (kind === 'permit') {
      for (const ref of [...(this._permitSems.get(lostName) ?? [])]) {
        ref.deref()?.emit('lost', { name: lostName, kind, reason });
      }
      return;
    }
    const holds = this._holds.get(`${event.owner}:${kind}:${lostName}`);
    if (!holds) return;
    const locks = new Set();
    for (const h of holds) {
      if (h._lost !== null) continue;
      h._lost = reason;
      h._onLost?.(reason);
      locks.add(h._lock);
    }
    for (const l of locks) l.emit('lost', { name: lostName, kind, reason });
  }

  /** `sem` has 'lost' listeners: it hears of the loss of permits of its name. */
  _listenPermits(sem) {
    sem._ref ??= new WeakRef(sem);
    const semName = sem.name;
    let refs = this._permitSems.get(semName);
    if (!refs) this._permitSems.set(semName, (refs = new Set()));
    if (refs.has(sem._ref)) return;
    refs.add(sem._ref);
    // The WeakRef is the token: `_unlistenPermits` unregisters with it.
    this._permitSemsGone.register(sem, { semName, ref: sem._ref }, sem._ref);
  }

  /** The handle of `ref` no longer listens (or was collected); its name's entry goes with the
   * last handle. */
  _unlistenPermits(semName, ref) {
    if (!ref) return;
    this._permitSemsGone.unregister(ref);
    const refs = this._permitSems.get(semName);
    if (refs && refs.delete(ref) && refs.size === 0) this._permitSems.delete(semName);
  }

  _register(key, hold) {
    let set = this._holds.get(key);
    if (!set) this._holds.set(key, (set = new Set()));
    set.add(hold);
  }

  _unregister(key, hold) {
    const set = this._holds.get(key);
    if (set && set.delete(hold) && set.size === 0) this._holds.delete(key);
  }
}

/**
 * One acquisition of a lock, from `acquire`, `tryLock` or `hold`: `release()` ends exactly this
 * acquisition (one hold of its owner), whatever flow calls it. Disposable:
 * `await using held = await lock.hold();`.
 */
class LockHold {
  constructor(lock, owner) {
    this._lock = lock;
    this._owner = owner;
    // The keys this acquisition lets re-enter (see Lock#_key): its lock's, and a multi-lock's
    // members'.
    this._keys = lock._reentryKeys;
    this._state = PENDING;
    this._lost = null; // the reason, once a lost event named this hold
    this._onLost = null; // a section's abort (Lock#using)
    this._releasing = null;
    // Bound, as the holds of earlier versions were closures: `const { release } = held` works.
    this.release = this.release.bind(this);
    this[asyncDispose] = this.release;
  }

  /** The lock this acquisition holds. */
  get lock() {
    return this._lock;
  }

  /** This acquisition's fencing token (larger for every new holder), or null once released. */
  get fencingToken() {
    if (this._state !== HELD) return null;
    return call(() => this._lock._native.fencingToken(this._owner)) ?? null;
  }

  /** True if the hold was lost (expired, deleted, its session ended) and not yet released. */
  get isLost() {
    if (this._state !== HELD) return false;
    return this._lost !== null || call(() => this._lock._native.isLost(this._owner));
  }

  /** True once released (or lost and released). */
  get released() {
    return this._state === DONE;
  }

  /** Why the hold was lost (`EXPIRED`, `DELETED`, `RENEWAL_FAILED`, `SESSION_EXPIRED`,
   * `CLIENT_CLOSED`), or null while it is not lost. */
  get lostReason() {
    if (this._state !== HELD) return null;
    return this._lost ?? call(() => this._lock._native.lostReason(this._owner)) ?? null;
  }

  /**
   * Extend a fixed lease (taken with `leaseMs`): it ends `ms` from now (node-redlock's
   * `extend(duration)`). Resolves this hold. Rejects with NotOwnerError once released,
   * LockLostError if it was lost or ran out first, InvalidStateError for a hold the watchdog or a
   * session keeps (nothing to extend).
   */
  async extend(ms) {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
      throw argError(RangeError, `ms must be a positive finite number of milliseconds, got ${ms}`);
    }
    if (this._state !== HELD) throw new NotOwnerError(`lock '${this._lock.name}': this hold was released`);
    check(await call(() => this._lock._native.extendLease(this._owner, 'set', ms)));
    return this;
  }

  /**
   * Release this acquisition. ERR_POLYLOCK_LOCK_LOST if the hold was lost (it is then forgotten).
   * Idempotent: a second call does nothing.
   */
  release() {
    if (this._releasing) return this._releasing;
    if (this._state !== HELD) return Promise.resolve();
    this._releasing = this._lock._release(this).finally(() => {
      this._releasing = null;
    });
    return this._releasing;
  }
}

const AMBIGUOUS = Symbol('ambiguous');
let multiSerial = 0;

class Lock extends EventEmitter {
  constructor(client, nativeLock) {
    super();
    this._client = client;
    this._native = nativeLock;
    this._name = call(() => nativeLock.name);
    this._kind = call(() => nativeLock.kind);
    const family = this._kind === 'read' || this._kind === 'write' ? 'rw' : this._kind;
    // One hold of the core: the same client, kind and name.
    this._id = client ? `${client._id}\u0000${this._kind}\u0000${this._name}` : `multi\u0000${++multiSerial}`;
    // What re-enters: the same client and name, and the halves of a read-write lock together (a
    // writer's flow may take the read half: a downgrade; a reader's asking for the write half is
    // refused at once by the core). A mutex never re-enters.
    this._key = this._kind === 'mutex' ? null : client ? `${client._id}\u0000${family}\u0000${this._name}` : this._id;
    this._reentryKeys = this._key === null ? [] : [this._key];
    this._live = new Set(); // the held acquisitions taken through this handle
    this.on('newListener', (event) => {
      if (event === 'lost') this._watchLost();
    });
  }

  _watchLost() {
    this._client._watch();
  }

  /** Where the holds of `owner` are registered: [client, key] pairs. */
  _registrations(owner) {
    return [[this._client, `${owner}:${this._kind}:${this._name}`]];
  }

  get name() {
    return this._name;
  }

  /** `reentrant`, `mutex`, `read`, `write`, `fair`, or `multi`. */
  get kind() {
    return this._kind;
  }

  /** How many times the current flow holds the lock (0 if it holds none, or lost it): every
   * acquisition of its owner counts, through any handle (a multi-lock's acquisitions count for
   * each of its members), as the core counts the owner's holds. */
  get holdCount() {
    const h = this._current();
    return h ? this._countFor(h._owner) : 0;
  }

  /** The live acquisitions of `owner` registered under this lock's name and kind. */
  _countFor(owner) {
    const [client, key] = this._registrations(owner)[0];
    let n = 0;
    for (const x of client._holds.get(key) || []) {
      if (x._state === HELD && !x.isLost) n++;
    }
    return n;
  }

  /** The fencing token of the current flow's hold, or null. */
  get fencingToken() {
    return this._current()?.fencingToken ?? null;
  }

  /** True if the current flow's hold was lost and not yet released. */
  get isLost() {
    return this._current()?.isLost ?? false;
  }

  /**
   * Acquire (or re-enter, inside a section of this lock) and open a section in the calling
   * flow. Resolves the LockHold, or null when `waitMs` ran out (`waitMs` omitted: wait until
   * acquired; 0: one try). `leaseMs`: the lock expires after it, no watchdog. `signal`: aborting
   * it cancels the wait and rejects with its reason (an AbortError).
   */
  async acquire(opts = {}) {
    const { wait, lease, signal } = acquireArgs(opts);
    const hold = this._begin();
    sections.enterWith({ hold, up: heldFrom(sections.getStore()) });
    return (await this._take(hold, wait, lease, signal)) ? hold : null;
  }

  /** `acquire` with `waitMs` 0 unless given: one try. Resolves the LockHold or null. */
  async tryLock(opts = {}) {
    const o = options(opts);
    return this.acquire(o.waitMs === undefined ? { ...o, waitMs: 0 } : o);
  }

  /**
   * Release the current flow's innermost acquisition of this lock; outside any, the handle's
   * acquisition when all it holds are of one flow. ERR_POLYLOCK_NOT_OWNER if it holds nothing;
   * ERR_POLYLOCK_INVALID_STATE when it is ambiguous (holds of several flows, none of this one:
   * release their LockHolds instead).
   */
  async release() {
    const hold = this._inFlow() ?? this._sole();
    if (hold === AMBIGUOUS) {
      const owners = new Set([...this._live].map((h) => h._owner)).size;
      throw new InvalidStateError(
        `lock '${this.name}': this handle holds the lock for ${owners} different flows and none of ` +
          'them is the calling one, so release() cannot tell which to end; release the LockHold ' +
          'that acquire() returned instead',
      );
    }
    if (!hold) {
      throw new NotOwnerError(`lock '${this.name}' is not held by this flow or handle`);
    }
    return hold.release();
  }

  /**
   * Acquire, run `fn(signal)` in a section of its own, release. Inside `fn` (and whatever it
   * starts) this lock re-enters; concurrent calls exclude each other. `signal` aborts if the lock
   * is lost meanwhile (the call then rejects with LOCK_LOST). Rejects with ERR_POLYLOCK_TIMEOUT if
   * `waitMs` ran out.
   */
  async using(fn, opts = {}) {
    if (typeof fn !== 'function') throw argError(TypeError, 'fn must be a function');
    const { wait, lease, signal } = acquireArgs(opts);
    const hold = this._begin();
    const node = { hold, up: heldFrom(sections.getStore()) };
    if (!(await this._take(hold, wait, lease, signal))) {
      throw new LockTimeoutError(`lock '${this.name}' not acquired within ${opts.waitMs} ms`);
    }
    return sections.run(node, () => this._section(hold, fn));
  }

  /** `using` under the name the issue tracker and node-redlock users look for. */
  withLock(fn, opts = {}) {
    return this.using(fn, opts);
  }

  async _section(hold, fn) {
    // While the work runs the process stays alive (a 'lost' listener alone never keeps it so).
    const keepAlive = setInterval(() => {}, 1 << 30);
    const controller = new AbortController();
    hold._onLost = (reason) =>
      controller.abort(new LockLostError(`lock '${this.name}' was lost (${reason})`));
    this._watchLost();
    try {
      if (hold.isLost) hold._onLost('lost before the work started');
      return await fn(controller.signal);
    } finally {
      clearInterval(keepAlive);
      hold._onLost = null;
      await hold.release();
    }
  }

  /** Acquire and return a disposable LockHold: `await using held = await lock.hold();`.
   * Rejects with ERR_POLYLOCK_TIMEOUT if `waitMs` ran out. */
  async hold(opts = {}) {
    const held = await this.acquire(opts);
    if (!held) throw new LockTimeoutError(`lock '${this.name}' not acquired within ${opts.waitMs} ms`);
    return held;
  }

  /** Whether anybody holds the lock (asks the server). */
  async isLocked() {
    return check(await call(() => this._native.isLocked())).value;
  }

  /** Free the lock whoever holds it (Redisson's forceUnlock); true if it was held. */
  async forceUnlock() {
    return check(await call(() => this._native.forceUnlock())).value;
  }

  /** The lease left, three distinct answers: null when nobody holds the lock, Infinity when it
   * is held with no expiry (ZooKeeper, SQL session locks), else the ms left. */
  async remainingLeaseMs() {
    const o = check(await call(() => this._native.remainingLease()));
    if (!o.value) return null;
    return o.number < 0 ? Infinity : o.number;
  }

  /** The calling flow's hold (as for holdCount): its fixed lease now ends `ms` from now
   * (node-redlock's `extend(duration)`). See LockHold#extend. */
  async extend(ms) {
    const h = this._current();
    if (!h) throw new NotOwnerError(`lock '${this.name}' is not held by this flow or handle`);
    return h.extend(ms);
  }

  /** A new acquisition in the calling context: the owner of the section it re-enters, or fresh. */
  _begin() {
    const section = this._key === null ? null : sectionOf(this._key);
    return new LockHold(this, section ? section._owner : call(() => native.freshOwner()));
  }

  /** Ask the core for `hold`; true once held, false when the wait ran out. */
  async _take(hold, wait, lease, signal) {
    let outcome;
    try {
      outcome = await cancellable(signal, (token) => this._native.acquire(hold._owner, wait, lease, token));
    } catch (e) {
      hold._state = DONE;
      throw e;
    }
    if (!outcome.value) {
      hold._state = DONE;
      return false;
    }
    hold._state = HELD;
    this._live.add(hold);
    for (const [client, key] of this._registrations(hold._owner)) client._register(key, hold);
    return true;
  }

  async _release(hold) {
    hold._state = RELEASING;
    let outcome;
    try {
      outcome = norm(await call(() => this._native.release(hold._owner)));
    } catch (e) {
      hold._state = HELD;
      throw e;
    }
    // Lost, or unknown to the core: the core forgot the hold, and so does this side.
    if (outcome.ok || outcome.code === 'LOCK_LOST' || outcome.code === 'NOT_OWNER') {
      hold._state = DONE;
      this._live.delete(hold);
      for (const [client, key] of this._registrations(hold._owner)) client._unregister(key, hold);
    } else {
      hold._state = HELD;
    }
    check(outcome);
  }

  /** The innermost held acquisition of this lock in the calling flow, or null. */
  _inFlow() {
    for (let n = sections.getStore(); n; n = n.up) {
      const h = n.hold;
      if (h._state === HELD && h._lock._id === this._id) return h;
    }
    return null;
  }

  /** The latest held acquisition of this handle when all are of one owner; null if none,
   * AMBIGUOUS if they are of several. */
  _sole() {
    let last = null;
    for (const h of this._live) {
      if (h._state !== HELD) continue;
      if (last && h._owner !== last._owner) return AMBIGUOUS;
      last = h;
    }
    return last;
  }

  /** The acquisition the handle's getters speak of: the calling flow's, else the sole one. */
  _current() {
    const h = this._inFlow() ?? this._sole();
    return h === AMBIGUOUS ? null : h;
  }
}

/**
 * All of several locks or none (Redisson's RedissonMultiLock, Curator's InterProcessMultiLock),
 * even from different clients and servers: `new MultiLock([redisLock, zkLock])`. A Lock: acquire
 * takes every member within the one `waitMs` or gives back what it took and resolves null;
 * release gives back all. Members are taken in one order (by name, then server, then kind)
 * whatever order they are given in, so multi-locks over overlapping sets never deadlock. Owners
 * as for any lock: the flow; inside its section the multi-lock and each (reentrant) member
 * re-enter. `fencingTokens` lists each member's token, `fencingToken` is the largest. 'lost'
 * fires when any member's hold is lost.
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
    this._reentryKeys = [this._key, ...new Set(locks.flatMap((l) => l._reentryKeys))];
  }

  /** The locks, as given. */
  get members() {
    return [...this._members];
  }

  /** Each member's fencing token for the current flow's hold (null where it holds none). */
  get fencingTokens() {
    const h = this._current();
    return this._members.map((m) => (h ? call(() => m._native.fencingToken(h._owner)) ?? null : null));
  }

  _registrations(owner) {
    return this._members.flatMap((m) => m._registrations(owner));
  }

  /** The least of the members' counts: the multi-lock is held as often as every member is. */
  _countFor(owner) {
    return Math.min(...this._members.map((m) => m._countFor(owner)));
  }

  _watchLost() {
    for (const m of this._members) m._watchLost();
  }
}

/**
 * Many readers or one writer. Both halves are Locks whose owner is the flow, as for any lock:
 * inside a section of the write half the read half re-enters and stays held after the write
 * half is released (a downgrade); inside a section of the read half, asking for the write half
 * rejects at once with ERR_POLYLOCK_UPGRADE_NOT_SUPPORTED (Redisson and Curator would wait
 * forever). Another flow is another owner, on this handle or any other.
 */
class ReadWriteLock {
  constructor(client, lockName) {
    this._read = new Lock(client, call(() => client._native.lock(lockName, 'read')));
    this._write = new Lock(client, call(() => client._native.lock(lockName, 'write')));
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

function acquireArgs(opts) {
  const { waitMs, leaseMs, signal } = options(opts);
  const wait = waitOf(waitMs);
  const lease = leaseOf(leaseMs);
  checkSignal(signal);
  return { wait, lease, signal };
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

/** Permits taken by one `Semaphore#acquire`; `release()` gives back exactly those, once. */
class TakenPermits {
  constructor(semaphore, permits, slot) {
    this._semaphore = semaphore;
    this._slot = slot;
    this.permits = permits;
    this._released = false;
    this.release = this.release.bind(this);
    this[asyncDispose] = this.release;
  }

  /** True once a lease of these permits was lost (ZooKeeper: the session ended). */
  get isLost() {
    return !this._released && call(() => this._slot.isLost);
  }

  /** Give these permits back (on ZooKeeper: the leases this acquire took). Once; later calls do
   * nothing. */
  async release() {
    if (this._released) return;
    this._released = true;
    check(await call(() => this._slot.release(this._semaphore._native)));
  }
}

/**
 * A semaphore (no re-entry, no owner per flow: a permit is released through the TakenPermits
 * that acquired it). On Redis permits belong to nobody: any caller may release them, and a
 * crashed holder's permits are not given back (use `permitExpirableSemaphore`). On ZooKeeper the
 * permits taken are leases of this client: only it releases them, and a lost session frees them.
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
   * Take `permits` permits (default 1). Resolves the TakenPermits you `release()` (or dispose),
   * or null when `waitMs` ran out (as a lock's acquire does); rejects with the signal's reason
   * when aborted.
   */
  async acquire(opts = {}) {
    const { permits = 1, waitMs, signal } = options(opts);
    const n = permitsOf(permits);
    const wait = waitOf(waitMs);
    const slot = call(() => new native.PermitsSlot());
    const outcome = await cancellable(signal, (token) => this._native.acquire(n, wait, token, slot));
    if (!outcome.value) return null;
    return new TakenPermits(this, n, slot);
  }

  /** Give back `permits` permits (default 1): on Redis anyone may; on ZooKeeper any `permits` of
   * this client's leases. */
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
    this._ref = null; // a WeakRef of it, once it listens: what the client's map keeps of it
    this.on('newListener', (event) => {
      if (event !== 'lost') return;
      client._listenPermits(this);
      client._watch();
    });
    this.on('removeListener', (event) => {
      if (event === 'lost' && this.listenerCount('lost') === 0) client._unlistenPermits(this.name, this._ref);
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
   * Take one permit: resolves `{ id, release() }` (disposable), or null when `waitMs` ran out
   * (as every acquire of polylock says "not acquired").
   */
  async acquire(opts = {}) {
    const { waitMs, leaseMs, signal } = options(opts);
    const wait = waitOf(waitMs);
    const lease = leaseOf(leaseMs);
    const outcome = await cancellable(signal, (token) => this._native.acquire(wait, lease, token));
    if (!outcome.text) return null;
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

/** A fencing token as the fences take it: a whole number (or a BigInt) the core then checks. */
function tokenOf(token) {
  if (typeof token === 'bigint') {
    if (token > BigInt(Number.MAX_SAFE_INTEGER) || token < 0n) {
      throw argError(RangeError, `token must be a fencing token from 1 to 2^53, got ${token}`);
    }
    return Number(token);
  }
  if (typeof token !== 'number') {
    throw argError(TypeError, `token must be a number (a held lock's fencingToken), got ${typeof token}`);
  }
  return token;
}

/** One argument of a fenced write's command as bytes. */
function argBytes(a) {
  if (Buffer.isBuffer(a)) return a;
  if (a instanceof Uint8Array) return Buffer.from(a);
  if (typeof a === 'string') return Buffer.from(a, 'utf8');
  if ((typeof a === 'number' && Number.isFinite(a)) || typeof a === 'bigint') return Buffer.from(String(a));
  throw argError(TypeError, `a command's argument is a string, Buffer or number, got ${a === null ? 'null' : typeof a}`);
}

function commandsOf(commands) {
  if (!Array.isArray(commands)) {
    throw argError(TypeError, "commands must be an array of commands, each an array: [['DECR', 'stock']]");
  }
  return commands.map((c) => {
    if (!Array.isArray(c)) {
      throw argError(TypeError, "each command must be an array of its name and arguments: ['DECR', 'stock']");
    }
    return c.map(argBytes);
  });
}

/**
 * The fence of one name on the lock server's own Redis (`client.fence(name)`): fenced writes of
 * Redis commands, refused with StaleTokenError when a larger token of the name was accepted.
 */
class Fence {
  constructor(nativeFence) {
    this._native = nativeFence;
  }

  get name() {
    return call(() => this._native.name);
  }

  /**
   * Run `commands` in one atomic step if `token` is not smaller than the largest token this fence
   * accepted, recording it; their replies (null, a number, a string, a Buffer for bytes that are
   * not UTF-8, an array). A smaller token rejects with StaleTokenError and nothing runs; the same
   * token may write any number of times. In a Redis Cluster the keys must carry the name's hash
   * tag (`{name}`).
   */
  async write(token, commands) {
    const t = tokenOf(token);
    const c = commandsOf(commands);
    const r = await call(() => this._native.write(t, c));
    if (Array.isArray(r)) return r;
    check(r);
    throw new InternalError('a fenced write answered neither replies nor an error');
  }

  /** The largest token this fence accepted, or null. */
  async accepted() {
    const o = check(await call(() => this._native.accepted()));
    return o.value ? o.number : null;
  }
}

/** The SQL of the fences by name (`postgres_guard`, `mysql_read`, ...), as the core has it. */
const FENCE_STATEMENTS = Object.freeze(call(() => native.fenceSql()));

/** The dialect of a `pg` or `mysql2` client, and the object to send statements on. */
function sqlTarget(client) {
  if (client && typeof client.query === 'function' && client.connectionParameters) {
    return { dialect: 'postgres', conn: client };
  }
  if (client && typeof client.connect === 'function' && 'totalCount' in client) {
    throw argError(TypeError, 'fence.sql takes the client your transaction runs on (await pool.connect()), not a pg Pool');
  }
  const conn = client && typeof client.promise === 'function' ? client.promise() : client;
  if (conn && typeof conn.query === 'function' && typeof conn.getConnection !== 'function') {
    return { dialect: 'mysql', conn };
  }
  throw argError(TypeError, 'fence.sql takes a pg Client (or a PoolClient) or a mysql2 connection, inside your transaction');
}

async function sendSql(target, what, values) {
  const text = FENCE_STATEMENTS[what];
  if (target.dialect === 'postgres') {
    const r = await target.conn.query(text, values);
    return { count: r.rowCount, rows: r.rows.map((row) => Object.values(row)) };
  }
  const [rows] = await target.conn.query({ sql: text, rowsAsArray: true }, values);
  return { count: rows.affectedRows, rows: Array.isArray(rows) ? rows : [] };
}

/**
 * Fencing at the resource for data in PostgreSQL or MySQL/MariaDB, written through the
 * application's own `pg` or `mysql2` client: `fence.sql(client, name, token)` takes the name's
 * guard row in the caller's transaction and rejects with StaleTokenError when a larger token was
 * accepted (roll back then: the stale write never commits); `fence.setup(client)` makes the table.
 */
const fence = Object.freeze({
  statements: FENCE_STATEMENTS,
  async setup(client) {
    const target = sqlTarget(client);
    try {
      await sendSql(target, `${target.dialect}_table`, []);
    } catch (e) {
      // Two sessions making it at once can collide in PostgreSQL's catalog: the table is there.
      try {
        await target.conn.query('SELECT token FROM polylock_fence WHERE 1 = 0');
      } catch {
        throw e;
      }
    }
  },
  async sql(client, fenceName, token) {
    const target = sqlTarget(client);
    name(fenceName, 'name');
    const t = tokenOf(token);
    call(() => native.fenceChecked(fenceName, t));
    const checked = fenceName;
    const guard = await sendSql(target, `${target.dialect}_guard`, [checked, t]);
    if (target.dialect === 'postgres' && guard.count === 1) return;
    const read = await sendSql(target, `${target.dialect}_read`, [checked]);
    const accepted = read.rows.length ? Number(read.rows[0][0]) : null;
    if (accepted !== null && accepted <= t) return;
    throw new StaleTokenError(
      `the fence of '${checked}' already accepted token ${accepted}; token ${t} is older: its holder's ` +
        'lease had ended. Roll the transaction back: its writes must not commit',
    );
  },
});

/** A leader from an election's answer, or null. */
function leaderOf(outcome) {
  return outcome.value && outcome.text !== null && outcome.text !== undefined
    ? { identity: outcome.text, term: outcome.number }
    : null;
}

/**
 * A candidate in a leader election (from `client.election(name, identity)`): one candidate for
 * every flow that uses it. Any client can read `leader()` and follow `observe()`.
 */
class Election {
  constructor(nativeElection) {
    this._native = nativeElection;
  }

  get name() {
    return call(() => this._native.name);
  }

  get identity() {
    return call(() => this._native.identity);
  }

  /** The term (a fencing token, greater for every new leader) while this candidate leads, else
   * null. */
  get term() {
    return call(() => this._native.term);
  }

  get isLeader() {
    return this.term !== null;
  }

  /**
   * Campaign until elected: resolves true (the term in `term`), or false when `waitMs` ran out
   * (the candidacy is withdrawn); rejects with the signal's reason when aborted.
   */
  async campaign(opts = {}) {
    const { waitMs, signal } = options(opts);
    const wait = waitOf(waitMs);
    const outcome = await cancellable(signal, (token) => this._native.campaign(wait, token));
    return outcome.value;
  }

  /** Stop leading; true if this candidate led (LOCK_LOST if its leadership was lost meanwhile). */
  async resign() {
    return check(await call(() => this._native.resign())).value;
  }

  /** The leader now, `{ identity, term }`, or null. */
  async leader() {
    return leaderOf(check(await call(() => this._native.leader())));
  }

  /** The candidates' identities in order, the leader first (Redis lists the leader only). */
  async candidates() {
    const text = check(await call(() => this._native.candidates())).text;
    return text ? text.split('\u0000') : [];
  }

  /**
   * The leader now, then the leader after each change (null: nobody leads), until `signal`
   * aborts (the iteration then ends) or `waitMs` passes with no change.
   */
  async *observe(opts = {}) {
    const { waitMs, signal } = options(opts);
    const wait = waitOf(waitMs);
    let seen = await this.leader();
    yield seen;
    for (;;) {
      if (signal?.aborted) return;
      let outcome;
      try {
        outcome = await cancellable(signal, (token) =>
          this._native.nextChange(seen ? seen.term : 0, wait, token),
        );
      } catch (e) {
        if (signal?.aborted) return;
        throw e;
      }
      if (!outcome.value) return;
      seen = leaderOf({ value: true, text: outcome.text, number: outcome.number });
      yield seen;
    }
  }
}

// ---- Metrics and logs ----
// The core records the metrics once for every runtime (core/src/metrics.rs) and adds up every
// client of the process; they go to prom-client (custom metric objects that read the snapshot at
// each scrape) or to an OpenTelemetry Meter (observable instruments). The core's log events
// (core/src/log.rs) go to `events` and to NODE_DEBUG=polylock. Neither prom-client nor
// OpenTelemetry is a dependency: a registry or a meter is passed in, and prom-client is only
// required for its default registry.

// The core's metric families (core/src/metrics.rs's table, in its order): prom-client needs each
// name before the first scrape, when the snapshot may not list it yet. How cluster workers add a
// family up: the sum, but the newest fencing token of the processes (their max).
const MAX_OVER_WORKERS = new Set(['polylock_name_fencing_token']);
const FAMILIES = native
  .metricFamilies()
  .map(([name, type, help]) =>
    Object.freeze({ name, type, help, aggregator: MAX_OVER_WORKERS.has(name) ? 'max' : 'sum' }),
  );

// Metrics.

// One native snapshot per scrape: a registry calls every metric's get() in one synchronous
// loop, and the snapshot taken by the first serves the others until the next microtask.
let cachedSnapshot = null;
function metricsSnapshot() {
  if (!cachedSnapshot) {
    cachedSnapshot = new Map(call(() => native.metricsSnapshot(false)).map((f) => [f.name, f]));
    queueMicrotask(() => {
      cachedSnapshot = null;
    });
  }
  return cachedSnapshot;
}

function labelsOf(flat) {
  const labels = {};
  for (let i = 0; i + 1 < flat.length; i += 2) labels[flat[i]] = flat[i + 1];
  return labels;
}

/** One family as a prom-client metric (what `registry.registerMetric` takes). */
class PromFamily {
  constructor(def) {
    this._def = def;
    // prom-client renames counters of an OpenMetrics registry (drops `_total`): its own.
    this.name = def.name;
    this.help = def.help;
    this.type = def.type;
    this.aggregator = def.aggregator;
  }

  get() {
    const family = metricsSnapshot().get(this._def.name);
    const values = [];
    for (const s of family ? family.samples : []) {
      const labels = labelsOf(s.labels);
      if (this.type !== 'histogram') {
        values.push({ value: s.value, labels });
        continue;
      }
      s.le.forEach((le, i) => {
        values.push({ value: s.buckets[i], labels: { ...labels, le }, metricName: `${this.name}_bucket` });
      });
      values.push({ value: s.count, labels: { ...labels, le: '+Inf' }, metricName: `${this.name}_bucket` });
      values.push({ value: s.sum, labels, metricName: `${this.name}_sum` });
      values.push({ value: s.count, labels, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The core's counts are the process's and never go back (registry.resetMetrics()). */
  reset() {}
}

/** prom-client: the application's copy first (its global registry is the one it serves),
 * else the one next to polylock. */
function promClient() {
  const from = [require.main?.filename, path.join(process.cwd(), 'index.js'), __filename];
  let first;
  for (const file of from) {
    if (!file) continue;
    try {
      return createRequire(file)('prom-client');
    } catch (e) {
      if (e?.code !== 'MODULE_NOT_FOUND') throw e;
      first ??= e;
    }
  }
  const e = new Error(
    'polylock.metrics.register() without a registry uses prom-client\'s global registry, and ' +
      'prom-client is not installed: `npm install prom-client`, or pass a registry',
    { cause: first },
  );
  e.code = 'MODULE_NOT_FOUND';
  throw e;
}

const registered = new WeakMap(); // registry -> its PromFamily objects

/**
 * Register polylock's metric families in a prom-client Registry (default: prom-client's global
 * `register`): each scrape reads the process's snapshot. Idempotent. Returns the registry.
 */
function registerProm(registry) {
  if (registry === undefined) registry = promClient().register;
  if (
    registry === null ||
    typeof registry !== 'object' ||
    typeof registry.registerMetric !== 'function' ||
    typeof registry.getSingleMetric !== 'function'
  ) {
    throw argError(TypeError, 'registry must be a prom-client Registry');
  }
  let mine = registered.get(registry);
  if (!mine) registered.set(registry, (mine = FAMILIES.map((d) => new PromFamily(d))));
  for (const m of mine) {
    if (registry.getSingleMetric(m._def.name) !== m) registry.registerMetric(m);
  }
  return registry;
}

/** Every client of the process, in the Prometheus text format (0.0.4). */
function metricsText() {
  return call(() => native.metricsText());
}

/**
 * Observable instruments on an OpenTelemetry Meter (`@opentelemetry/api`): counters (their name
 * without `_total`) and gauges as they are, each histogram as two observable counters,
 * `<name>_count` and `<name>_sum` (OpenTelemetry has no asynchronous histogram). One snapshot
 * per collection. Returns a function that removes the callback.
 */
function registerOtel(meter) {
  if (
    meter === null ||
    typeof meter !== 'object' ||
    typeof meter.createObservableCounter !== 'function' ||
    typeof meter.createObservableGauge !== 'function' ||
    typeof meter.addBatchObservableCallback !== 'function'
  ) {
    throw argError(TypeError, 'meter must be an OpenTelemetry Meter (from @opentelemetry/api)');
  }
  const observers = new Map(); // family name -> [instrument, which value]
  for (const d of FAMILIES) {
    const unit = d.name.includes('_seconds') ? 's' : undefined;
    if (d.type === 'counter') {
      observers.set(d.name, [[meter.createObservableCounter(d.name.replace(/_total$/, ''), { description: d.help, unit }), 'value']]);
    } else if (d.type === 'gauge') {
      observers.set(d.name, [[meter.createObservableGauge(d.name, { description: d.help }), 'value']]);
    } else {
      observers.set(d.name, [
        [meter.createObservableCounter(`${d.name}_count`, { description: `${d.help} (count)` }), 'count'],
        [meter.createObservableCounter(`${d.name}_sum`, { description: `${d.help} (sum)`, unit }), 'sum'],
      ]);
    }
  }
  const callback = (result) => {
    for (const f of call(() => native.metricsSnapshot(false))) {
      for (const [instrument, which] of observers.get(f.name) ?? []) {
        for (const s of f.samples) result.observe(instrument, s[which], labelsOf(s.labels));
      }
    }
  };
  const instruments = [...observers.values()].flat().map(([i]) => i);
  meter.addBatchObservableCallback(callback, instruments);
  return () => meter.removeBatchObservableCallback(callback, instruments);
}

const metrics = Object.freeze({ register: registerProm, text: metricsText, registerOtel });

// Logs.

const debuglog = util.debuglog('polylock');
const debugLogs = debuglog.enabled || /^debug$/i.test(process.env.POLYLOCK_LOG ?? '');

/** The core's log events: 'log' with `{ level, target, message, lock, fields }`. */
class PolylockEvents extends EventEmitter {
  /** The lowest level forwarded: `debug` (NODE_DEBUG=polylock or POLYLOCK_LOG=debug when
   * polylock loaded), `info`, or `none` (the process has a `tracing` subscriber of its own). */
  get level() {
    return logLevel;
  }
}
const events = new PolylockEvents();

function onLog(r) {
  const fields = labelsOf(r.fields);
  const record = { level: r.level, target: r.target, message: r.message, lock: r.lock ?? null, fields };
  if (debuglog.enabled) {
    const parts = Object.entries(fields).map(([k, v]) => `${k}=${v}`);
    if (record.lock !== null) parts.unshift(`lock=${record.lock}`);
    debuglog('%s %s: %s%s', record.level, record.target, record.message, parts.length ? ` (${parts.join(' ')})` : '');
  }
  events.emit('log', record);
}

// A weak native callback: it never keeps the process (or a worker) alive, and its events stop
// when the environment ends.
const logLevel = call(() => native.forwardLogs(onLog, debugLogs));

module.exports = {
  connect,
  connectRedlock,
  newFlow,
  Client,
  Lock,
  LockHold,
  MultiLock,
  ReadWriteLock,
  Semaphore,
  PermitExpirableSemaphore,
  CountDownLatch,
  Election,
  Fence,
  /** Fencing at the resource for SQL data: `fence.sql(client, name, token)`, `fence.setup(client)`. */
  fence,
  // BEGIN generated from core/api/errors.toml (exports) by `python3 scripts/gen-bindings.py`: do not edit
  PolylockError,
  LockTimeoutError,
  NotOwnerError,
  LockLostError,
  PolylockConnectionError,
  AuthError,
  BackendError,
  InvalidStateError,
  InternalError,
  PanicError,
  OperationCancelledError,
  UnsupportedError,
  UpgradeNotSupportedError,
  NotReplicatedError,
  StaleTokenError,
  // END generated (errors, exports)
  /** The error table: each kind's name and stable number (`{ TIMEOUT: 3, ... }`). */
  errorNumbers: NUMBERS,
  version: call(() => native.version()),
  /** The driver of this thread's calls: 'loop' (Redis I/O on Node's own event loop) or 'runtime'. */
  driver: () => call(() => native.driverName()),
  /** The process's metrics: `register(registry)` (prom-client), `registerOtel(meter)`, `text()`. */
  metrics,
  /** The core's log events: 'log' with `{ level, target, message, lock, fields }`. */
  events,
};

// TEST ONLY, not API (not enumerable, not in index.d.ts): a native call that panics where `at`
// says ('sync', 'poll', 'callback'), for test/panic.test.js; it rejects with ERR_POLYLOCK_PANIC.
Object.defineProperty(module.exports, '__testPanic', {
  enumerable: false,
  value: async (at) => check(await call(() => native.__testPanic(at))),
});
