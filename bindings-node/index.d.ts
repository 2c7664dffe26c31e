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
  /** `reentrant`, `mutex`, `read` or `write`. */
  kind: string;
  /** `Expired`, `Deleted`, `RenewalFailed`, `SessionExpired` or `ClientClosed`. */
  reason: string;
}

export interface Hold extends AsyncDisposable {
  readonly fencingToken: number | null;
  release(): Promise<void>;
}

/** `code` is `ERR_POLYLOCK_<NAME>`: TIMEOUT, NOT_OWNER, LOCK_LOST, CONNECTION, AUTH, BACKEND,
 * INVALID_STATE, INTERNAL, CANCELLED, UNSUPPORTED, UPGRADE_NOT_SUPPORTED, ... Bad arguments are TypeError/RangeError
 * with code ERR_POLYLOCK_INVALID_ARGUMENT. */
export class PolylockError extends Error {
  readonly code: string;
}

export class Lock extends EventEmitter {
  readonly name: string;
  /** `reentrant`, `mutex`, `read` or `write`. */
  readonly kind: 'reentrant' | 'mutex' | 'read' | 'write';
  /** How many times this handle holds the lock (the handle is the owner). */
  readonly holdCount: number;
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

/** Many readers or one writer; this handle is the owner of both halves. A read holder asking for
 * the write half rejects at once with ERR_POLYLOCK_UPGRADE_NOT_SUPPORTED. */
export class ReadWriteLock {
  readonly name: string;
  readLock(): Lock;
  writeLock(): Lock;
}

export class Client {
  readonly id: string;
  readonly closed: boolean;
  lock(name: string): Lock;
  mutex(path: string): Lock;
  readWriteLock(name: string): ReadWriteLock;
  close(): Promise<void>;
}

export function connect(url: string, options?: ConnectOptions): Promise<Client>;
export const version: string;
