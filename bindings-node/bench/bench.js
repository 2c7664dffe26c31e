'use strict';
// polylock on both of its Node drivers beside node-redlock (5.0.0-beta.2) and redis-semaphore (5),
// both on ioredis, in one run, with Redis PING through ioredis as the limit.   cd bindings-node/bench && npm install && node bench.js [URL] [seconds]
const Redis = require('ioredis');
const { default: Redlock } = require('redlock');
const { spawnSync } = require('node:child_process');
const { Mutex } = require('redis-semaphore');
const polylock = require('polylock');
const { connect, connectRedlock } = polylock;

const url = process.argv[2] || 'redis://127.0.0.1:6379';
const seconds = Number(process.argv[3] || 3);
const run = Math.random().toString(16).slice(2, 10);
// The three RedLock masters of scripts/servers.sh.
const masters = (process.env.POLYLOCK_REDLOCK_URLS || 'redis://127.0.0.1:6381,redis://127.0.0.1:6382,redis://127.0.0.1:6383').split(',');

async function pairs(pair, n = 3000) {
  for (let i = 0; i < 200; i++) await pair();
  const times = [];
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await pair();
    times.push(performance.now() - t);
  }
  const rate = n / ((performance.now() - started) / 1e3);
  times.sort((a, b) => a - b);
  return { p50: times[n >> 1] * 1e3, rate };
}

async function concurrent(makePair, handles) {
  const pairsOf = await Promise.all(Array.from({ length: handles }, (_, i) => makePair(i)));
  let count = 0;
  let stop = false;
  const started = performance.now();
  const timer = setTimeout(() => (stop = true), seconds * 1e3);
  await Promise.all(pairsOf.map(async (pair) => {
    while (!stop) {
      await pair();
      count++;
    }
  }));
  clearTimeout(timer);
  return count / ((performance.now() - started) / 1e3);
}

// polylock's own figures, on the driver this process takes (see polylock.driver()). `others`:
// pairs to measure in the same rounds, alternating with polylock's (this machine's round trip
// changes over seconds; alternating rounds keep the comparison fair).
async function polylockFigures(url, others = {}) {
  const client = await connect(url);
  const pl = client.lock(`bench-node:${run}:polylock:${process.pid}`);
  const fl = client.fairLock(`bench-node:${run}:fair:${process.pid}`);
  const cases = {
    polylock: async () => { await pl.acquire(); await pl.release(); },
    fair: async () => { await fl.acquire(); await fl.release(); },
    ...others,
  };
  const rounds = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let round = 0; round < 5; round++) {
    for (const [k, pair] of Object.entries(cases)) rounds[k].push(await pairs(pair, 600));
  }
  const median = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];
  const pairsOf = Object.fromEntries(Object.entries(rounds).map(([k, rs]) => [k, { p50: median(rs.map((r) => r.p50)), rate: median(rs.map((r) => r.rate)) }]));
  const c64 = await concurrent((i) => { const l = client.lock(`bench-node:${run}:pl:${process.pid}:${i}`); return async () => { await l.acquire(); await l.release(); }; }, 64);
  await client.close();
  return { driver: polylock.driver(), pair: pairsOf.polylock, fair: pairsOf.fair, c64, others: pairsOf };
}

// The runtime driver's figures, from a child process (the driver is chosen per process).
function runtimeFigures() {
  const r = spawnSync(process.execPath, [__filename, url, String(seconds)], {
    env: { ...process.env, POLYLOCK_NODE_DRIVER: 'runtime', POLYLOCK_BENCH_CHILD: '1' },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`the runtime-driver run failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function main() {
  if (process.env.POLYLOCK_BENCH_CHILD) {
    console.log(JSON.stringify(await polylockFigures(url)));
    return;
  }
  const redis = new Redis(url);
  const redlock = new Redlock([redis], { retryCount: -1, retryDelay: 10 });
  const mutex = new Mutex(redis, `bench-node:${run}:semaphore`, { lockTimeout: 30000, acquireTimeout: 30000 });
  const loop = await polylockFigures(url, {
    ping: () => redis.ping(),
    redlock: async () => { const l = await redlock.acquire([`bench-node:${run}:redlock`], 30000); await l.release(); },
    semaphore: async () => { await mutex.acquire(); await mutex.release(); },
  });
  const { ping, redlock: b, semaphore: s } = loop.others;
  const rt = runtimeFigures();
  const rl64 = await concurrent((i) => async () => { const l = await redlock.acquire([`bench-node:${run}:rl:${i}`], 30000); await l.release(); }, 64);
  const sem64 = await concurrent((i) => { const m = new Mutex(redis, `bench-node:${run}:sem:${i}`, { lockTimeout: 30000, acquireTimeout: 30000 }); return async () => { await m.acquire(); await m.release(); }; }, 64);
  const f = (x) => x.toFixed(1).padStart(8);
  const r = (x) => x.toFixed(0).padStart(7);
  console.log('polylock (Node) beside node-redlock 5.0.0-beta.2 and redis-semaphore 5 on ioredis, same run');
  console.log('  (pairs: medians of 5 alternating rounds of 600; the runtime driver in a child process)');
  console.log(`  ioredis PING round trip                   p50 ${f(ping.p50)} us   (the limit, through ioredis)`);
  for (const [label, x] of [[`polylock, ${loop.driver} driver`, loop], [`polylock, ${rt.driver} driver`, rt]]) {
    console.log(`  uncontended pair, ${label.padEnd(24)} p50 ${f(x.pair.p50)} us   ${r(x.pair.rate)} pairs/s   64 handles ${r(x.c64)} pairs/s`);
  }
  for (const x of [loop, rt]) {
    console.log(`  fair-lock pair, ${(x.driver + ' driver').padEnd(25)} p50 ${f(x.fair.p50)} us   ${(x.fair.p50 / x.pair.p50).toFixed(2)} x the plain pair (target <= 1.3)`);
  }
  console.log(`  uncontended pair, node-redlock             p50 ${f(b.p50)} us   ${r(b.rate)} pairs/s   64 handles ${r(rl64)} pairs/s`);
  console.log(`  uncontended pair, redis-semaphore          p50 ${f(s.p50)} us   ${r(s.rate)} pairs/s   64 handles ${r(sem64)} pairs/s`);
  console.log(`  loop driver / node-redlock: uncontended ${(loop.pair.rate / b.rate).toFixed(2)} x (target >= 1.3), 64 handles ${(loop.c64 / rl64).toFixed(2)} x (target >= 2)`);
  console.log(`  runtime driver / node-redlock: uncontended ${(rt.pair.rate / b.rate).toFixed(2)} x, 64 handles ${(rt.c64 / rl64).toFixed(2)} x`);
  redis.disconnect();
  await redlockOverThree(f);
}

// RedLock over three masters: polylock's and node-redlock's pairs beside a PING of all three at once
// through ioredis (the physical limit of a quorum round).
async function redlockOverThree(f) {
  const ioredis = masters.map((u) => new Redis(u));
  const nodeRedlock = new Redlock(ioredis, { retryCount: -1, retryDelay: 10 });
  const client = await connectRedlock(masters);
  const pl = client.lock(`bench-node:${run}:redlock-pl`);
  const rounds = { ping: [], pl: [], rl: [] };
  const cases = {
    ping: () => Promise.all(ioredis.map((r) => r.ping())),
    pl: async () => { await pl.acquire(); await pl.release(); },
    rl: async () => { const l = await nodeRedlock.acquire([`bench-node:${run}:redlock-rl`], 30000); await l.release(); },
  };
  // Alternating rounds, so that all three see the same machine.
  for (let r = 0; r < 5; r++) {
    for (const [k, pair] of Object.entries(cases)) rounds[k].push((await pairs(pair, 600)).p50);
  }
  const med = (v) => v.sort((a, b) => a - b)[v.length >> 1];
  const [ping, a, b] = [med(rounds.ping), med(rounds.pl), med(rounds.rl)];
  console.log('RedLock over 3 masters (medians of 5 alternating rounds of 600 pairs)');
  console.log(`  ioredis PING of all 3 at once     p50 ${f(ping)} us   (the limit of one quorum round)`);
  console.log(`  RedLock pair, polylock            p50 ${f(a)} us   ${(a / ping).toFixed(2)} x the PING`);
  console.log(`  RedLock pair, node-redlock        p50 ${f(b)} us   ${(b / ping).toFixed(2)} x the PING   (polylock ${(b / a).toFixed(2)} x faster)`);
  await client.close();
  for (const r of ioredis) r.disconnect();
}

main().catch((e) => { console.error(e); process.exit(1); });
