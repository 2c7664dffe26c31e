'use strict';
// The Node runner of polylock's conformance suite (conformance/README.md): runs every scenario of
// conformance/scenarios/*.json against the servers of scripts/servers.sh with the polylock npm
// package (bindings-node), and prints `conformance node: N passed, N failed, N not applicable`.
//
//   node runner.js [--scenarios DIR] [--only TEXT] [--jobs N] [--vocabulary] [-v]
//
// Each actor is a flow of its own (polylock.newFlow): a Node owner is the async call chain.

const fs = require('node:fs');
const path = require('node:path');
const polylock = require(process.env.POLYLOCK_NODE_PACKAGE || path.join(__dirname, '../../../bindings-node'));

const RUNTIME = 'node';

const VOCABULARY = {
  connect: '`await polylock.connect(url)` (`polylock.connectRedlock(urls)`)',
  owner: 'the async call chain (a flow): `using`/`withLock` callbacks, the code after `await lock.acquire()`; `newFlow(fn)` starts another',
  acquire: '`await lock.acquire({ waitMs })` → a `LockHold`',
  wait_forever: '`waitMs` omitted (or `null`)',
  wait_none: '`{ waitMs: 0 }` (`lock.tryLock()`)',
  not_acquired: '`null` (locks, semaphores, expiring permits alike: the acquire resolves no hold)',
  lease_watchdog: '`leaseMs` omitted',
  lease_fixed: '`lock.acquire({ leaseMs })`',
  release: '`await held.release()` (`await lock.release()`, `await using held = ...`)',
  reenter: '`lock.acquire()` again inside the flow\'s section of the lock',
  hold_count: '`lock.holdCount`',
  is_locked: '`await lock.isLocked()`',
  fencing_token: '`held.fencingToken`, `lock.fencingToken`',
  remaining_lease: '`await lock.remainingLeaseMs()` → `null` / `Infinity` / ms',
  extend: '`await held.extend(ms)` (node-redlock\'s `extend`), `lock.extend(ms)`',
  force_unlock: '`await lock.forceUnlock()` → was it held',
  lost_listener: '`lock.on(\'lost\', ({ name, kind, reason }) => ...)`; `using` aborts its `signal`',
  lost_reasons: '`\'EXPIRED\'`, `\'DELETED\'`, `\'RENEWAL_FAILED\'`, `\'SESSION_EXPIRED\'`, `\'CLIENT_CLOSED\'`',
  is_lost: '`held.isLost`, `held.lostReason`, `lock.isLost`',
  suspended: '`client.suspended`',
  section: '`await lock.using(fn, { waitMs })`, `client.withLock(name, fn, options)`, `await lock.hold()`',
  timeout_error: '`LockTimeoutError` (a `PolylockError`, `code` `\'ERR_POLYLOCK_TIMEOUT\'`, `number` 3)',
  base_error: '`PolylockError`: `.code` (`\'ERR_POLYLOCK_NOT_OWNER\'`), `.number` (4); a subclass per kind; `polylock.errorNumbers`',
  not_owner_error: '`NotOwnerError`',
  read_write: '`client.readWriteLock(name).readLock()` / `.writeLock()`',
  semaphore_acquire: '`await sem.acquire({ permits, waitMs })` → `TakenPermits` / `null`',
  permit_acquire: '`await pes.acquire({ waitMs, leaseMs })` → `{ id, release() }` / `null`',
  latch_wait: '`await latch.wait({ waitMs })` → `true` open / `false`',
  multi: '`new polylock.MultiLock([a, b])`',
  election:
    '`client.election(name, identity)`: `await campaign({ waitMs })` → `true` (`term`), `resign()`, `leader()` → `{ identity, term }`, `candidates()`',
  close: '`await client.close()`',
};

const REASONS = new Set(['EXPIRED', 'DELETED', 'RENEWAL_FAILED', 'SESSION_EXPIRED', 'CLIENT_CLOSED']);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class RunnerError extends Error {}

/** An error as an outcome: polylock's carry their code and number; others are foreign. */
function errorWord(e) {
  const coded =
    e instanceof polylock.PolylockError ||
    ((e instanceof TypeError || e instanceof RangeError) && e.code === 'ERR_POLYLOCK_INVALID_ARGUMENT');
  if (!coded || typeof e.code !== 'string' || !e.code.startsWith('ERR_POLYLOCK_')) {
    return { outcome: `foreign:${e && e.name}`, message: String(e && e.message) };
  }
  const name = e.code.slice('ERR_POLYLOCK_'.length);
  const number = polylock.errorNumbers && polylock.errorNumbers[name];
  if (typeof e.number !== 'number' || e.number !== number) {
    return { outcome: `error:${name} without its number (${e.number})`, message: e.message };
  }
  return { outcome: `error:${name}`, message: e.message, error: e };
}

/**
 * An actor: a flow of its own that runs the steps it is given, one after another, all in one
 * async function. A Node owner is the async call chain, and a bare `await lock.acquire()` opens
 * its section in the calling context: so the acquire is called straight from this loop (the
 * handle is looked up first), and the steps after it run inside its section, as the code after
 * `await lock.acquire()` in a program does.
 */
function startActor(run, actor) {
  const queue = [];
  let wake = null;
  const next = () =>
    new Promise((resolve) => {
      if (queue.length) resolve(queue.shift());
      else wake = resolve;
    });
  polylock.newFlow(async () => {
    for (;;) {
      const job = await next();
      let got;
      try {
        const h = job.step.on === undefined ? null : await run.handle(actor, job.step.on);
        got = await run.doOp(actor, job.step, h);
      } catch (e) {
        got = e instanceof RunnerError ? { runnerError: e.message } : errorWord(e);
      }
      job.resolve(got);
    }
  });
  return {
    submit(step) {
      return new Promise((resolve) => {
        const job = { step, resolve };
        if (wake) {
          const w = wake;
          wake = null;
          w(job);
        } else queue.push(job);
      });
    },
  };
}

class Run {
  constructor(suite, scenario, backend, prefix) {
    this.suite = suite;
    this.scenario = scenario;
    this.backend = backend;
    const spec = suite.backends[backend];
    this.zk = Boolean(spec.paths);
    this.urls = [];
    if (spec.env) {
      const value = process.env[spec.env] || '';
      let urls = spec.list ? value.split(',') : [value];
      if (spec.query) urls = urls.map((u) => u + (u.includes('?') ? '&' : '?') + spec.query);
      this.urls = urls;
    }
    this.prefix = prefix;
    this.actors = scenario.actors || suite.default_actors;
    this.workers = {};
    this.clients = {};
    this.handles = {};
    this.permitsSet = new Set();
    this.saved = {};
    this.lost = {};
    this.bg = {};
    const o = suite.client;
    this.options = {
      watchdogTimeoutMs: o.watchdog_timeout_ms,
      connectTimeoutMs: o.connect_timeout_ms,
      commandTimeoutMs: o.command_timeout_ms,
      sessionTimeoutMs: o.session_timeout_ms,
      fairWaitTimeoutMs: o.fair_wait_timeout_ms,
    };
  }

  worker(actor) {
    if (!this.workers[actor]) this.workers[actor] = startActor(this, actor);
    return this.workers[actor];
  }

  connect(url) {
    return Array.isArray(url) ? polylock.connectRedlock(url, this.options) : polylock.connect(url, this.options);
  }

  client(actor) {
    const cid = this.actors[actor];
    if (!this.clients[cid]) this.clients[cid] = this.connect(this.urls.length > 1 ? this.urls : this.urls[0]);
    return this.clients[cid];
  }

  nameOf(obj) {
    const o = this.scenario.objects[obj];
    if ('literal' in o) return o.literal;
    const base = o.name || obj.toLowerCase();
    return this.zk ? `/${this.prefix}/${base}` : `${this.prefix}:${base}`;
  }

  async handle(actor, obj) {
    const key = `${this.actors[actor]}/${obj}`;
    if (!this.handles[key]) this.handles[key] = this.make(actor, obj);
    return this.handles[key];
  }

  async make(actor, obj) {
    const client = await this.client(actor);
    const o = this.scenario.objects[obj];
    const name = this.nameOf(obj);
    let h;
    switch (o.type) {
      case 'lock': h = client.lock(name); break;
      case 'fair': h = client.fairLock(name); break;
      case 'mutex': h = client.mutex(name); break;
      case 'read': h = client.readWriteLock(name).readLock(); break;
      case 'write': h = client.readWriteLock(name).writeLock(); break;
      case 'semaphore': h = client.semaphore(name); break;
      case 'permit_semaphore': h = client.permitExpirableSemaphore(name); break;
      case 'latch': h = client.countDownLatch(name); break;
      case 'multi': h = new polylock.MultiLock(await Promise.all(o.of.map((m) => this.handle(actor, m)))); break;
      case 'election': h = client.election(name, actor); break;
      default: throw new RunnerError(`unknown object type ${o.type}`);
    }
    if ('permits' in o && !this.permitsSet.has(obj)) {
      this.permitsSet.add(obj);
      await h.trySetPermits(o.permits);
    }
    return h;
  }

  waitMs(step) {
    const wait = step.wait === undefined ? 'forever' : step.wait;
    if (wait === 'none') return { waitMs: 0 };
    // Node's two spellings of "forever": waitMs left out, and null.
    if (wait === 'forever') return step.spelling === 'alt' ? { waitMs: null } : {};
    return { waitMs: wait };
  }

  /** One step of `actor` on its handle `h`. Not `async`: an acquire must be called before this
   * returns (see startActor); the other operations return promises or values alike. */
  doOp(actor, step, h) {
    switch (step.op) {
      case 'acquire': {
        const lease = step.lease === undefined ? {} : { leaseMs: step.lease };
        return h.acquire({ ...this.waitMs(step), ...lease }).then((held) => {
          if (held === null) return 'not_acquired';
          if (held && typeof held.release === 'function') return { outcome: 'acquired', token: held.fencingToken };
          return `acquire resolved ${held}`;
        });
      }
      default:
        return this.doOtherOp(actor, step, h);
    }
  }

  async doOtherOp(actor, step, h) {
    const { op } = step;
    const obj = step.on;
    if (op === 'connect') {
      const c = await this.connect(step.url);
      await c.close();
      return 'ok';
    }
    if (op === 'suspended') return (await this.client(actor)).suspended;
    if (op === 'close') {
      await (await this.client(actor)).close();
      return 'ok';
    }
    if (op === 'error_table') {
      const table = polylock.errorNumbers;
      if (!table) return 'no error table';
      const names = Object.keys(table).sort((x, y) => table[x] - table[y]);
      if (names.some((n, i) => table[n] !== i + 1)) return 'numbers out of order';
      return names;
    }
    const lease = step.lease === undefined ? {} : { leaseMs: step.lease };
    switch (op) {
      case 'make':
        return 'ok';
      case 'release':
        await h.release();
        return 'ok';
      case 'held':
        return h.holdCount;
      case 'is_locked':
        return h.isLocked();
      case 'token': {
        const t = h.fencingToken;
        return t === null ? 'error:NOT_OWNER' : { outcome: 'token', token: t };
      }
      case 'remaining_lease': {
        const left = await h.remainingLeaseMs();
        if (left === null) return 'not_held';
        if (left === Infinity) return 'no_expiry';
        return { outcome: 'expires', ms: left };
      }
      case 'extend':
        await h.extend(step.ms);
        return 'ok';
      case 'force_unlock':
        return h.forceUnlock();
      case 'is_lost':
        return h.isLost;
      case 'listen': {
        const seen = (this.lost[`${actor}/${obj}`] = this.lost[`${actor}/${obj}`] || []);
        h.on('lost', (ev) => seen.push(ev));
        return 'ok';
      }
      case 'wait_lost': {
        const seen = this.lost[`${actor}/${obj}`];
        if (!seen) throw new RunnerError('wait_lost without listen');
        const kinds = new Set(h instanceof polylock.MultiLock ? h.members.map((m) => m.kind) : [h.kind]);
        const deadline = Date.now() + (step.within || 5000);
        while (Date.now() < deadline) {
          const ev = seen[0];
          if (ev) {
            if (!REASONS.has(ev.reason)) return `lost with a reason outside the contract: ${ev.reason}`;
            if (!kinds.has(ev.kind)) return `lost event of kind ${ev.kind}, not ${[...kinds]}`;
            return `lost:${ev.reason}`;
          }
          await sleep(20);
        }
        return 'not_lost';
      }
      case 'section':
        try {
          return await h.using(() => 'ran', this.waitMs(step));
        } catch (e) {
          if (e instanceof polylock.PolylockError && e.code === 'ERR_POLYLOCK_TIMEOUT' && !(e instanceof polylock.LockTimeoutError)) {
            return 'the timeout is not a LockTimeoutError';
          }
          throw e;
        }
      case 'sem_set':
        return h.trySetPermits(step.n);
      case 'sem_acquire': {
        const taken = await h.acquire({ permits: step.n || 1, ...this.waitMs(step) });
        if (taken === null) return 'not_acquired';
        return taken && typeof taken.release === 'function' ? 'acquired' : `acquire resolved ${taken}`;
      }
      case 'sem_release':
        await h.release(step.n || 1);
        return 'ok';
      case 'sem_available':
        return h.availablePermits();
      case 'sem_add':
        await h.addPermits(step.n);
        return 'ok';
      case 'sem_drain':
        return h.drainPermits();
      case 'permit_acquire': {
        const taken = await h.acquire({ ...this.waitMs(step), ...lease });
        if (taken === null) return 'not_acquired';
        return taken && typeof taken.id === 'string' ? { outcome: 'acquired', id: taken.id } : `acquire resolved ${taken}`;
      }
      case 'permit_release':
        await h.release(this.saved[step.id]);
        return 'ok';
      case 'permit_available':
        return h.availablePermits();
      case 'latch_set':
        return h.trySetCount(step.n);
      case 'latch_count_down':
        await h.countDown();
        return 'ok';
      case 'latch_count':
        return h.count();
      case 'latch_wait': {
        const open = await h.wait(this.waitMs(step));
        return open === true ? 'open' : open === false ? 'not_open' : `wait resolved ${open}`;
      }
      case 'campaign':
        return h.campaign(this.waitMs(step)).then((leading) =>
          leading === true ? { outcome: 'leading', token: h.term } : leading === false ? 'not_leading' : `campaign resolved ${leading}`,
        );
      case 'resign':
        return h.resign();
      case 'is_leader':
        return h.isLeader;
      case 'leader':
        return h.leader().then((l) => (l === null ? 'none' : { outcome: `leader:${l.identity}`, token: l.term }));
      case 'candidates':
        return h.candidates();
      default:
        throw new RunnerError(`unknown op ${op}`);
    }
  }

  compareToken(want, got) {
    if (typeof got !== 'number') return `no token (${got})`;
    const op = want[0];
    const prev = this.saved[want.slice(1)];
    if (prev === undefined) return `no saved token ${want.slice(1)}`;
    if ((op === '>' && got > prev) || (op === '=' && got === prev)) return null;
    return `${got} is not ${op} ${prev}`;
  }

  check(step, got) {
    if (got && got.runnerError) return `runner: ${got.runnerError}`;
    let expect = step.expect;
    if (expect !== null && typeof expect === 'object' && !Array.isArray(expect)) {
      expect = this.backend in expect ? expect[this.backend] : expect['*'];
    }
    const extra = got !== null && typeof got === 'object' && !Array.isArray(got) ? got : {};
    const word = 'outcome' in extra ? extra.outcome : got;
    if (step.op === 'token') return this.compareToken(expect, extra.token);
    if (JSON.stringify(word) !== JSON.stringify(expect)) {
      return `expected ${JSON.stringify(expect)}, got ${JSON.stringify(word)} ${extra.message || ''}`;
    }
    if (step.message && !(extra.message || '').includes(step.message)) {
      return `the message does not name ${step.message}: ${extra.message}`;
    }
    if (step.absent) {
      const shown = `${extra.message || ''} ${extra.error ? `${extra.error.stack} ${JSON.stringify(extra.error)}` : ''}`;
      if (shown.includes(step.absent)) return `the error shows ${JSON.stringify(step.absent)}: ${shown}`;
    }
    if ('token' in extra) {
      if (step.token) {
        const why = this.compareToken(step.token, extra.token);
        if (why) return `token: ${why}`;
      }
      if (step.save) this.saved[step.save] = extra.token;
    }
    if ('id' in extra && step.save) this.saved[step.save] = extra.id;
    if ('ms' in extra) {
      if ('max_ms' in step && extra.ms > step.max_ms) return `${extra.ms} ms left, more than ${step.max_ms}`;
      if ('min_ms' in step && extra.ms < step.min_ms) return `${extra.ms} ms left, less than ${step.min_ms}`;
    }
    return null;
  }

  async run() {
    try {
      for (const [i, step] of this.scenario.steps.entries()) {
        if (step.op === 'sleep') {
          await sleep(step.ms);
          continue;
        }
        if (step.op === 'join') {
          const [bstep, pending] = this.bg[step.actor];
          delete this.bg[step.actor];
          const why = this.check(bstep, await pending);
          if (why) return `step ${i} (join ${bstep.op}): ${why}`;
          continue;
        }
        const pending = this.worker(step.actor).submit(step);
        if (step.bg) {
          this.bg[step.actor] = [step, pending];
          continue;
        }
        const why = this.check(step, await pending);
        if (why) return `step ${i} (${step.op} ${step.on || ''}): ${why}`;
      }
      return null;
    } catch (e) {
      return `runner: ${e && e.stack}`;
    } finally {
      for (const c of Object.values(this.clients)) {
        try {
          await (await c).close();
        } catch {
          // a failed connect, or closed by the scenario
        }
      }
    }
  }
}

async function main() {
  const args = process.argv.slice(2);
  const arg = (flag, dflt) => {
    const i = args.indexOf(flag);
    return i >= 0 ? args[i + 1] : dflt;
  };
  if (args.includes('--vocabulary')) {
    // The class of each kind, as the package exports it: each subclass says its own code.
    const byCode = {};
    for (const [exported, value] of Object.entries(polylock)) {
      if (typeof value === 'function' && value.prototype instanceof polylock.PolylockError) {
        byCode[new value('').code] = exported;
      }
    }
    const errors = Object.entries(polylock.errorNumbers).map(([name, number]) => {
      let says = byCode[`ERR_POLYLOCK_${name}`] ? `\`${byCode[`ERR_POLYLOCK_${name}`]}\`` : '`PolylockError`';
      if (name === 'INVALID_ARGUMENT') says = '`TypeError` / `RangeError`';
      if (name === 'NULL_PARAMETER') says = 'none (C only)';
      return { number, name, says: `${says}, \`ERR_POLYLOCK_${name}\`` };
    });
    console.log(JSON.stringify({ runtime: RUNTIME, says: VOCABULARY, errors }));
    return 0;
  }
  const root = arg('--scenarios', path.join(__dirname, '..', '..'));
  const only = arg('--only', null);
  const jobs = Number(arg('--jobs', '4'));
  const verbose = args.includes('-v');
  const suite = JSON.parse(fs.readFileSync(path.join(root, 'suite.json'), 'utf8'));
  const instances = [];
  let na = 0;
  let serial = 0;
  for (const f of fs.readdirSync(path.join(root, 'scenarios')).filter((f) => f.endsWith('.json')).sort()) {
    const doc = JSON.parse(fs.readFileSync(path.join(root, 'scenarios', f), 'utf8'));
    for (const sc of doc.scenarios) {
      if (only && !sc.id.includes(only)) continue;
      for (const b of sc.backends) {
        const nas = sc.not_applicable || {};
        if (RUNTIME in nas || `${RUNTIME}@${b}` in nas) {
          na++;
          continue;
        }
        serial++;
        instances.push([`${sc.id}@${b}`, new Run(suite, sc, b, `pc/${RUNTIME}-${process.pid}-${serial}`)]);
      }
    }
  }
  let passed = 0;
  let failed = 0;
  const results = new Array(instances.length);
  let nextIndex = 0;
  const lane = async () => {
    while (nextIndex < instances.length) {
      const i = nextIndex++;
      const timeout = new Promise((r) => setTimeout(() => r('did not finish within 120 s'), 120000).unref());
      results[i] = await Promise.race([instances[i][1].run(), timeout]);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, jobs) }, lane));
  for (const [i, [label]] of instances.entries()) {
    if (results[i] === null) {
      passed++;
      if (verbose) console.log(`ok   ${label}`);
    } else {
      failed++;
      console.log(`FAIL ${label}: ${results[i]}`);
    }
  }
  console.log(`conformance ${RUNTIME}: ${passed} passed, ${failed} failed, ${na} not applicable`);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
