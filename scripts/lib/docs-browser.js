'use strict';
// The built book in a real headless Chromium (Debian's, driven by playwright-core):
//   node scripts/lib/docs-browser.js BOOK_DIR OUT_DIR
// Serves BOOK_DIR on 127.0.0.1, then checks that the home page renders (title, heading, the
// table of contents) with no error in the page, that a search finds results and that a result
// opens its page, that every page of the table of contents loads with its heading, and that
// every same-origin link on those pages answers 200. Keeps a screenshot of the home page (and of
// the search results) in OUT_DIR. Needs PLAYWRIGHT_CORE (the package's folder) and
// CHROMIUM (default /usr/bin/chromium). Exit 1 on any failure.
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const [bookDir, outDir] = process.argv.slice(2);
if (!bookDir || !outDir) {
  console.error('usage: node scripts/lib/docs-browser.js BOOK_DIR OUT_DIR');
  process.exit(2);
}
const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
// The flags this machine's Chromium needs (no sandbox as root, no GPU, no network of its own).
const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.woff': 'font/woff', '.woff2': 'font/woff2', '.ttf': 'font/ttf',
  '.ico': 'image/x-icon', '.txt': 'text/plain' };

function serve(root) {
  const server = http.createServer((req, res) => {
    let p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let file = path.join(root, p);
    if (!file.startsWith(path.resolve(root))) { res.writeHead(403).end(); return; }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    if (!fs.existsSync(file)) { res.writeHead(404).end('not found'); return; }
    res.writeHead(200, { 'content-type': types[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const failures = [];
const fail = (what) => { failures.push(what); console.log(`FAIL ${what}`); };
const ok = (what) => console.log(`ok   ${what}`);

(async () => {
  fs.mkdirSync(outDir, { recursive: true });
  const server = await serve(path.resolve(bookDir));
  const base = `http://127.0.0.1:${server.address().port}/`;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'docs-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath, headless: true, args, viewport: { width: 1280, height: 900 },
  });
  try {
    const page = context.pages()[0] || await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
    page.on('response', (r) => { if (r.status() >= 400) errors.push(`HTTP ${r.status()}: ${r.url()}`); });

    // The home page renders.
    const home = await page.goto(base, { waitUntil: 'networkidle' });
    if (!home || home.status() !== 200) fail(`home page: HTTP ${home && home.status()}`);
    const title = await page.title();
    const h1 = (await page.locator('main h1').first().textContent({ timeout: 10000 }).catch(() => '')).trim();
    const tocLinks = await page.locator('.sidebar a[href], #mdbook-sidebar a[href], nav a[href]').evaluateAll(
      (as) => as.map((a) => a.href));
    const chapters = [...new Set(tocLinks.filter((h) => h.startsWith(base) && h.endsWith('.html'))
      .map((h) => h.split('#')[0]))];
    const shot = path.join(outDir, 'home.png');
    await page.screenshot({ path: shot });
    if (!/polylock/i.test(title)) fail(`home page title: '${title}'`);
    else if (h1 !== 'polylock') fail(`home page heading: '${h1}'`);
    else if (chapters.length < 10) fail(`table of contents: ${chapters.length} chapters`);
    else ok(`home page renders: title '${title}', heading '${h1}', ${chapters.length} chapters in the table of contents; screenshot ${shot}`);
    if (errors.length) fail(`home page errors: ${errors.join('; ')}`);
    errors.length = 0;

    // Search works: open it with its key, type, and results appear; the first one opens its page.
    await page.keyboard.press('s');
    const bar = page.locator('input[type=search]').first();
    await bar.waitFor({ state: 'visible', timeout: 10000 }).catch(() => {});
    if (!(await bar.isVisible())) {
      fail('search: the search bar did not open');
    } else {
      // mdBook loads its search index when the bar first opens; a query typed before the index
      // is there finds nothing and is not run again, so type it again until results come (a
      // loaded machine takes seconds to parse the index).
      const results = page.locator('[id$=searchresults] li a, #searchresults li a');
      for (let attempt = 0; attempt < 6 && (await results.count()) === 0; attempt++) {
        await bar.fill('');
        await bar.pressSequentially('fencing token', { delay: 20 });
        await results.first().waitFor({ timeout: 5000 }).catch(() => {});
      }
      const n = await results.count();
      await page.screenshot({ path: path.join(outDir, 'search.png') });
      if (n === 0) {
        fail("search: no results for 'fencing token'");
      } else {
        const first = await results.first().getAttribute('href');
        await results.first().click();
        await page.waitForLoadState('networkidle');
        const landed = (await page.locator('main h1').first().textContent().catch(() => '')).trim();
        if (!landed) fail(`search: the first result (${first}) opened no page`);
        else ok(`search: ${n} results for 'fencing token'; the first opens '${landed}'`);
      }
    }

    // Every chapter loads with its heading; every same-origin link on it answers 200.
    const linked = new Set();
    let loaded = 0;
    for (const url of chapters) {
      const r = await page.goto(url, { waitUntil: 'load' });
      // A chapter opens with its heading; a generated fragment that is a chapter of its own
      // (contract-table.md, written by scripts/conformance.sh) opens with its table.
      const heading = (await page.locator('main h1').first().textContent({ timeout: 5000 }).catch(() => '')).trim() ||
        ((await page.locator('main table').count()) > 0 ? '(a table)' : '');
      if (!r || r.status() !== 200 || !heading) { fail(`chapter ${url}: HTTP ${r && r.status()}, heading '${heading}'`); continue; }
      loaded += 1;
      for (const h of await page.locator('main a[href]').evaluateAll((as) => as.map((a) => a.href))) {
        if (h.startsWith(base)) linked.add(h.split('#')[0]);
      }
    }
    let broken = 0;
    for (const url of linked) {
      const r = await page.request.get(url);
      if (r.status() !== 200) { broken += 1; fail(`link ${url}: HTTP ${r.status()}`); }
    }
    if (errors.length) fail(`errors while loading the chapters: ${[...new Set(errors)].slice(0, 10).join('; ')}`);
    ok(`chapters: ${loaded} of ${chapters.length} loaded; ${linked.size} distinct internal links, ${broken} broken`);
  } finally {
    await context.close();
    server.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  console.log(`browser check: ${failures.length ? 'FAILED' : 'passed'} (Chromium ${executablePath})`);
  process.exit(failures.length ? 1 : 0);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
