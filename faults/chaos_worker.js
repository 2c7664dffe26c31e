'use strict';
// A worker of the randomized checker (faults/chaos.py) on the Node binding: the same operations,
// drawn from the same mulberry32 generator, as faults/chaos_worker.py (which documents the
// output). Each actor is an async flow of its own (polylock.newFlow), and the actors share one
// client per backend and one handle per primitive: two flows on one shared handle must exclude
// each other. Sections run under `lock.using(fn)` or between `await lock.acquire()` and
// `hold.release()`; a re-entrant acquire inside them re-enters; a wait is cancelled with an
// AbortSignal.
//
// node chaos_worker.js PLAN WORKER_ID SEED SECONDS ACTORS

const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const polylock = require(path.join(__dirname, '..', 'bindings-node'));

/** mulberry32, as the other workers have it. */
function rng(seed) {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t = ((t + Math.imul(t ^ (t >>> 7), t | 61)) | 0) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
}

function fnv(h, v) {
  for (let k = 0; k < 4; k++) h = Math.imul(h ^ ((v >>> (8 * k)) & 0xff), 0x01000193) >>> 0;
  return h;
}

function emit(fields) {
  process.stdout.write(JSON.stringify(fields) + '\n');
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Per primitive: how many actors of this worker are in a section of it (till their release ends).
const inside = new Map();
const enter = (prim) => inside.set(prim, (inside.get(prim) ?? 0) + 1);
const leave = (prim) => inside.set(prim, inside.get(prim) - 1);
const code = (e) => String((e && e.code) || (e && e.name) || e).replace(/^ERR_POLYLOCK_/, '');

function readPlan(file) {
  const plan = { urls: {}, lease: {}, prims: [] };
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const f = line.split('\t');
    if (f[0] === 'resource') plan.resource = f[1];
    else if (f[0] === 'watchdog_ms') plan.watchdogMs = Number(f[1]);
    else if (f[0] === 'session_ms') plan.sessionMs = Number(f[1]);
    else if (f[0] === 'backend') {
      plan.urls[f[1]] = f[2];
      plan.lease[f[1]] = f[3] === '1';
    } else if (f[0] === 'prim') {
      plan.prims.push({ backend: f[1], id: f[2], kind: f[3], name: f[4], permits: Number(f[5]) });
    }
  }
  return plan;
}

/** The actor's connection to the resource: one request at a time. */
class Conn {
  constructor(addr) {
    const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))];
    this.sock = net.createConnection({ host, port });
    this.sock.setNoDelay(true);
    this.buf = '';
    this.waiting = [];
    this.sock.on('data', (d) => {
      this.buf += d.toString();
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i).trim();
        this.buf = this.buf.slice(i + 1);
        this.waiting.shift()?.(line === 'OK');
      }
    });
    this.ready = new Promise((resolve, reject) => {
      this.sock.once('connect', resolve);
      this.sock.once('error', reject);
    });
  }

  ask(op, prim, sid, token, mode) {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.sock.write(`${op} ${prim} ${sid} ${token} ${mode}\n`);
    });
  }

  close() {
    this.sock.end();
  }
}

/** One operation's ten draws, read as every worker reads them. */
function decide(d, plan, prims) {
  const sel = d[0] % 100;
  const excl = prims.filter((p) => p.kind === 'lock' || p.kind === 'fair');
  let what;
  let cands;
  if (sel < 40) [what, cands] = ['section', excl];
  else if (sel < 50) [what, cands] = ['try', excl];
  else if (sel < 62) [what, cands] = ['cancel', prims];
  else if (sel < 80) [what, cands] = ['rw', prims.filter((p) => p.kind === 'rw')];
  else if (sel < 95) [what, cands] = ['sem', prims.filter((p) => p.kind === 'sem')];
  else [what, cands] = ['idle', []];
  const prim = cands.length ? cands[d[1] % cands.length] : null;
  const leaseOk = prim && plan.lease[prim.backend];
  return {
    what,
    prim,
    writeMode: (d[1] >>> 16) % 3 === 0,
    waitMs: 100 + (d[2] % 2400),
    leaseMs: leaseOk && d[3] % 100 < 35 ? 150 + ((d[3] >>> 8) % 900) : undefined,
    writes: 1 + (d[4] % 3),
    permits: prim && prim.kind === 'sem' ? 1 + ((d[4] >>> 8) % prim.permits) : 1,
    sleeps: [0, 1, 2, 3].map((i) => 10 + (((d[5] >>> (8 * i)) & 0xff) % 70)),
    reenter: d[6] % 100 < 30,
    cancelMs: 30 + (d[7] % 600),
    api: d[8] % 2,
    idleMs: 10 + (d[9] % 40),
  };
}

class Actor {
  constructor(plan, handles, name, seed, deadline) {
    Object.assign(this, { plan, handles, name, deadline });
    this.next = rng(seed);
    this.conn = new Conn(plan.resource);
    this.prims = plan.prims.filter((p) => handles.has(p.id));
    this.n = 0;
  }

  op(what, prim, result, extra = {}) {
    emit({ t: 'op', actor: this.name, op: what, prim: prim ? prim.id : null, result, ...extra });
  }

  error(what, prim, e) {
    emit({ t: 'error', actor: this.name, op: what, prim: prim ? prim.id : null, error: code(e), message: String(e && e.message).slice(0, 200) });
  }

  sid() {
    this.n += 1;
    return `${this.name}-${this.n}`;
  }

  async run() {
    await this.conn.ready;
    let digest = 0x811c9dc5;
    let ops = 0;
    while (Date.now() < this.deadline) {
      const d = Array.from({ length: 10 }, () => this.next());
      if (ops < 64) for (const v of d) digest = fnv(digest, v);
      ops += 1;
      const o = decide(d, this.plan, this.prims);
      try {
        await this.one(o);
      } catch (e) {
        this.error(o.what, o.prim, e);
        await sleep(100);
      }
    }
    this.conn.close();
    emit({ t: 'done', actor: this.name, ops, digest: digest.toString(16).padStart(8, '0') });
  }

  async one(o) {
    if (!o.prim) {
      await sleep(o.idleMs);
      this.op('idle', null, 'ok');
      return;
    }
    const h = this.handles.get(o.prim.id);
    if (o.prim.kind === 'sem') return this.sem(o, h);
    let lock = h;
    let mode = 'x';
    if (o.prim.kind === 'rw') [lock, mode] = o.writeMode ? [h.writeLock(), 'w'] : [h.readLock(), 'r'];
    return this.lock(o, lock, mode);
  }

  /** BEGIN, the WRITEs (the first inside a re-entrant acquire when asked), END; stops at the
   * first refusal. Returns true when a re-entry saw a loss. */
  async steps(o, lock, sid, token, mode) {
    let told = false;
    const prim = o.prim.id;
    if (!(await this.conn.ask('BEGIN', prim, sid, token, mode))) return told;
    for (let i = 0; i < o.writes; i++) {
      await sleep(o.sleeps[i]);
      let inner = null;
      if (i === 0 && o.reenter) {
        try {
          inner = await lock.acquire({ waitMs: 0, leaseMs: o.leaseMs });
          if (!inner) this.error('reenter', o.prim, { code: 'NotReentered', message: 'a re-entrant try by the holder failed' });
          else if (lock.holdCount !== 2 && !lock.isLost) {
            this.error('reenter', o.prim, { code: 'HoldCount', message: `hold count ${lock.holdCount} inside a re-entry` });
          }
        } catch (e) {
          if (code(e) !== 'LOCK_LOST') throw e;
          told = true;
        }
      }
      const ok = await this.conn.ask('WRITE', prim, sid, token, mode);
      if (inner) {
        try {
          await inner.release();
          this.op('reenter', o.prim, 'ok');
        } catch (e) {
          if (code(e) !== 'LOCK_LOST') throw e;
          told = true;
          this.op('reenter', o.prim, 'LockLost');
        }
      }
      if (!ok || told) return told;
    }
    await sleep(o.sleeps[3]);
    await this.conn.ask('END', prim, sid, token, mode);
    return told;
  }

  async lock(o, lock, mode) {
    const leaseMs = o.leaseMs;
    if (o.api === 1 && o.what !== 'try' && o.what !== 'cancel') {
      // lock.using: a section of its own; a loss aborts its signal and rejects with LOCK_LOST.
      const sid = this.sid();
      let told = false;
      let acquired = false;
      let result = 'ok';
      try {
        await lock.using(
          async (signal) => {
            acquired = true;
            this.op(o.what, o.prim, 'acquired', { api: 'using' });
            enter(o.prim.id);
            told = (await this.steps(o, lock, sid, lock.fencingToken ?? 0, mode)) || signal.aborted || lock.isLost;
          },
          { waitMs: o.waitMs, leaseMs },
        );
      } catch (e) {
        if (code(e) === 'TIMEOUT' && !acquired) {
          this.op(o.what, o.prim, 'timeout', { api: 'using' });
          return;
        }
        if (code(e) !== 'LOCK_LOST') throw e;
        result = 'LockLost';
        told = true;
      } finally {
        if (acquired) leave(o.prim.id); // once `using` released
      }
      emit({ t: 'section', id: sid, prim: o.prim.id, told, release: result, lease: leaseMs ?? null });
      this.op('release', o.prim, result, { api: 'using' });
      return;
    }
    let hold;
    if (o.what === 'cancel') {
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), o.cancelMs);
      try {
        hold = await lock.acquire({ signal: ac.signal, leaseMs });
      } catch (e) {
        if (e && e.name === 'AbortError') {
          this.op('cancel', o.prim, 'cancelled');
          // The actors share the handle: outside a section of its own, a flow's holdCount is
          // the handle's sole holder's, so only ask when no other actor of this worker holds it.
          if (!inside.get(o.prim.id) && lock.holdCount !== 0) {
            this.error('cancel', o.prim, { code: 'HeldAfterCancel', message: `hold count ${lock.holdCount} after an aborted wait` });
          }
          return;
        }
        throw e;
      } finally {
        clearTimeout(timer);
      }
    } else if (o.what === 'try') {
      hold = await lock.tryLock({ leaseMs });
    } else {
      hold = await lock.acquire({ waitMs: o.waitMs, leaseMs });
    }
    if (!hold) {
      this.op(o.what, o.prim, o.what === 'try' ? 'busy' : 'timeout');
      return;
    }
    this.op(o.what, o.prim, 'acquired');
    const sid = this.sid();
    enter(o.prim.id);
    try {
      await this.section(o, lock, hold, sid, mode);
    } finally {
      leave(o.prim.id);
    }
  }

  async section(o, lock, hold, sid, mode) {
    const leaseMs = o.leaseMs;
    let told = await this.steps(o, lock, sid, hold.fencingToken ?? 0, mode);
    told = told || hold.isLost;
    let result = 'ok';
    for (let i = 0; i < 20; i++) {
      try {
        await hold.release();
        result = 'ok';
      } catch (e) {
        if (code(e) === 'LOCK_LOST') {
          result = 'LockLost';
          told = true;
        } else {
          result = `error ${code(e)}`;
          await sleep(100);
          continue;
        }
      }
      break;
    }
    emit({ t: 'section', id: sid, prim: o.prim.id, told, release: result, lease: leaseMs ?? null });
    this.op('release', o.prim, result);
  }

  async sem(o, sem) {
    let taken;
    const ac = o.what === 'cancel' ? new AbortController() : null;
    const timer = ac ? setTimeout(() => ac.abort(), o.cancelMs) : null;
    try {
      taken = await sem.acquire(ac ? { permits: o.permits, signal: ac.signal } : { permits: o.permits, waitMs: o.waitMs });
    } catch (e) {
      if (e && e.name === 'AbortError') {
        this.op('cancel', o.prim, 'cancelled');
        return;
      }
      if (code(e) === 'TIMEOUT') {
        this.op(o.what, o.prim, 'timeout');
        return;
      }
      throw e;
    } finally {
      if (timer) clearTimeout(timer);
    }
    if (taken === null) {
      // An acquire with waitMs resolves null when the wait runs out.
      this.op(o.what, o.prim, 'timeout');
      return;
    }
    this.op(o.what, o.prim, 'acquired');
    const sid = this.sid();
    const prim = o.prim.id;
    if (await this.conn.ask('BEGIN', prim, sid, o.permits, 's')) {
      for (let i = 0; i < o.writes; i++) {
        await sleep(o.sleeps[i]);
        await this.conn.ask('WRITE', prim, sid, o.permits, 's');
      }
      await sleep(o.sleeps[3]);
      await this.conn.ask('END', prim, sid, o.permits, 's');
    }
    let told = taken.isLost;
    let result = 'ok';
    try {
      await taken.release();
    } catch (e) {
      if (code(e) !== 'LOCK_LOST') throw e;
      result = 'LockLost';
      told = true;
    }
    emit({ t: 'section', id: sid, prim, told, release: result, permits: o.permits });
    this.op('release', o.prim, result);
  }
}

async function main() {
  const [file, wid, seed, seconds, actors] = process.argv.slice(2);
  const plan = readPlan(file);
  const deadline = Date.now() + Number(seconds) * 1000;
  const clients = {};
  for (const [b, url] of Object.entries(plan.urls)) {
    clients[b] = await polylock.connect(url, { watchdogTimeoutMs: plan.watchdogMs, sessionTimeoutMs: plan.sessionMs });
  }
  const handles = new Map();
  for (const p of plan.prims) {
    const c = clients[p.backend];
    try {
      if (p.kind === 'lock') handles.set(p.id, c.lock(p.name));
      else if (p.kind === 'fair') handles.set(p.id, c.fairLock(p.name));
      else if (p.kind === 'rw') handles.set(p.id, c.readWriteLock(p.name));
      else {
        const s = c.semaphore(p.name);
        await s.trySetPermits(p.permits);
        handles.set(p.id, s);
      }
    } catch (e) {
      if (code(e) !== 'UNSUPPORTED') throw e;
      emit({ t: 'op', actor: '-', op: 'handle', prim: p.id, result: 'unsupported' });
    }
  }
  const flows = [];
  for (let i = 0; i < Number(actors); i++) {
    const s = (Number(seed) + Math.imul(i + 1, 0x9e3779b9)) >>> 0;
    const a = new Actor(plan, handles, `${wid}.${i}`, s, deadline);
    flows.push(polylock.newFlow(() => a.run()));
  }
  await Promise.all(flows);
  for (const c of Object.values(clients)) await c.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
