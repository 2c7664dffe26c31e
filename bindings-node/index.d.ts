// Type declarations of the polylock npm package (hand-written; the public API is index.js).
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
  /** `reentrant`, `mutex`, `read`, `write`, or `permit`. */
  kind: string;
  /** `Expired`, `Deleted`, `RenewalFailed`, `SessionExpired` or `ClientClosed`. */
  reason: string;
}

export interface Hold extends AsyncDisposable {
  /** Larger for every new holder (0 on an SQL client whose URL says `fencing=none`). */
  readonly fencingToken: number | null;
  release(): Promise<void>;
}

/** `code` is `ERR_POLYLOCK_<NAME>`: TIMEOUT, NOT_OWNER, LOCK_LOST, CONNECTION, AUTH, BACKEND,
 * INVALID_STATE, INTERNAL, PANIC (a panic caught in native code: a bug, please report it),
 * CANCELLED, UNSUPPORTED, UPGRADE_NOT_SUPPORTED, ... Bad arguments are TypeError/RangeError with
 * code ERR_POLYLOCK_INVALID_ARGUMENT. */
export class PolylockError extends Error {
  readonly code: string;
}

export class Lock extends EventEmitter {
  readonly name: string;
  /** `reentrant`, `mutex`, `read`, `write`, `fair`, or `multi`. */
  readonly kind: 'reentrant' | 'mutex' | 'read' | 'write' | 'fair' | 'multi';
  /** How many times this handle holds the lock (the handle is the owner). */
  readonly holdCount: number;
  /** Larger for every new holder (0 on an SQL client whose URL says `fencing=none`). */
  readonly fencingToken: number | null;
  readonly isLost: boolean;
  acquire(options?: AcquireOptions): Promise<boolean>;
  release(): Promise<void>;
  using<T>(fn: (signal: AbortSignal) => Promise<T> | T, options?: AcquireOptions): Promise<T>;
  hold(options?: AcquireOptions): Promise<Hold>;
  isLocked(): Promise<boolean>;
  forceUnlock(): Promise<boolean>;
  remainingLeaseMs(): Promise<number | null>;
  on(event: 'lost', listener: (event: LostEvent) => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
  once(event: 'lost', listener: (event: LostEvent) => void): this;
  once(event: string | symbol, listener: (...args: any[]) => void): this;
}

/** All of several locks or none, from any clients and servers; this handle owns the members'
 * holds. Members are taken in one order (name, server, kind) whatever order they are given in. */
export class MultiLock extends Lock {
  constructor(locks: Lock[]);
  readonly members: Lock[];
  /** Each member's fencing token for this handle's hold, in the order given (null where none). */
  readonly fencingTokens: Array<number | null>;
}

/** Many readers or one writer; this handle is the owner of both halves. A read holder asking for
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

/** Permits taken by one acquire; release them once (also by disposing). */
export interface TakenPermits extends AsyncDisposable {
  readonly permits: number;
  release(): Promise<void>;
}

/** Redis: permits belong to nobody (anyone may release). ZooKeeper: permits are leases of this
 * client, freed with its session. Acquire rejects with ERR_POLYLOCK_TIMEOUT when waitMs runs out. */
export class Semaphore {
  readonly name: string;
  trySetPermits(permits: number): Promise<boolean>;
  addPermits(delta: number): Promise<void>;
  acquire(options?: SemaphoreAcquireOptions): Promise<TakenPermits>;
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
  trySetPermits(permits: number): Promise<boolean>;
  addPermits(delta: number): Promise<void>;
  acquire(options?: PermitAcquireOptions): Promise<TakenPermit>;
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

export class Client {
  readonly id: string;
  readonly closed: boolean;
  lock(name: string): Lock;
  /** Granted in the order of asking (Redisson's RFairLock; on ZooKeeper the ordinary lock). */
  fairLock(name: string): Lock;
  mutex(path: string): Lock;
  readWriteLock(name: string): ReadWriteLock;
  semaphore(name: string): Semaphore;
  permitExpirableSemaphore(name: string): PermitExpirableSemaphore;
  countDownLatch(name: string): CountDownLatch;
  /** `client.lock(name).using(fn, options)`: `fn` runs under the lock; `signal` aborts on a loss. */
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
  close(): Promise<void>;
}

export function connect(url: string, options?: ConnectOptions): Promise<Client>;
/** A RedLock over 3 to 16 independent Redis masters; only `lock()` exists on its client. */
export function connectRedlock(urls: string[], options?: ConnectOptions): Promise<Client>;
export const version: string;
/**
 * The driver of this thread's calls: `loop` (Redis commands on sockets watched by this thread's
 * own event loop: the default) or `runtime` (every call on polylock's runtime threads; set
 * `POLYLOCK_NODE_DRIVER=runtime`, and the choice of hosts without libuv).
 */
export function driver(): 'loop' | 'runtime';
