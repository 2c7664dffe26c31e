'use strict';
// polylock beside node-redlock (5.0.0-beta.2 with ioredis) in one run, with Redis PING through
// ioredis as the limit.   cd bindings-node/bench && npm install && node bench.js [URL] [seconds]
const Redis = require('ioredis');
const { default: Redlock } = require('redlock');
const { connect } = require('polylock');

const url = process.argv[2] || 'redis://127.0.0.1:6379';
const seconds = Number(process.argv[3] || 3);
const run = Math.random().toString(16).slice(2, 10);

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

async function main() {
  const redis = new Redis(url);
  const redlock = new Redlock([redis], { retryCount: -1, retryDelay: 10 });
  const client = await connect(url);
  const ping = await pairs(() => redis.ping());
  const pl = client.lock(`bench-node:${run}:polylock`);
  const plPair = async () => { await pl.acquire(); await pl.release(); };
  const rlPair = async () => { const l = await redlock.acquire([`bench-node:${run}:redlock`], 30000); await l.release(); };
  const a = await pairs(plPair);
  const b = await pairs(rlPair);
  const pl64 = await concurrent((i) => { const l = client.lock(`bench-node:${run}:pl:${i}`); return async () => { await l.acquire(); await l.release(); }; }, 64);
  const rl64 = await concurrent((i) => async () => { const l = await redlock.acquire([`bench-node:${run}:rl:${i}`], 30000); await l.release(); }, 64);
  const f = (x) => x.toFixed(1).padStart(8);
  console.log('polylock (Node) beside node-redlock 5.0.0-beta.2 + ioredis, same run');
  console.log(`  ioredis PING round trip           p50 ${f(ping.p50)} us   (the limit, through ioredis)`);
  console.log(`  uncontended pair, polylock        p50 ${f(a.p50)} us   ${a.rate.toFixed(0).padStart(7)} pairs/s`);
  console.log(`  uncontended pair, node-redlock    p50 ${f(b.p50)} us   ${b.rate.toFixed(0).padStart(7)} pairs/s`);
  console.log(`  uncontended ratio                     ${(a.rate / b.rate).toFixed(2)} x   (target >= 1.3)`);
  console.log(`  64 handles, distinct keys         polylock ${pl64.toFixed(0)} pairs/s   node-redlock ${rl64.toFixed(0)} pairs/s   ratio ${(pl64 / rl64).toFixed(2)} x (target >= 3)`);
  await client.close();
  redis.disconnect();
}

main().catch((e) => { console.error(e); process.exit(1); });
