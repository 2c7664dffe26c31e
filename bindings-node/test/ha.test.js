'use strict';
// Highly available Redis from Node: the Sentinel group and the cluster of scripts/servers.sh.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const polylock = require('..');

const SENTINEL =
  process.env.POLYLOCK_SENTINEL_URL || 'redis+sentinel://127.0.0.1:26390,127.0.0.1:26391,127.0.0.1:26392/mymaster';
const CLUSTER =
  process.env.POLYLOCK_CLUSTER_URL ||
  'redis+cluster://127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004,127.0.0.1:7005,127.0.0.1:7006';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

for (const [kind, url] of [
  ['sentinel', SENTINEL],
  ['cluster', CLUSTER],
]) {
  test(`${kind}: locks exclude, waiters wake on the release, semaphores count`, async () => {
    const [a, b] = await Promise.all([polylock.connect(url), polylock.connect(url)]);
    const name = `polylock-node:ha:${randomUUID()}`;
    let count = 0;
    let inside = 0;
    let overlaps = 0;
    const work = async (c) => {
      const l = c.lock(name);
      for (let i = 0; i < 20; i++) {
        assert.ok(await l.acquire({ waitMs: 20000 }));
        inside += 1;
        if (inside > 1) overlaps += 1;
        const v = count;
        await sleep(1);
        count = v + 1;
        inside -= 1;
        await l.release();
      }
    };
    await Promise.all([work(a), work(b), work(a), work(b)]);
    assert.deepEqual([count, overlaps], [80, 0]);

    const held = a.lock(name);
    assert.ok(await held.acquire());
    const waiter = b.lock(name);
    const waiting = waiter.acquire().then(() => Date.now());
    await sleep(200);
    const released = Date.now();
    await held.release();
    assert.ok((await waiting) - released < 15000, 'woken by the release, not the 30 s lease');
    await waiter.release();

    const sem = a.semaphore(`polylock-node:ha-sem:${randomUUID()}`);
    await sem.trySetPermits(2);
    const p = await sem.acquire({ permits: 2, waitMs: 1000 });
    assert.equal(await sem.acquire({ waitMs: 100 }), null, 'not acquired: null, as a lock says it');
    await p.release();
    assert.equal(await sem.availablePermits(), 2);
    await Promise.all([a.close(), b.close()]);
  });
}
