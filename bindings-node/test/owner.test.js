'use strict';
// The owner of an acquisition is the async call chain, not the handle (issue 35, part 2), on
// Redis, ZooKeeper and PostgreSQL: concurrent flows on one shared handle exclude each other,
// sections re-enter, a LockHold ends exactly its acquisition, and an ambiguous lock.release()
// says so.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const { spawnSync } = require('node:child_process');
const http = require('node:http');
const polylock = require('..');

const REDIS = process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379';
const ZK = process.env.POLYLOCK_ZK_URL || 'zk://127.0.0.1:2181';
const PG = process.env.POLYLOCK_PG_URL || 'postgres://polylock:polylock-pw@127.0.0.1:5433/polylock';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const { newFlow } = polylock;
const isCode = (code) => (e) => e instanceof polylock.PolylockError && e.code === code;

const SERVERS = [
  ['redis', REDIS],
  ['zookeeper', ZK],
  ['postgres', PG],
];

function nameFor(server, p) {
  if (server === 'zookeeper') return `/polylock-node/${p}-${randomUUID()}`;
  if (server === 'postgres') return `node-${p}-${randomUUID().slice(0, 12)}`;
  return `polylock-node:${p}:${randomUUID()}`;
}

/** The fields of a Redis hash (a lock's holders: `<client>:<owner>` -> count). */
function redisHash(key) {
  const out = spawnSync('redis-cli', ['-u', REDIS, '--no-raw', 'HGETALL', key], { encoding: 'utf8' }).stdout;
  const words = out
    .split('\n')
    .map((l) => l.replace(/^\s*\d+\)\s*/, '').replace(/^"|"$/g, ''))
    .filter((l) => l && l !== '(empty array)');
  const fields = {};
  for (let i = 0; i + 1 < words.length; i += 2) fields[words[i]] = words[i + 1];
  return fields;
}

/** Sections recorded with their times: how many ran at once at the busiest. */
function recorder() {
  let inside = 0;
  let most = 0;
  const spans = [];
  return {
    async section(tag, ms) {
      const start = performance.now();
      inside++;
      most = Math.max(most, inside);
      await sleep(ms);
      inside--;
      spans.push({ tag, start, end: performance.now() });
    },
    get most() {
      return most;
    },
    spans,
  };
}

for (const [server, url] of SERVERS) {
  test(`${server}: 8 HTTP requests on one module-level handle never overlap, none loses the lock`, async () => {
    const c = await polylock.connect(url);
    const shared = c.lock(nameFor(server, 'http')); // what a module would make once
    const lost = [];
    shared.on('lost', (e) => lost.push(e));
    const rec = recorder();
    const web = http.createServer(async (req, res) => {
      try {
        if (!(await shared.acquire({ waitMs: 30000 }))) throw new Error('not acquired in 30 s');
        await rec.section(req.url, 25);
        await shared.release(); // this request's own acquisition
        res.end('ok');
      } catch (e) {
        res.statusCode = 500;
        res.end(String(e.code || e));
      }
    });
    await new Promise((r) => web.listen(0, '127.0.0.1', r));
    const { port } = web.address();
    const agent = new http.Agent({ keepAlive: false, maxSockets: 16 });
    const get = (i) =>
      new Promise((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: `/${i}`, agent }, (res) => {
            let body = '';
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve(body));
          })
          .on('error', reject);
      });
    try {
      const bodies = await Promise.all(Array.from({ length: 8 }, (_, i) => get(i)));
      assert.deepEqual(bodies, Array(8).fill('ok'), 'every request held and released its own acquisition');
      assert.equal(rec.most, 1, `${rec.most} requests were inside at once`);
      assert.equal(rec.spans.length, 8);
      assert.deepEqual(lost, []);
      assert.equal(await shared.isLocked(), false);
    } finally {
      web.close();
      agent.destroy();
      await c.close();
    }
  });

  const kinds = [
    ['lock', (c, n) => c.lock(n)],
    ['write half', (c, n) => c.readWriteLock(n).writeLock()],
  ];
  if (server !== 'postgres') kinds.push(['fair lock', (c, n) => c.fairLock(n)]);
  for (const [kind, make] of kinds) {
    test(`${server}: 8 concurrent flows on one shared ${kind} handle never overlap`, async () => {
      const c = await polylock.connect(url);
      const shared = make(c, nameFor(server, 'flows'));
      const rec = recorder();
      const errors = [];
      await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          for (let round = 0; round < 3; round++) {
            const held = await shared.acquire({ waitMs: 30000 });
            if (!held) throw new Error('not acquired in 30 s');
            await rec.section(`${i}.${round}`, 5);
            if (shared.isLost) errors.push('lost');
            // Half the flows end their LockHold, half call the handle's release(), which ends
            // the calling flow's own acquisition.
            await (i % 2 ? held.release() : shared.release()).catch((e) => errors.push(e.code));
            if (held.released !== true) errors.push(`flow ${i}: its LockHold is not released`);
          }
        }),
      ).catch((e) => errors.push(String(e)));
      assert.equal(rec.most, 1, `${rec.most} flows were inside at once`);
      assert.deepEqual(errors, [], 'no hold was lost, every release was the holder\'s');
      assert.equal(rec.spans.length, 24);
      assert.equal(await shared.isLocked(), false);
      await c.close();
    });
  }

  test(`${server}: Promise.all of two sections on one handle runs them one after the other`, async () => {
    const c = await polylock.connect(url);
    const lock = c.lock(nameFor(server, 'all'));
    const rec = recorder();
    const work = (tag) => async () => {
      await rec.section(tag, 60);
      return tag;
    };
    assert.deepEqual(await Promise.all([lock.using(work('f')), lock.using(work('g'))]), ['f', 'g']);
    assert.equal(rec.most, 1, 'f and g ran at once');
    assert.deepEqual(await Promise.all([lock.withLock(work('h')), lock.withLock(work('i'))]), ['h', 'i']);
    assert.equal(rec.most, 1, 'h and i ran at once');
    const [a, b] = [rec.spans.find((s) => s.tag === 'h'), rec.spans.find((s) => s.tag === 'i')];
    assert.ok(a.end <= b.start || b.end <= a.start);
    await c.close();
  });

  test(`${server}: inside a section the lock re-enters (any handle, after awaits, in timers), one hold on the server`, async () => {
    const c = await polylock.connect(url);
    const name = nameFor(server, 'reenter');
    const outside = await polylock.connect(url);
    const free = async () => {
      const h = await outside.lock(name).tryLock();
      if (h) await h.release();
      return Boolean(h);
    };
    const result = await c.using(
      name,
      async () => {
        assert.equal(c.lock(name).holdCount, 1);
        // client.using makes a new handle per call: inside the section it re-enters all the same.
        await c.using(
          name,
          async () => {
            assert.equal(c.lock(name).holdCount, 2);
            if (server === 'redis') assert.deepEqual(Object.values(redisHash(name)), ['2'], 'one holder, counted twice');
            assert.equal(await newFlow(() => c.lock(name).tryLock()), null, 'another flow is kept out');
          },
          { waitMs: 2000 },
        );
        assert.equal(c.lock(name).holdCount, 1);
        assert.equal(await free(), false, 'still held after the inner release');
        await sleep(5); // after an await, still inside
        const again = await c.lock(name).acquire({ waitMs: 2000 });
        assert.ok(again, 'a bare acquire inside re-enters');
        assert.equal(again.lock.holdCount, 2);
        await again.release();
        // A timer started inside the section runs inside it while the section holds the lock.
        const fromTimer = await new Promise((resolve) => setTimeout(() => resolve(c.lock(name).tryLock()), 5));
        assert.ok(fromTimer, 'a timer of the section re-enters');
        await fromTimer.release();
        return 'done';
      },
      { waitMs: 2000 },
    );
    assert.equal(result, 'done');
    assert.equal(await free(), true, 'free after the section');
    if (server === 'redis') assert.deepEqual(redisHash(name), {});
    await outside.close();
    await c.close();
  });

  test(`${server}: a timer that fires after its section ended is a flow of its own`, async () => {
    const c = await polylock.connect(url);
    const lock = c.lock(nameFor(server, 'late'));
    let late;
    await lock.using(async () => {
      late = new Promise((resolve) => setTimeout(() => resolve(lock.tryLock()), 150));
    });
    const other = await newFlow(() => lock.acquire({ waitMs: 2000 }));
    assert.ok(other);
    assert.equal(await late, null, 'the late timer re-entered a section that had ended');
    await other.release();
    await c.close();
  });

  test(`${server}: a LockHold's release() ends exactly its acquisition`, async () => {
    const c = await polylock.connect(url);
    const name = nameFor(server, 'exact');
    const rw = c.readWriteLock(name);
    const read = rw.readLock(); // one shared handle
    const writerIn = async () => {
      const w = await newFlow(() => rw.writeLock().tryLock());
      if (w) await w.release();
      return Boolean(w);
    };
    // Two flows hold the read half through the one handle.
    const [a, b] = await Promise.all([newFlow(() => read.acquire()), newFlow(() => read.acquire())]);
    assert.ok(a && b && a !== b);
    if (server === 'redis') assert.equal(Object.keys(redisHash(name)).filter((f) => f !== 'mode').length, 2);
    await a.release(); // from this flow, which is neither: ends a's acquisition, not b's
    assert.equal(a.released, true);
    assert.equal(b.released, false);
    assert.equal(b.isLost, false);
    assert.ok(b.fencingToken !== null);
    if (server === 'redis') assert.equal(Object.keys(redisHash(name)).filter((f) => f !== 'mode').length, 1);
    assert.equal(await writerIn(), false, "b's read hold still keeps writers out");
    await a.release(); // idempotent
    assert.equal(b.released, false);
    await b.release();
    assert.equal(await writerIn(), true);
    // Re-entries of one flow: each hold ends one of them, in any order.
    const first = await read.acquire();
    const second = await read.acquire();
    assert.equal(read.holdCount, 2);
    await first.release();
    assert.equal(read.holdCount, 1);
    assert.equal(await writerIn(), false);
    await second.release();
    assert.equal(read.holdCount, 0);
    assert.equal(await writerIn(), true);
    await c.close();
  });

  test(`${server}: lock.release() with holds of several other flows is a typed error`, async () => {
    const c = await polylock.connect(url);
    const read = c.readWriteLock(nameFor(server, 'ambiguous')).readLock();
    const holds = await Promise.all([newFlow(() => read.acquire()), newFlow(() => read.acquire())]);
    await assert.rejects(read.release(), (e) => isCode('ERR_POLYLOCK_INVALID_STATE')(e) && /LockHold/.test(e.message));
    assert.deepEqual(holds.map((h) => h.released), [false, false], 'nothing was released');
    // Inside a flow, lock.release() ends that flow's own acquisition.
    await newFlow(async () => {
      const mine = await read.acquire();
      await read.release();
      assert.equal(mine.released, true);
    });
    await holds[0].release();
    // One flow's holds left: release() from anywhere ends it (the single-flow case).
    await read.release();
    assert.equal(holds[1].released, true);
    await assert.rejects(read.release(), isCode('ERR_POLYLOCK_NOT_OWNER'));
    await c.close();
  });
}

test('redis: a write section may take the read half (a downgrade); a read section asking for the write half is refused at once', async () => {
  const c = await polylock.connect(REDIS);
  const rw = c.readWriteLock(nameFor('redis', 'down'));
  await rw.writeLock().using(async () => {
    const r = await rw.readLock().acquire({ waitMs: 0 });
    assert.ok(r, 'the writer\'s flow reads');
    await r.release();
  });
  await rw.readLock().using(async () => {
    await assert.rejects(rw.writeLock().acquire(), isCode('ERR_POLYLOCK_UPGRADE_NOT_SUPPORTED'));
  });
  await c.close();
});

test('newFlow rejects what is not a function; acquire rejects bad options before it changes the flow', async () => {
  assert.throws(() => newFlow(42), (e) => e instanceof TypeError && e.code === 'ERR_POLYLOCK_INVALID_ARGUMENT');
  assert.equal(newFlow(() => 7), 7);
  const c = await polylock.connect(REDIS);
  const lock = c.lock(nameFor('redis', 'args'));
  await assert.rejects(lock.acquire({ waitMs: -1 }), RangeError);
  await assert.rejects(lock.tryLock({ leaseMs: 0 }), RangeError);
  await assert.rejects(lock.using(42), TypeError);
  assert.equal(lock.holdCount, 0);
  await c.close();
});
