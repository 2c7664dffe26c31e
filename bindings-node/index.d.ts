// Type declarations of the polylock npm package (hand-written; the public API is index.js, and
// test/typings.test.js checks that every class member and export of it is declared here).
import { EventEmitter } from 'node:events';

export interface ConnectOptions {
  /** Lease of locks acquired without `leaseMs`, renewed every third of it. Default 30000. */
  watchdogTimeoutMs?: number;
  /** Limit of one connection attempt. Default 5000. */
  connectTimeoutMs?: number;
  /** Limit of one command's answer. Default 5000. */
  commandTimeoutMs?: number;
  /** ZooKeeper session timeout. Default 10000. */
  sessionTimeoutMs?: number;
  /** How long a fair lock's waiter that stopped asking keeps its place. Default 5000. */
  fairWaitTimeoutMs?: number;
  /** The service name operators see next to this client's holds (`polylock status`). Default: a
   * `service` in the URL, else `POLYLOCK_SERVICE`, else the program's name. */
  service?: string;
  /** Lock names that get metric series of their own (a `name` label), as Redis-style globs
   * (`orders:*`, `?` one character). Default none: series per kind and backend only. */
  metricNames?: string[];
}

export interface AcquireOptions {
  /** Omitted: wait until acquired. 0: one try. Otherwise wait up to this many ms. */
  waitMs?: number;
  /** The lock expires after this many ms unless released (no watchdog). Not on ZooKeeper. */
  leaseMs?: number;
  /** Aborting it cancels the wait; the Promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface LostEvent {
  name: string;
  /** `reentrant`, `mutex`, `read`, `write`, `fair`, `leader` (an election's leadership) or `permit`. */
  kind: string;
  /** Why, in core's stable words (as every runtime says them). */
  reason: LostReason;
}

/** Why a hold was lost: its fixed lease ran out; it was removed from the server (deleted,
 * force-unlocked, its connection killed); the watchdog could not renew it in time; its session
 * expired; its client was closed. */
export type LostReason = 'EXPIRED' | 'DELETED' | 'RENEWAL_FAILED' | 'SESSION_EXPIRED' | 'CLIENT_CLOSED';

/**
 * One acquisition of a lock, from `acquire`, `tryLock` or `hold`. `release()` ends exactly this
 * acquisition (one hold of its owner), from whatever flow calls it; it is idempotent, and
 * disposing is releasing: `await using held = await lock.hold();`.
 */
export class LockHold implements AsyncDisposable {
  private constructor();
  /** The lock this acquisition holds. */
  readonly lock: Lock;
  /** Larger for every new holder (0 on an SQL client whose URL says `fencing=none`); null once
   * released. */
  readonly fencingToken: number | null;
  /** True if the hold was lost (expired, deleted, its session ended) and not yet released. */
  readonly isLost: boolean;
  /** True once released. */
  readonly released: boolean;
  /** Why the hold was lost, or null while it is not lost. */
  readonly lostReason: LostReason | null;
  /** A fixed lease (taken with `leaseMs`) now ends `ms` from now (node-redlock's `extend`).
   * Rejects with NotOwnerError once released, LockLostError if lost, InvalidStateError for a
   * hold the watchdog or a session keeps. */
  extend(ms: number): Promise<LockHold>;
  /** Ends this acquisition; rejects with LockLostError (ERR_POLYLOCK_LOCK_LOST) if it was lost. */
  release(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The LockHold of earlier versions' `hold()`. */
export type Hold = LockHold;

// BEGIN generated from core/api/errors.toml by `python3 scripts/gen-bindings.py`: do not edit
/** `code` is `ERR_POLYLOCK_<NAME>`: TIMEOUT, NOT_OWNER, LOCK_LOST, CONNECTION, AUTH, BACKEND,
 * INVALID_STATE, INTERNAL, PANIC, CANCELLED, UNSUPPORTED, UPGRADE_NOT_SUPPORTED,
 * NOT_REPLICATED, STALE_TOKEN; `number` is the kind's stable number in polylock's one error
 * table (`errorNumbers`). Each kind has its subclass below. Bad arguments are
 * TypeError/RangeError with code ERR_POLYLOCK_INVALID_ARGUMENT and number 2. */
export class PolylockError extends Error {
  constructor(message: string, name?: string);
  readonly code: string;
  readonly number: number;
}
/** TIMEOUT (3): what every section-running form (`using`, `withLock`, `hold`) rejects with when
 * its `waitMs` runs out; a bare acquire resolves null instead. */
export class LockTimeoutError extends PolylockError {
  constructor(message: string);
}
/** NOT_OWNER (4). */
export class NotOwnerError extends PolylockError {
  constructor(message: string);
}
/** LOCK_LOST (5). */
export class LockLostError extends PolylockError {
  constructor(message: string);
}
/** CONNECTION (6). */
export class PolylockConnectionError extends PolylockError {
  constructor(message: string);
}
/** AUTH (7). */
export class AuthError extends PolylockError {
  constructor(message: string);
}
/** BACKEND (8). */
export class BackendError extends PolylockError {
  constructor(message: string);
}
/** INVALID_STATE (9). */
export class InvalidStateError extends PolylockError {
  constructor(message: string);
}
/** INTERNAL (10). */
export class InternalError extends PolylockError {
  constructor(message: string);
}
/** PANIC (11): a panic caught in native code: a bug, please report it. */
export class PanicError extends PolylockError {
  constructor(message: string);
}
/** CANCELLED (12). */
export class OperationCancelledError extends PolylockError {
  constructor(message: string);
}
/** UNSUPPORTED (13). */
export class UnsupportedError extends PolylockError {
  constructor(message: string);
}
/** UPGRADE_NOT_SUPPORTED (14). */
export class UpgradeNotSupportedError extends PolylockError {
  constructor(message: string);
}
/** NOT_REPLICATED (15). */
export class NotReplicatedError extends PolylockError {
  constructor(message: string);
}
/** STALE_TOKEN (16): a fenced write (`fencedWrite`, `fence.sql`) refused: its token is older
 * than one the resource already accepted for the name, so its holder's lease had ended. */
export class StaleTokenError extends PolylockError {
  constructor(message: string);
}
// END generated (errors)
/** polylock's one error table: each kind's name and stable number. */
export const errorNumbers: Readonly<Record<string, number>>;

/**
 * A lock handle. The owner of an acquisition is the flow (the async call chain, which Node's
 * AsyncLocalStorage follows), never the handle: inside a section of the lock (a `using` or
 * `withLock` callback, or the code after `await lock.acquire()` until its release, and whatever
 * they start: awaits, callbacks, timers while the section lasts) acquiring it again re-enters;
 * any other flow waits, even on the same handle, so `Promise.all([lock.using(f), lock.using(g)])`
 * runs f, then g. A bare `acquire()` opens its section in the calling context, which also reaches
 * what the same synchronous code starts after the call: to start concurrent flows from one
 * function, give each its own `using`/`withLock`, or run it through `newFlow`.
 */
export class Lock extends EventEmitter {
  readonly name: string;
  /** `reentrant`, `mutex`, `read`, `write`, `fair`, or `multi`. */
  readonly kind: 'reentrant' | 'mutex' | 'read' | 'write' | 'fair' | 'multi';
  /** How many times the calling flow holds the lock (outside any section of it: the handle's
   * acquisitions, when they are all of one flow). */
  readonly holdCount: number;
  /** The fencing token of the calling flow's hold (as for holdCount), or null. */
  readonly fencingToken: number | null;
  /** True if the calling flow's hold (as for holdCount) was lost and not yet released. */
  readonly isLost: boolean;
  /**
   * Acquire, or re-enter inside a section of this lock, and open a section in the calling flow.
   * Resolves the LockHold; with `waitMs`, null when the wait ran out (0: one try).
   */
  acquire(options?: AcquireOptions & { waitMs?: undefined }): Promise<LockHold>;
  acquire(options: AcquireOptions): Promise<LockHold | null>;
  /** `acquire` with `waitMs` 0 unless given: the LockHold, or null. */
  tryLock(options?: AcquireOptions): Promise<LockHold | null>;
  /**
   * Release the calling flow's innermost acquisition of this lock; outside any, the handle's
   * when all it holds are of one flow. Rejects with ERR_POLYLOCK_NOT_OWNER if there is none, and
   * with ERR_POLYLOCK_INVALID_STATE when it is ambiguous (the handle holds the lock for several
   * other flows): release their LockHolds instead.
   */
  release(): Promise<void>;
  /** Acquire, run `fn(signal)` in a section of its own (the lock re-enters inside), release.
   * `signal` aborts if the lock is lost; the call then rejects with LockLostError.
   * Rejects with LockTimeoutError (ERR_POLYLOCK_TIMEOUT) if `waitMs` ran out. */
  using<T>(fn: (signal: AbortSignal) => Promise<T> | T, options?: AcquireOptions): Promise<T>;
  /** The same as `using` (node-redlock's word). */
  withLock<T>(fn: (signal: AbortSignal) => Promise<T> | T, options?: AcquireOptions): Promise<T>;
  /** `acquire` that rejects with LockTimeoutError instead of resolving null. */
  hold(options?: AcquireOptions): Promise<LockHold>;
  isLocked(): Promise<boolean>;
  forceUnlock(): Promise<boolean>;
  /** null when nobody holds the lock, Infinity when held with no expiry, else the ms left. */
  remainingLeaseMs(): Promise<number | null>;
  /** `extend(ms)` of the calling flow's hold (as for holdCount). */
  extend(ms: number): Promise<LockHold>;
  on(event: 'lost', listener: (event: LostEvent) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: 'lost', listener: (event: LostEvent) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
}

/** All of several locks or none, from any clients and servers. Owners as for any Lock (the flow);
 * inside its section the multi-lock and its reentrant members re-enter. Members are taken in one
 * order (name, server, kind) whatever order they are given in. */
export class MultiLock extends Lock {
  constructor(locks: Lock[]);
  readonly members: Lock[];
  /** Each member's fencing token for the calling flow's hold, in the order given (null where
   * none). */
  readonly fencingTokens: Array<number | null>;
}

/** Many readers or one writer. The owner of either half is the flow: inside a section of the
 * write half the read half re-enters (a downgrade); inside a section of the read half, asking for
 * the write half rejects at once with ERR_POLYLOCK_UPGRADE_NOT_SUPPORTED. */
export class ReadWriteLock {
  readonly name: string;
  readLock(): Lock;
  writeLock(): Lock;
}

export interface SemaphoreAcquireOptions {
  /** How many permits (default 1). */
  permits?: number;
  /** Omitted: wait until taken. 0: one try. Otherwise wait up to this many ms. */
  waitMs?: number;
  signal?: AbortSignal;
}

/** Permits taken by one acquire; `release()` gives back exactly those (ZooKeeper: the leases this
 * acquire took), once (also by disposing). */
export interface TakenPermits extends AsyncDisposable {
  readonly permits: number;
  /** True once a lease of these permits was lost (ZooKeeper; never on Redis). */
  readonly isLost: boolean;
  release(): Promise<void>;
}

/** Redis: permits belong to nobody (anyone may release). ZooKeeper: permits are leases of this
 * client, freed with its session. No re-entry and no owner per flow: release what an acquire took
 * through its TakenPermits. Acquire resolves null when waitMs runs out, as a lock's does. */
export class Semaphore {
  readonly name: string;
  trySetPermits(permits: number): Promise<boolean>;
  addPermits(delta: number): Promise<void>;
  acquire(options?: SemaphoreAcquireOptions & { waitMs?: undefined }): Promise<TakenPermits>;
  acquire(options: SemaphoreAcquireOptions): Promise<TakenPermits | null>;
  release(permits?: number): Promise<void>;
  availablePermits(): Promise<number>;
  drainPermits(): Promise<number>;
}

export interface PermitAcquireOptions {
  waitMs?: number;
  /** The permit expires after this many ms unless released (no watchdog). */
  leaseMs?: number;
  signal?: AbortSignal;
}

export interface TakenPermit extends AsyncDisposable {
  /** 32 hexadecimal characters, as Redisson shows permit ids. */
  readonly id: string;
  release(): Promise<void>;
}

/** Redisson's RPermitExpirableSemaphore (Redis only). Emits 'lost' when a permit taken through
 * this client is lost. */
export class PermitExpirableSemaphore extends EventEmitter {
  readonly name: string;
  readonly kind: 'permit';
  trySetPermits(permits: number): Promise<boolean>;
  addPermits(delta: number): Promise<void>;
  /** The permit, or null when `waitMs` ran out. */
  acquire(options?: PermitAcquireOptions & { waitMs?: undefined }): Promise<TakenPermit>;
  acquire(options: PermitAcquireOptions): Promise<TakenPermit | null>;
  release(id: string): Promise<void>;
  tryRelease(id: string): Promise<boolean>;
  availablePermits(): Promise<number>;
  on(event: 'lost', listener: (event: LostEvent) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}

export class CountDownLatch {
  readonly name: string;
  trySetCount(count: number): Promise<boolean>;
  countDown(): Promise<void>;
  count(): Promise<number>;
  /** True when the count reached zero, false when waitMs ran out. */
  wait(options?: { waitMs?: number; signal?: AbortSignal }): Promise<boolean>;
  delete(): Promise<boolean>;
}

/** An argument of a fenced write's command: bytes, text (UTF-8) or a number. */
export type FenceArg = string | Buffer | Uint8Array | number | bigint;

/** A reply of a fenced write's command: nil, an integer (a BigInt beyond 2^53), a status or UTF-8
 * bulk text, other bulk bytes, or an array. */
export type FenceReply = null | number | bigint | string | Buffer | FenceReply[];

/** The fence of one name on the lock server's own Redis (`client.fence(name)`). */
export class Fence {
  readonly name: string;
  /** Run `commands` (each `[name, ...args]`) atomically if `token` is not older than any token
   * this fence accepted; their replies. A StaleTokenError, with nothing run, otherwise. */
  write(token: number | bigint, commands: FenceArg[][]): Promise<FenceReply[]>;
  /** The largest token this fence accepted, or null. */
  accepted(): Promise<number | null>;
}

/** A `pg` Client or PoolClient, or a `mysql2` connection (callback or promise API). */
export type SqlClient = { query: (...args: any[]) => any };

/** Fencing at the resource for data in PostgreSQL or MySQL/MariaDB. */
export const fence: {
  /** The statements the guards send, by name (`postgres_guard`, `mysql_read`, ...). */
  readonly statements: Readonly<Record<string, string>>;
  /** Make the `polylock_fence` table (once, outside the writing transaction on MySQL). */
  setup(client: SqlClient): Promise<void>;
  /** Take the name's guard row with `token` in the transaction `client` is in: a
   * StaleTokenError when a larger token was accepted (roll back then). */
  sql(client: SqlClient, name: string, token: number | bigint): Promise<void>;
};

/** Who leads an election. */
export interface Leader {
  identity: string;
  /** A fencing token, greater for every new leader. */
  term: number;
}

/** A candidate in a leader election (Curator's LeaderLatch on ZooKeeper, etcd's
 * concurrency.Election, a Redisson lock plus a leader record on Redis). */
export class Election {
  readonly name: string;
  readonly identity: string;
  /** The term while this candidate leads, else null. */
  readonly term: number | null;
  readonly isLeader: boolean;
  /** True when elected; false when waitMs ran out (the candidacy is withdrawn). */
  campaign(options?: { waitMs?: number; signal?: AbortSignal }): Promise<boolean>;
  /** True if this candidate led. */
  resign(): Promise<boolean>;
  leader(): Promise<Leader | null>;
  candidates(): Promise<string[]>;
  /** The leader now, then after each change (null: nobody), until the signal aborts or waitMs
   * passes with no change. */
  observe(options?: { waitMs?: number; signal?: AbortSignal }): AsyncGenerator<Leader | null, void>;
}

export class Client {
  readonly id: string;
  readonly closed: boolean;
  /** True while the connection to ZooKeeper (or etcd) is down but the session may live. */
  readonly suspended: boolean;
  /** A reentrant lock handle; the owner of each acquisition is the flow (see Lock). */
  lock(name: string): Lock;
  /** Granted in the order of asking (Redisson's RFairLock; on ZooKeeper the ordinary lock). */
  fairLock(name: string): Lock;
  mutex(path: string): Lock;
  readWriteLock(name: string): ReadWriteLock;
  semaphore(name: string): Semaphore;
  permitExpirableSemaphore(name: string): PermitExpirableSemaphore;
  countDownLatch(name: string): CountDownLatch;
  election(name: string, identity: string): Election;
  /** The fence of `name`: fenced writes of Redis commands (Redis only). */
  fence(name: string): Fence;
  /** `client.fence(name).write(token, commands)`. */
  fencedWrite(name: string, token: number | bigint, commands: FenceArg[][]): Promise<FenceReply[]>;
  /** `client.lock(name).using(fn, options)`: `fn` runs under the lock, in a section of its own;
   * `signal` aborts on a loss. */
  using<T>(name: string, fn: (signal: AbortSignal) => Promise<T> | T, options?: AcquireOptions): Promise<T>;
  /**
   * A function that runs `fn` under a lock named by `name` (or by `name(...args)`); `fn` gets the
   * call's arguments and then an AbortSignal that fires when the lock is lost.
   */
  withLock<A extends unknown[], T>(
    name: string | ((...args: A) => string),
    fn: (...args: [...A, AbortSignal]) => Promise<T> | T,
    options?: AcquireOptions,
  ): (...args: A) => Promise<T>;
  /** This client's metrics alone, in the Prometheus text format (the whole process's:
   * `metrics.text()`). */
  metricsText(): string;
  close(): Promise<void>;
}

/** What `metrics.register` needs of a prom-client Registry (any version from 13). */
export interface PromRegistryLike {
  registerMetric(metric: any): void;
  getSingleMetric(name: string): any;
}

/** What `metrics.registerOtel` needs of an OpenTelemetry Meter (`@opentelemetry/api`). */
export interface OtelMeterLike {
  createObservableCounter(name: string, options?: { description?: string; unit?: string }): any;
  createObservableGauge(name: string, options?: { description?: string; unit?: string }): any;
  addBatchObservableCallback(callback: (result: any) => void, observables: any[]): void;
  removeBatchObservableCallback(callback: (result: any) => void, observables: any[]): void;
}

/**
 * The process's metrics: every client added up (closed clients' counts kept). Labels `kind`,
 * `backend`, `outcome`/`reason`; `name` only for names matching a client's `metricNames`.
 */
export interface PolylockMetrics {
  /**
   * Register polylock's families (counters, gauges, histograms of seconds) in a prom-client
   * Registry, default prom-client's global `register` (prom-client must then be installed); each
   * scrape reads the process's snapshot. Idempotent; returns the registry.
   */
  register<R extends PromRegistryLike>(registry?: R): R;
  /** Every client of the process in the Prometheus text format (0.0.4). */
  text(): string;
  /**
   * Observable instruments on an OpenTelemetry Meter: counters (named without `_total`), gauges,
   * and each histogram as the counters `<name>_count` and `<name>_sum`. Returns a function that
   * removes them from collection.
   */
  registerOtel(meter: OtelMeterLike): () => void;
}

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

/** One log event of polylock's core. */
export interface LogRecord {
  level: LogLevel;
  /** `polylock::acquire`, `polylock::release` (debug), `polylock::hold` (a hold lost), or the
   * core module that logged it. */
  target: string;
  message: string;
  /** The lock (or semaphore) it is about, or null. */
  lock: string | null;
  /** Its other fields (`kind`, `owner`, `outcome`, `wait_ms`, `token`...), as text. */
  fields: Record<string, string>;
}

/**
 * The core's log events of the whole process: 'log' for every event at `level` or above: errors,
 * warnings (a hold lost, a renewal failed, a connection suspended) and info (a connection back);
 * debug (every acquire and release with its wait) only when `NODE_DEBUG=polylock` or
 * `POLYLOCK_LOG=debug` was set when polylock loaded. `NODE_DEBUG=polylock` also prints them
 * (util.debuglog). Listeners never keep the process alive.
 */
export interface PolylockEvents extends EventEmitter {
  /** The lowest level forwarded: `debug`, `info`, or `none` when the process has a `tracing`
   * subscriber of its own. */
  readonly level: 'debug' | 'info' | 'none';
  on(event: 'log', listener: (record: LogRecord) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: 'log', listener: (record: LogRecord) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
  off(event: 'log', listener: (record: LogRecord) => void): this;
  off(event: string | symbol, listener: (...args: any[]) => void): this;
}

/** Connect; every URL form with its options: the URL table in docs/src/contract.md#urls. */
export function connect(url: string, options?: ConnectOptions): Promise<Client>;
/**
 * Run `fn()` as a flow of its own: no section of the calling flow is visible inside it, so its
 * acquisitions exclude the caller's (what a new asyncio task or thread is in Python and Java).
 * Returns what `fn` returns.
 */
export function newFlow<T>(fn: () => T): T;
/** A RedLock over 3 to 16 independent Redis masters; only `lock()` exists on its client. */
export function connectRedlock(urls: string[], options?: ConnectOptions): Promise<Client>;
export const version: string;
/**
 * The driver of this thread's calls: `loop` (Redis commands on sockets watched by this thread's
 * own event loop: the default) or `runtime` (every call on polylock's runtime threads; set
 * `POLYLOCK_NODE_DRIVER=runtime`, and the choice of hosts without libuv).
 */
export function driver(): 'loop' | 'runtime';
/** The process's metrics: prom-client, OpenTelemetry, the Prometheus text. */
export const metrics: PolylockMetrics;
/** The core's log events ('log'). */
export const events: PolylockEvents;
