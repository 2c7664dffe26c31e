'use strict';
// The panic boundary (src/boundary.rs): a panic in native code rejects or throws with
// ERR_POLYLOCK_PANIC and the process goes on, on the driver of this run (run-tests.sh runs the
// suite on both). The panics come from a test-only native function (`__testPanic`, not API), in a
// child process whose end tells whether Node survived.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { randomUUID } = require('node:crypto');
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const REDIS = process.env.POLYLOCK_REDIS_URL || 'redis://127.0.0.1:6379';
const here = path.join(__dirname, '..');

test('a panic in native code becomes ERR_POLYLOCK_PANIC; the process and the driver go on', () => {
  const name = `polylock-node:panic:${randomUUID()}`;
  const script = `
    const polylock = require(${JSON.stringify(here)});
    (async () => {
      const seen = {};
      for (const at of ['sync', 'poll', 'callback']) {
        try {
          await polylock.__testPanic(at);
          seen[at] = 'resolved';
        } catch (e) {
          seen[at] = [e instanceof polylock.PolylockError, e.code, e.message.includes("the test panic at '" + at + "'")];
        }
      }
      // Calls after the panics still work, and nothing keeps the process alive afterwards.
      const c = await polylock.connect(${JSON.stringify(REDIS)});
      const lock = c.lock(${JSON.stringify(name)});
      if (!(await lock.acquire({ waitMs: 5000 }))) throw new Error('not acquired');
      await lock.release();
      await c.close();
      console.log(JSON.stringify({ seen, driver: polylock.driver() }));
    })();`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30000 });
  assert.equal(r.signal, null, `the process was killed by ${r.signal}: ${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  const typed = [true, 'ERR_POLYLOCK_PANIC', true];
  assert.deepEqual(out.seen, { sync: typed, poll: typed, callback: typed });
  assert.match(r.stderr, /the test panic at 'callback'/, 'the panic is still reported on stderr');
});

test('the test-only panic function is no API: not enumerable, not in the typings', () => {
  const polylock = require('..');
  assert.equal(Object.keys(polylock).includes('__testPanic'), false);
  const dts = require('node:fs').readFileSync(path.join(here, 'index.d.ts'), 'utf8');
  assert.equal(dts.includes('__testPanic'), false);
});
