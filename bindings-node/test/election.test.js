'use strict';
// Leader election from Node on Redis, ZooKeeper and etcd: one leader, its term, a bounded or
// aborted campaign that gives up, observers, typed errors.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const polylock = require('..');

const URLS = {
  redis: process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379',
  zookeeper: process.env.POLYLOCK_ZK_URL || 'zk://127.0.0.1:2181',
  etcd: process.env.POLYLOCK_ETCD_URL || 'etcd://127.0.0.1:2379',
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const nameFor = (url, p) => (url.startsWith('zk') ? `/polylock-node/${p}-${randomUUID()}` : `polylock-node:${p}:${randomUUID()}`);

for (const [server, url] of Object.entries(URLS)) {
  test(`${server}: one leader, then the next; an observer sees both in order`, async () => {
    const [a, b, w] = [await polylock.connect(url), await polylock.connect(url), await polylock.connect(url)];
    const name = nameFor(url, 'election');
    const [ea, eb] = [a.election(name, 'node-a'), b.election(name, 'node-b')];
    const stop = new AbortController();
    const seen = [];
    const observing = (async () => {
      for await (const l of w.election(name, 'observer').observe({ signal: stop.signal })) seen.push(l);
    })();
    await sleep(200);
    assert.equal(await ea.campaign(), true);
    assert.equal(ea.isLeader, true);
    const first = ea.term;
    assert.ok(first > 0);
    assert.equal(await eb.campaign({ waitMs: 200 }), false);
    assert.equal(eb.term, null);
    assert.deepEqual(await eb.leader(), { identity: 'node-a', term: first });
    // An aborted campaign is withdrawn and rejects with the signal's reason.
    const ac = new AbortController();
    const aborted = eb.campaign({ signal: ac.signal });
    await sleep(100);
    ac.abort();
    await assert.rejects(aborted, (e) => e.name === 'AbortError');
    // Its candidacy leaves the server as the abort unwinds (in the background): only a leads.
    if (server !== 'redis') {
      const until = Date.now() + 5000;
      while ((await ea.candidates()).length > 1 && Date.now() < until) await sleep(20);
      assert.deepEqual(await ea.candidates(), ['node-a']);
    }
    await sleep(200);
    assert.equal(await ea.resign(), true);
    assert.equal(await ea.resign(), false);
    assert.equal(await eb.campaign({ waitMs: 5000 }), true);
    assert.ok(eb.term > first);
    await sleep(200);
    assert.equal(await eb.resign(), true);
    await sleep(200);
    stop.abort();
    await observing;
    const ids = seen.map((l) => (l ? l.identity : null));
    assert.ok(
      JSON.stringify(ids) === JSON.stringify([null, 'node-a', null, 'node-b', null]) ||
        JSON.stringify(ids) === JSON.stringify([null, 'node-a', 'node-b', null]),
      JSON.stringify(seen),
    );
    assert.equal(await ea.leader(), null);
    await Promise.all([a.close(), b.close(), w.close()]);
  });
}

test('bad identities and names are typed errors', async () => {
  const c = await polylock.connect(URLS.redis);
  for (const bad of ['a\u0000b', 'x'.repeat(1025), 'a\uD800']) {
    assert.throws(() => c.election('e', bad), (e) => e instanceof RangeError && e.code === 'ERR_POLYLOCK_INVALID_ARGUMENT');
  }
  assert.throws(() => c.election('e', ''), RangeError);
  assert.throws(() => c.election('e', 5), TypeError);
  await assert.rejects(c.election('e', 'a').campaign({ waitMs: -1 }), RangeError);
  await c.close();
});
