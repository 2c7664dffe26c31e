'use strict';
// A seckill (flash sale) buyer in Node, the same buyer as examples/rust/seckill.rs: the stock lives
// in Redis (ioredis), one polylock lock keeps buyers from selling one item twice. Prints one JSON
// line: purchases and lock-wait p50/p99 in ms.
//   node examples/node/seckill_buyer.js --url redis://127.0.0.1:6379 [--lock-url zk://...] --name goods [--max N]
const Redis = require('ioredis');
const { connect } = require('polylock');

function args() {
  const a = { url: 'redis://127.0.0.1:6379', lockUrl: null, name: 'goods', max: Infinity, delayMs: 1, sections: null, startAt: null };
  const v = process.argv.slice(2);
  for (let i = 0; i + 1 < v.length; i += 2) {
    const [k, x] = [v[i], v[i + 1]];
    if (k === '--url') a.url = x;
    else if (k === '--lock-url') a.lockUrl = x;
    else if (k === '--name') a.name = x;
    else if (k === '--max') a.max = Number(x);
    else if (k === '--delay-ms') a.delayMs = Number(x);
    else if (k === '--sections') a.sections = x; // write each critical section as "start_us end_us token"
    else if (k === '--start-at') a.startAt = Number(x); // wall-clock ms since the epoch to start at
    else throw new Error(`unknown option ${k}`);
  }
  return a;
}

async function main() {
  const a = args();
  const lockUrl = a.lockUrl || a.url;
  const lockName = lockUrl.startsWith('zk://') ? `/seckill/${a.name}` : `seckill:${a.name}`;
  const [stockKey, soldKey, tokenKey] = ['stock', 'sold', 'last-token'].map((k) => `seckill:${a.name}:${k}`);
  const redis = new Redis(a.url);
  const client = await connect(lockUrl);
  // Each sale is a fenced write on the Redis of the stock (the lock may be elsewhere): a buyer
  // whose lease ended while it was paused cannot sell after a later buyer did.
  const fence = lockUrl === a.url ? client : await connect(a.url);
  const lock = client.lock(lockName);
  const waits = [];
  const sections = [];
  // Microseconds on the machine's monotonic clock (process.hrtime is CLOCK_MONOTONIC), which every
  // buyer of the demo stamps its sections with: Node's wall clocks (Date.now, timeOrigin) can be
  // off from the system's by a millisecond or more, too much to compare sections across processes.
  const sectionUs = () => process.hrtime.bigint() / 1000n;
  let bought = 0;
  try {
    if (a.startAt !== null) await new Promise((r) => setTimeout(r, Math.max(0, a.startAt - Date.now())));
    while (bought < a.max) {
      const asked = performance.now();
      const done = await lock.using(async () => {
        const start = sectionUs();
        waits.push(performance.now() - asked);
        const stock = Number((await redis.get(stockKey)) || 0);
        const token = lock.fencingToken;
        if (stock <= 0) {
          sections.push(`${start} ${sectionUs()} ${token}\n`);
          return true;
        }
        if (token <= Number((await redis.get(tokenKey)) || 0)) throw new Error(`fencing token ${token} went back`);
        await new Promise((r) => setTimeout(r, a.delayMs));
        const sold = Number((await redis.get(soldKey)) || 0);
        await fence.fencedWrite(lockName, token, [['SET', stockKey, stock - 1], ['SET', soldKey, sold + 1],
          ['SET', tokenKey, token]]);
        sections.push(`${start} ${sectionUs()} ${token}\n`);
        return false;
      });
      if (done) break;
      bought += 1;
    }
  } finally {
    await client.close();
    if (fence !== client) await fence.close();
    redis.disconnect();
  }
  if (a.sections) require('fs').writeFileSync(a.sections, sections.join(''));
  waits.sort((x, y) => x - y);
  const pct = (q) => (waits.length ? waits[Math.floor((waits.length - 1) * q)] : 0);
  console.log(JSON.stringify({ purchases: bought, wait_p50_ms: +pct(0.5).toFixed(3), wait_p99_ms: +pct(0.99).toFixed(3) }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
