'use strict';
// Metrics and logs (index.js, src/observe.rs) against real Redis: prom-client's Registry and
// OpenTelemetry's SDK read the core's process-wide snapshot; the core's log events reach
// `polylock.events` and NODE_DEBUG=polylock. Counters are the whole process's, so every check
// compares a series before and after.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { Registry } = require('prom-client');
const polylock = require('..');

const REDIS = process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379';
const here = path.join(__dirname, '..');
const unique = (p) => `polylock-node:metrics:${p}:${randomUUID()}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The value of one series in a Prometheus text, or undefined when the text has none. */
function sample(text, name, labels) {
  const want = `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')}} `;
  const line = text.split('\n').find((l) => l.startsWith(want));
  return line === undefined ? undefined : Number(line.slice(want.length));
}

const LOCK = { kind: 'lock', backend: 'redis' };
const FAMILIES = 13; // the core's metric families (core/src/metrics.rs)
const wait = (outcome) => ({ ...LOCK, outcome });

test('a prom-client Registry shows acquires by outcome, holds now and the hold time', async () => {
  const registry = new Registry();
  assert.equal(polylock.metrics.register(registry), registry);
  const c = await polylock.connect(REDIS);
  const other = await polylock.connect(REDIS);
  const lock = c.lock(unique('outcomes'));
  const count = (text, outcome) => sample(text, 'polylock_acquire_wait_seconds_count', wait(outcome)) ?? 0;
  const before = await registry.metrics();

  const held = await lock.acquire();
  const during = await registry.metrics();
  assert.equal(count(during, 'acquired'), count(before, 'acquired') + 1, during);
  assert.equal(sample(during, 'polylock_holds', LOCK), (sample(before, 'polylock_holds', LOCK) ?? 0) + 1);
  // A try from another client finds it taken: not_acquired.
  assert.equal(await other.lock(lock.name).tryLock(), null);
  await held.release();
  const after = await registry.metrics();
  assert.equal(count(after, 'not_acquired'), count(during, 'not_acquired') + 1, after);
  assert.equal(count(after, 'acquired'), count(during, 'acquired'));
  assert.equal(sample(after, 'polylock_holds', LOCK), sample(before, 'polylock_holds', LOCK) ?? 0);
  const holdCount = (t) => sample(t, 'polylock_hold_seconds_count', LOCK) ?? 0;
  assert.equal(holdCount(after), holdCount(during) + 1, 'the release observed the hold time');

  // A histogram: cumulative buckets with `le`, +Inf equal to _count, a _sum in seconds.
  const inf = sample(after, 'polylock_acquire_wait_seconds_bucket', { ...wait('acquired'), le: '+Inf' });
  assert.equal(inf, count(after, 'acquired'));
  const le60 = sample(after, 'polylock_acquire_wait_seconds_bucket', { ...wait('acquired'), le: '60' });
  const le0 = sample(after, 'polylock_acquire_wait_seconds_bucket', { ...wait('acquired'), le: '0.0005' });
  assert.ok(le0 <= le60 && le60 <= inf, `${le0} ${le60} ${inf}`);
  const sum = sample(after, 'polylock_acquire_wait_seconds_sum', wait('acquired'));
  assert.ok(sum > 0 && sum < 60 * inf, `sum ${sum}`);
  assert.match(after, /^# TYPE polylock_acquire_wait_seconds histogram$/m);
  assert.match(after, /^# TYPE polylock_holds gauge$/m);
  assert.match(after, /^# TYPE polylock_reentries_total counter$/m);
  await other.close();
  await c.close();
});

test('a name matched by metricNames has series of its own: the fencing token of its grant', async () => {
  const registry = polylock.metrics.register(new Registry());
  const prefix = unique('named');
  const c = await polylock.connect(REDIS, { metricNames: [`${prefix}:*`], service: 'metrics-test' });
  const lock = c.lock(`${prefix}:a`);
  const elsewhere = c.lock(unique('not-named'));
  const named = { name: lock.name, ...LOCK };
  const first = await lock.acquire();
  await (await elsewhere.acquire()).release();
  let text = await registry.metrics();
  const firstToken = first.fencingToken;
  assert.equal(sample(text, 'polylock_name_fencing_token', named), firstToken, text);
  assert.equal(sample(text, 'polylock_name_holds', named), 1);
  assert.equal(sample(text, 'polylock_name_acquires_total', { ...named, outcome: 'acquired' }), 1);
  assert.equal(text.includes(elsewhere.name), false, 'an unmatched name has no series');
  await first.release();
  const second = await lock.acquire();
  const token = second.fencingToken;
  assert.ok(token > firstToken, `${token} after ${firstToken}`);
  text = await registry.metrics();
  assert.equal(sample(text, 'polylock_name_fencing_token', named), token);
  await second.release();
  text = await registry.metrics();
  assert.equal(sample(text, 'polylock_name_holds', named), 0);
  assert.equal(sample(text, 'polylock_name_acquires_total', { ...named, outcome: 'acquired' }), 2);
  // The client's own text and the process's say the same of this name.
  assert.equal(sample(c.metricsText(), 'polylock_name_fencing_token', named), token);
  assert.equal(sample(polylock.metrics.text(), 'polylock_name_fencing_token', named), token);
  await c.close();
});

test('client.metricsText() is that client alone; metrics.text() the whole process', async () => {
  const a = await polylock.connect(REDIS);
  const b = await polylock.connect(REDIS);
  const held = await a.lock(unique('mine')).acquire();
  assert.equal(sample(a.metricsText(), 'polylock_holds', LOCK), 1);
  assert.equal(sample(b.metricsText(), 'polylock_holds', LOCK), undefined, b.metricsText());
  assert.ok(sample(polylock.metrics.text(), 'polylock_holds', LOCK) >= 1);
  await held.release();
  await b.close();
  await a.close();
});

test('the families registered up front are the snapshot\'s, with its help and type', async () => {
  // Every family of the core shows up: a named lock, a re-entry, renewals of a short watchdog, a
  // loss.
  const prefix = unique('families');
  const c = await polylock.connect(REDIS, { metricNames: [`${prefix}*`], watchdogTimeoutMs: 150 });
  const other = await polylock.connect(REDIS);
  const lock = c.lock(`${prefix}:x`);
  await lock.using(async () => {
    await lock.using(async () => {}); // a re-entry
    await sleep(200); // renewals every 50 ms
  });
  const lost = await lock.acquire();
  await other.lock(lock.name).forceUnlock();
  await sleep(200);
  await lost.release().catch(() => {});
  const snapshot = require('../native').load().metricsSnapshot(false);
  const got = snapshot.map((f) => ({ name: f.name, type: f.type, help: f.help }));
  const registry = polylock.metrics.register(new Registry());
  const want = registry.getMetricsAsArray().map(({ name, type, help }) => ({ name, type, help }));
  assert.equal(want.length, FAMILIES);
  assert.deepEqual(got, want);
  const text = await registry.metrics();
  assert.ok(sample(text, 'polylock_renewals_total', { backend: 'redis', outcome: 'ok' }) >= 1, text);
  assert.ok(sample(text, 'polylock_reentries_total', LOCK) >= 1, text);
  await other.close();
  await c.close();
});

test('register() is idempotent, defaults to the global registry, and survives resetMetrics()', async () => {
  const promClient = require('prom-client');
  const registry = new Registry();
  polylock.metrics.register(registry);
  polylock.metrics.register(registry);
  registry.resetMetrics(); // polylock's counts are the process's: nothing to reset
  assert.ok(registry.getSingleMetric('polylock_holds'));
  assert.equal(polylock.metrics.register(), promClient.register);
  assert.ok(promClient.register.getSingleMetric('polylock_acquire_wait_seconds'));
  assert.match(await promClient.register.metrics(), /^# TYPE polylock_hold_seconds histogram$/m);
  // Another metric of the same name is prom-client's error.
  const taken = new Registry();
  new promClient.Gauge({ name: 'polylock_holds', help: 'mine', registers: [taken] });
  assert.throws(() => polylock.metrics.register(taken), /polylock_holds has already been registered/);
  assert.throws(() => polylock.metrics.register({}), { name: 'TypeError', code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  // OpenMetrics: counters as `<name>_total` under a family without the suffix.
  const open = polylock.metrics.register(new Registry(Registry.OPENMETRICS_CONTENT_TYPE));
  const c = await polylock.connect(REDIS);
  await (await c.lock(unique('open')).acquire()).release();
  const text = await open.metrics();
  assert.match(text, /^# TYPE polylock_reentries counter$/m);
  assert.match(text, /^polylock_reentries_total\{kind="lock",backend="redis"\} \d+$/m);
  await c.close();
});

test('without prom-client, register() says to install it or pass a registry', () => {
  const script = `
    const Module = require('node:module');
    const resolve = Module._resolveFilename;
    Module._resolveFilename = function (request, ...rest) {
      if (request === 'prom-client') throw Object.assign(new Error('no prom-client'), { code: 'MODULE_NOT_FOUND' });
      return resolve.call(this, request, ...rest);
    };
    const polylock = require(${JSON.stringify(here)});
    try { polylock.metrics.register(); console.log('registered'); }
    catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }
    // A registry passed in needs no prom-client of polylock's own.
    const registry = { metrics: new Map(), registerMetric(m) { this.metrics.set(m.name, m); }, getSingleMetric(n) { return this.metrics.get(n); } };
    polylock.metrics.register(registry);
    console.log(registry.metrics.size);`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30000 });
  assert.equal(r.status, 0, r.stderr);
  const [err, size] = r.stdout.trim().split('\n');
  const e = JSON.parse(err);
  assert.equal(e.code, 'MODULE_NOT_FOUND');
  assert.match(e.message, /npm install prom-client/);
  assert.equal(Number(size), FAMILIES);
});

test('connect checks service and metricNames', async () => {
  await assert.rejects(polylock.connect(REDIS, { metricNames: 'orders:*' }), { name: 'TypeError', code: 'ERR_POLYLOCK_INVALID_ARGUMENT' });
  await assert.rejects(polylock.connect(REDIS, { metricNames: ['ok', 3] }), { name: 'TypeError' });
  await assert.rejects(polylock.connect(REDIS, { service: '' }), { name: 'RangeError' });
  const c = await polylock.connect(REDIS, { service: 'svc', metricNames: [] });
  await c.close();
});

test('a lost lock is a warn log event naming the lock, and a loss by reason', async () => {
  const registry = polylock.metrics.register(new Registry());
  const c = await polylock.connect(REDIS, { watchdogTimeoutMs: 600 });
  const other = await polylock.connect(REDIS);
  const lock = c.lock(unique('lost'));
  const losses = (t) => sample(t, 'polylock_losses_total', { ...LOCK, reason: 'deleted' }) ?? 0;
  const before = await registry.metrics();
  const records = [];
  const onLog = (r) => records.push(r);
  polylock.events.on('log', onLog);
  const logged = new Promise((resolve) => {
    const check = (r) => {
      if (r.lock === lock.name && r.level === 'warn') {
        polylock.events.off('log', check);
        resolve(r);
      }
    };
    polylock.events.on('log', check);
  });
  const held = await lock.acquire();
  await other.lock(lock.name).forceUnlock();
  // The timer also keeps the process alive: the log callback is weak by design.
  let timer;
  const timeout = new Promise((resolve) => (timer = setTimeout(resolve, 5000, null)));
  const record = await Promise.race([logged, timeout]);
  clearTimeout(timer);
  polylock.events.off('log', onLog);
  assert.ok(record, `no warn event for the lock; got ${JSON.stringify(records)}`);
  assert.equal(record.target.startsWith('polylock'), true);
  assert.match(record.message, /lock lost/);
  assert.equal(record.fields.kind, 'lock');
  assert.equal(typeof record.fields.owner, 'string');
  assert.equal(polylock.events.level, 'info', 'debug is off unless NODE_DEBUG or POLYLOCK_LOG asks');
  assert.equal(records.some((r) => r.level === 'debug'), false);
  await assert.rejects(held.release(), { code: 'ERR_POLYLOCK_LOCK_LOST' });
  assert.equal(losses(await registry.metrics()), losses(before) + 1);
  await other.close();
  await c.close();
});

test('NODE_DEBUG=polylock prints debug events and emits them; exiting mid-flight is clean', () => {
  const name = unique('debug');
  const script = `
    const polylock = require(${JSON.stringify(here)});
    const seen = [];
    polylock.events.on('log', (r) => { if (r.lock === ${JSON.stringify(name)}) seen.push(r.level + ' ' + r.target); });
    (async () => {
      const c = await polylock.connect(${JSON.stringify(REDIS)});
      const lock = c.lock(${JSON.stringify(name)});
      await (await lock.acquire()).release();
      await lock.acquire(); // held at exit: the exit hook releases it while events still flow
      for (let i = 0; i < 50; i++) c.lock(${JSON.stringify(name)} + i).tryLock().catch(() => {});
      await new Promise((r) => setTimeout(r, 50));
      console.log(JSON.stringify({ level: polylock.events.level, seen }));
      process.exit(0);
    })();`;
  const env = { ...process.env, NODE_DEBUG: 'polylock' };
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30000, env });
  assert.equal(r.signal, null, r.stderr);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  assert.equal(out.level, 'debug');
  assert.deepEqual(out.seen.slice(0, 3), ['debug polylock::acquire', 'debug polylock::release', 'debug polylock::acquire']);
  const line = r.stderr.split('\n').find((l) => l.includes(`lock=${name} `) && l.includes('polylock::acquire'));
  assert.match(line ?? r.stderr, new RegExp(`^POLYLOCK ${r.pid}: debug polylock::acquire: acquire of '.*' acquired after`));
  assert.match(line, /outcome=acquired/);
});

test('log events reach worker threads too, and a worker that ends leaves the process well', () => {
  const script = `
    const { Worker, isMainThread, parentPort } = require('node:worker_threads');
    const polylock = require(${JSON.stringify(here)});
    const name = ${JSON.stringify(unique('worker'))} + (isMainThread ? ':main' : ':worker');
    (async () => {
      const c = await polylock.connect(${JSON.stringify(REDIS)}, { watchdogTimeoutMs: 600 });
      const other = await polylock.connect(${JSON.stringify(REDIS)});
      const lost = new Promise((resolve) => polylock.events.on('log', (r) => { if (r.lock === name) resolve(r.level); }));
      const keep = setTimeout(() => {}, 10000);
      await c.lock(name).acquire();
      await other.lock(name).forceUnlock();
      const level = await lost;
      clearTimeout(keep);
      if (!isMainThread) { parentPort.postMessage(level); return; } // ends holding nothing, clients open
      const fromWorker = await new Promise((resolve, reject) => {
        const w = new Worker(__filename);
        w.on('message', resolve);
        w.on('error', reject);
      });
      console.log(JSON.stringify({ main: level, worker: fromWorker }));
    })();`;
  const file = path.join(require('node:os').tmpdir(), `polylock-worker-${process.pid}.js`);
  require('node:fs').writeFileSync(file, script);
  try {
    const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 30000 });
    assert.equal(r.signal, null, r.stderr);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout.trim()), { main: 'warn', worker: 'warn' });
  } finally {
    require('node:fs').rmSync(file, { force: true });
  }
});

test('OpenTelemetry: observable instruments read the snapshot at each collection', async () => {
  const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics');
  class Reader extends MetricReader {
    async onForceFlush() {}
    async onShutdown() {}
  }
  const reader = new Reader();
  const provider = new MeterProvider({ readers: [reader] });
  const remove = polylock.metrics.registerOtel(provider.getMeter('polylock-test'));
  const c = await polylock.connect(REDIS);
  const point = async (name, labels) => {
    const { resourceMetrics } = await reader.collect();
    const m = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((x) => x.descriptor.name === name);
    const p = m?.dataPoints.find((d) => Object.entries(labels).every(([k, v]) => d.attributes[k] === v));
    return p ? p.value : undefined;
  };
  const before = (await point('polylock_acquire_wait_seconds_count', wait('acquired'))) ?? 0;
  const holds = (await point('polylock_holds', LOCK)) ?? 0;
  const held = await c.lock(unique('otel')).acquire();
  assert.equal(await point('polylock_holds', LOCK), holds + 1);
  assert.equal(await point('polylock_acquire_wait_seconds_count', wait('acquired')), before + 1);
  assert.ok((await point('polylock_acquire_wait_seconds_sum', wait('acquired'))) > 0);
  await held.release();
  assert.equal(await point('polylock_holds', LOCK), holds);
  assert.equal(typeof (await point('polylock_reentries', LOCK)), 'number', 'counters drop _total');
  remove();
  const again = await c.lock(unique('otel')).acquire();
  assert.notEqual(await point('polylock_holds', LOCK), holds + 1, 'removed from collection');
  await again.release();
  assert.throws(() => polylock.metrics.registerOtel({}), { name: 'TypeError' });
  await provider.shutdown();
  await c.close();
});
