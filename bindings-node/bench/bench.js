'use strict';
// polylock beside node-redlock (5.0.0-beta.2 with ioredis) in one run, with Redis PING through
// ioredis as the limit.   cd bindings-node/bench && npm install && node bench.js [URL] [seconds]
const Redis = require('ioredis');
const { default: Redlock } = require('redlock');
const { connect, connectRedlock } = require('polylock');

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
