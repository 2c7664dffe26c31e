'use strict';
// The driver of Node calls (driver.rs): worker threads, process exit, keep-alive, abort, a Redis
// restart and many calls in flight. run-tests.sh runs this file (and the whole suite) on both
// drivers: the loop driver (the default) and POLYLOCK_NODE_DRIVER=runtime.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const { spawn, spawnSync } = require('node:child_process');
const net = require('node:net');
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const polylock = require('..');

const REDIS = process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379';
const unique = (p) => `polylock-node:${p}:${randomUUID()}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const here = path.join(__dirname, '..');
const wanted = process.env.POLYLOCK_NODE_DRIVER === 'runtime' ? 'runtime' : 'loop';

test(`calls take the ${wanted} driver`, () => {
  assert.equal(polylock.driver(), wanted);
});

test('20 worker threads lock, some exit holding a lock without closing, and all exit cleanly', () => {
  const name = unique('workers');
  const script = `
    const { Worker, isMainThread, workerData, parentPort } = require('node:worker_threads');
    const polylock = require(${JSON.stringify(here)});
    if (isMainThread) {
      let done = 0, codes = [];
      for (let i = 0; i < 20; i++) {
        const w = new Worker(__filename, { eval: false, workerData: i });
        w.on('message', (m) => { if (m !== 'ok') console.log('bad message', m); });
        w.on('exit', (code) => { codes.push(code); if (++done === 20) {
          console.log(JSON.stringify({ codes, driver: polylock.driver() }));
        } });
      }
    } else {
      (async () => {
        const c = await polylock.connect(${JSON.stringify(REDIS)});
        const l = c.lock(${JSON.stringify(name)});
        for (let k = 0; k < 5; k++) { await l.acquire({ waitMs: 20000 }); await l.release(); }
        if (polylock.driver() !== ${JSON.stringify(wanted)}) throw new Error('driver ' + polylock.driver());
        parentPort.postMessage('ok');
        if (workerData % 2 === 0) await c.close();
        else await c.lock(${JSON.stringify(name)} + ':' + workerData).acquire(); // held at exit
      })().catch((e) => { console.error(e); process.exit(3); });
    }`;
  const file = path.join(os.tmpdir(), `polylock-workers-${randomUUID()}.js`);
  fs.writeFileSync(file, script);
  try {
    const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 60000 });
    assert.equal(r.signal, null, `killed by ${r.signal}: ${r.stderr}`);
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim().split('\n').pop());
    assert.deepEqual(out.codes, Array(20).fill(0));
  } finally {
    fs.rmSync(file, { force: true });
  }
});

test('a process holding a lock with nothing in flight exits by itself', () => {
  const name = unique('exit');
  const script = `
    const polylock = require(${JSON.stringify(here)});
    (async () => {
      const c = await polylock.connect(${JSON.stringify(REDIS)});
      await c.lock(${JSON.stringify(name)}).acquire();
      console.log('held on ' + polylock.driver());
    })();`;
  const started = Date.now();
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20000 });
  assert.equal(r.signal, null, 'the process did not exit by itself');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), `held on ${wanted}`);
  assert.ok(Date.now() - started < 15000);
});

test('a watchdog-held lock in an idle process stays held past its lease', async () => {
  const name = unique('idle');
  const script = `
    const polylock = require(${JSON.stringify(here)});
    (async () => {
      const c = await polylock.connect(${JSON.stringify(REDIS)}, { watchdogTimeoutMs: 600 });
      await c.lock(${JSON.stringify(name)}).acquire();
      console.log('held');
      setTimeout(() => process.exit(0), 4000); // idle: only a timer keeps the process
    })();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((r) => child.on('exit', r));
  await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => d.toString().includes('held') && resolve());
    child.on('exit', () => reject(new Error('the child exited early')));
  });
  const c = await polylock.connect(REDIS);
  const l = c.lock(name);
  await sleep(2500); // four leases of 600 ms
  assert.equal(await l.isLocked(), true, 'the watchdog renewed the lease while the loop was idle');
  const lease = await l.remainingLeaseMs();
  assert.ok(lease > 0 && lease <= 600, `lease ${lease}`);
  await exited;
  await c.close();
});

test('an AbortSignal cancels a wait: it rejects at once, nothing stays subscribed, the next waiter gets in', async () => {
  const c = await polylock.connect(REDIS);
  const name = unique('abort');
  const a = c.lock(name);
  const b = c.lock(name);
  const d = c.lock(name);
  await a.acquire();
  const ac = new AbortController();
  // The waiters are flows of their own (this one holds the lock: its acquires would re-enter).
  const waiting = polylock.newFlow(() => b.acquire({ signal: ac.signal }));
  await sleep(100);
  const t = performance.now();
  ac.abort(new Error('stop'));
  await assert.rejects(waiting, /stop/);
  assert.ok(performance.now() - t < 5000, 'the abort ends the wait at once (the holder holds on)');
  const other = polylock.newFlow(() => d.acquire({ waitMs: 5000 }));
  await sleep(50);
  await a.release();
  assert.ok(await other);
  assert.equal(await b.isLocked(), true);
  await d.release();
  // The aborted waiter holds nothing, and once all are done no subscription is left on the server.
  assert.equal(b.holdCount, 0);
  const numsub = () => Number(spawnSync('redis-cli', ['-u', REDIS, 'PUBSUB', 'NUMSUB', `redisson_lock__channel:{${name}}`], { encoding: 'utf8' }).stdout.trim().split('\n')[1]);
  for (let i = 0; i < 40 && numsub() !== 0; i++) await sleep(50);
  assert.equal(numsub(), 0, 'a subscription was left behind');
  await c.close();
});

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startRedis(port, dir) {
  const p = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    if (await new Promise((r) => { const s = net.connect(port, '127.0.0.1', () => { s.end(); r(true); }); s.on('error', () => r(false)); })) return p;
    await sleep(50);
  }
  throw new Error('redis-server did not start');
}

test('a Redis restart while calls wait: they go on or fail typed, none hangs, and later calls work', { timeout: 60000 }, async () => {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polylock-node-restart-'));
  let server = await startRedis(port, dir);
  const url = `redis://127.0.0.1:${port}`;
  const c = await polylock.connect(url, { commandTimeoutMs: 2000 });
  try {
    const name = unique('restart');
    const holder = c.lock(name);
    await holder.acquire();
    const waiters = Array.from({ length: 8 }, () => c.lock(name));
    const waits = waiters.map((w) => polylock.newFlow(() => w.acquire({ waitMs: 4000 })).then((v) => ({ v }), (e) => ({ e })));
    await sleep(200);
    server.kill('SIGKILL');
    await new Promise((r) => server.on('exit', r));
    await sleep(300);
    server = await startRedis(port, dir); // empty: the holder's lock is gone with the old server
    const results = await Promise.all(waits);
    let got = 0;
    for (const r of results) {
      if (r.e) {
        assert.ok(r.e instanceof polylock.PolylockError, String(r.e));
        assert.ok(['ERR_POLYLOCK_CONNECTION', 'ERR_POLYLOCK_TIMEOUT'].includes(r.e.code), r.e.code);
      } else if (r.v) {
        got++;
        await waiters[results.indexOf(r)].release().catch(() => {});
      }
    }
    // After the restart, calls work again (new connections on whichever driver).
    let ok = false;
    for (let i = 0; i < 50 && !ok; i++) {
      const l = c.lock(unique('after'));
      ok = await l.acquire({ waitMs: 0 }).then(async (v) => { if (v) await l.release(); return v; }, () => false);
      if (!ok) await sleep(100);
    }
    assert.ok(ok, `no call succeeded after the restart (waiters that got the lock: ${got})`);
  } finally {
    await c.close().catch(() => {});
    server.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('10,000 calls in flight on 64 handles keep a counter exact', { timeout: 120000 }, async () => {
  const c = await polylock.connect(REDIS);
  const names = Array.from({ length: 16 }, (_, i) => unique(`counter-${i}`));
  const handles = Array.from({ length: 64 }, (_, i) => c.lock(names[i % 16]));
  const inside = new Map(names.map((n) => [n, 0]));
  const chains = handles.map(() => Promise.resolve());
  let total = 0;
  let overlaps = 0;
  const all = [];
  for (let j = 0; j < 10000; j++) {
    const h = j % 64;
    const l = handles[h];
    // One call at a time per handle (64 flows over 16 locks).
    const p = chains[h].then(async () => {
      await l.acquire({ waitMs: 60000 });
      if (inside.get(l.name) !== 0) overlaps++;
      inside.set(l.name, inside.get(l.name) + 1);
      await l.isLocked(); // hold across a round trip
      inside.set(l.name, inside.get(l.name) - 1);
      total++;
      await l.release();
    });
    chains[h] = p;
    all.push(p);
  }
  await Promise.all(all);
  assert.equal(overlaps, 0);
  assert.equal(total, 10000);
  for (const n of names) assert.equal(await c.lock(n).isLocked(), false);
  await c.close();
});
