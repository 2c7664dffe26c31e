'use strict';
// The live page of `polylock serve` in a real headless Chromium (Debian's, driven by
// playwright-core), as scripts/operate-test.sh runs it: a Python process (service py-holder)
// takes the fair lock POLYLOCK_NAME, a `polylock lock --fair` (service cli-waiter) queues behind
// it, the Python process releases and the waiter gets it. The page must show each state within
// 3 s of it (the server is read every 300 ms), and /metrics must parse with prometheus_client's
// parser and agree. Screenshots of each state in POLYLOCK_OUT.
const { spawn, spawnSync } = require('node:child_process');
const path = require('node:path');

const base = process.env.POLYLOCK_BASE;
const token = process.env.POLYLOCK_TOKEN;
const name = process.env.POLYLOCK_NAME;
const url = process.env.POLYLOCK_URL;
const cli = process.env.POLYLOCK_CLI;
const out = process.env.POLYLOCK_OUT;
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');
const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const children = [];
function start(cmd, argv, env) {
  const child = spawn(cmd, argv, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  return child;
}

/** Wait until the row of `name` on the page satisfies `test(text)`; its text. */
async function row(page, test, what) {
  const deadline = Date.now() + 3000;
  let text = '';
  while (Date.now() < deadline) {
    text = await page.evaluate((n) => {
      const tr = [...document.querySelectorAll('#rows tr')].find(r => r.dataset.name === n);
      return tr ? tr.innerText : '';
    }, name);
    if (test(text)) return text;
    await new Promise(r => setTimeout(r, 100));
  }
  throw new Error(`the page did not show ${what} within 3 s; the row reads: ${JSON.stringify(text)}`);
}

async function metrics() {
  const res = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const text = await res.text();
  const check = spawnSync('python3', ['-c', `
import sys
from prometheus_client.parser import text_string_to_metric_families
name = sys.argv[1]
got = {}
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        if s.labels.get("name") == name:
            got[s.name] = s.value
assert got.get("polylock_lock_held") == 1, got
assert got.get("polylock_lock_holders") == 1, got
assert got.get("polylock_lock_waiters") == 1, got
assert got.get("polylock_lock_hold_age_seconds", -1) >= 0, got
print("parsed", len(got), "series of", name)
`, name], { input: text, encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`/metrics: ${check.stderr}\n${text}`);
  console.log(`operate page: /metrics ${check.stdout.trim()} (prometheus_client's parser)`);
}

async function main() {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 360 } });
    const errors = [];
    page.on('pageerror', e => errors.push(String(e)));
    await page.goto(`${base}/?token=${encodeURIComponent(token)}`);
    await page.waitForSelector('#rows');

    // 1. A Python process holds the lock.
    const holder = start('python3', ['-c', `
import sys, polylock
client = polylock.connect(sys.argv[1], service="py-holder")
lock = client.fair_lock(sys.argv[2])
lock.acquire()
print("held", flush=True)
sys.stdin.read()
lock.release()
client.close()
`, url, name]);
    await new Promise((resolve, reject) => {
      holder.stdout.on('data', d => String(d).includes('held') && resolve());
      holder.on('exit', c => reject(new Error(`the Python holder exited ${c}`)));
    });
    let t0 = Date.now();
    let text = await row(page, t => t.includes('py-holder') && t.includes('python'), 'the Python holder');
    console.log(`operate page: the hold shown after ${Date.now() - t0} ms: ${JSON.stringify(text)}`);
    await page.screenshot({ path: path.join(out, 'serve-1-held.png') });

    // 2. A waiter queues behind it.
    const waiter = start(cli, ['lock', '--url', url, '--fair', '-w', '60s', name], { POLYLOCK_SERVICE: 'cli-waiter' });
    t0 = Date.now();
    text = await row(page, t => t.includes('1. cli-waiter'), 'the waiter');
    console.log(`operate page: the waiter shown after ${Date.now() - t0} ms`);
    await page.screenshot({ path: path.join(out, 'serve-2-waiting.png') });
    await metrics();

    // 3. The holder releases: the waiter holds it, nobody waits.
    holder.stdin.end();
    const got = new Promise(resolve => waiter.stdout.on('data', d => String(d).includes('fencing_token') && resolve()));
    await got;
    t0 = Date.now();
    text = await row(page, t => t.includes('cli-waiter') && !t.includes('py-holder') && !t.includes('1. '), 'the handoff');
    console.log(`operate page: the handoff shown after ${Date.now() - t0} ms: ${JSON.stringify(text)}`);
    await page.screenshot({ path: path.join(out, 'serve-3-handoff.png') });
    if (errors.length) throw new Error(`errors in the page: ${errors.join('; ')}`);
  } finally {
    for (const c of children) c.kill();
    await browser.close();
  }
}

main().then(() => console.log('operate page: PASS'), (e) => { console.error(`operate page: ${e.stack || e}`); process.exit(1); });
