#!/usr/bin/env node
// Browser test of the demo page (GET /) against the real binary.
//
//   node tests/browser/demo.mjs --meshcheck target/debug/meshcheck \
//        [--assets ../shared/assets] [--shots DIR] [--chromium /usr/bin/chromium]
//
// Starts `meshcheck serve` on 127.0.0.1:0 with a temporary data folder, drives
// Debian's chromium through playwright-core, and checks:
//   1. a real asset dropped on the drop zone (DataTransfer drag-and-drop)
//      shows the verdict the server returned, the checks grouped by family
//      with measured and threshold values, and six loaded screenshots; the
//      keyboard and the file input reach the same upload;
//   2. a 5,000,000-byte file is refused in words before upload, and the
//      server itself answers 413 FILE_TOO_LARGE when it is sent anyway;
//   3. a text file named .glb gets an error in words;
//   4. full-page screenshots (1280 and 375 px wide) go to --shots;
//   5. SIGTERM stops the server with exit code 0.
// Exits 1 with a message on the first failure; bounded to three minutes.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { REPO, TestFailure, check, launch, ok, overall, parseArgs, withTimeout } from './lib.mjs';

const OVERALL_MS = 180_000;
const ASSET = 'models/khronos-sample-models/CesiumMan.glb'; // 491 kB, skinned, textured; fails SPEC-001
const SMALL_ASSET = 'models/khronos-sample-models/Box.glb'; // 1.6 kB, for the keyboard/file-input path



// ---------- the server ----------

function startServer(bin, dataDir, runtimeDir) {
  const child = spawn(bin, ['serve', '--addr', '127.0.0.1:0', '--data-dir', dataDir, '--log-format', 'json'], {
    env: { ...process.env, XDG_RUNTIME_DIR: runtimeDir, MESHCHECK_LOG: 'info' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const logs = [];
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const addr = new Promise((resolve, reject) => {
    child.on('error', (e) => reject(new TestFailure(`could not start ${bin}: ${e.message}`)));
    exited.then(({ code, signal }) => reject(new TestFailure(`the server exited before listening (code ${code}, signal ${signal})`)));
    readline.createInterface({ input: child.stderr }).on('line', (line) => {
      logs.push(line);
      if (logs.length > 200) logs.shift();
      try {
        const v = JSON.parse(line);
        if (v.fields && v.fields.message === 'meshcheck serve listening' && v.fields.addr) resolve(v.fields.addr);
      } catch {
        // not a JSON line (a panic message, Mesa noise): kept for the report only
      }
    });
  });
  return { child, logs, exited, addr };
}

async function waitHealthy(base, ms) {
  const until = Date.now() + ms;
  let last = 'no answer';
  while (Date.now() < until) {
    try {
      const r = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (r.status === 200) return;
      last = `HTTP ${r.status}`;
    } catch (e) {
      last = e.message;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new TestFailure(`GET /healthz did not answer 200 within ${ms / 1000} s (${last})`);
}

// ---------- page helpers ----------

// Drops a file on the zone the way a browser does: dragenter, dragover and
// drop events carrying a DataTransfer that holds the file.
async function dropFile(page, name, bytes, type) {
  const dt = await page.evaluateHandle(
    ({ name, b64, type }) => {
      const bin = atob(b64);
      const u8 = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) u8[i] = bin.charCodeAt(i);
      const dt = new DataTransfer();
      dt.items.add(new File([u8], name, { type }));
      return dt;
    },
    { name, b64: Buffer.from(bytes).toString('base64'), type },
  );
  await dispatchDrop(page, dt);
}
// A large file is made in the page (a GLB header, then zeros).
async function dropGeneratedGlb(page, name, size) {
  const dt = await page.evaluateHandle(
    ({ name, size }) => {
      const u8 = new Uint8Array(size);
      const v = new DataView(u8.buffer);
      v.setUint32(0, 0x46546c67, true); // "glTF"
      v.setUint32(4, 2, true);
      v.setUint32(8, size, true);
      const dt = new DataTransfer();
      dt.items.add(new File([u8], name, { type: 'model/gltf-binary' }));
      return dt;
    },
    { name, size },
  );
  await dispatchDrop(page, dt);
}
async function dispatchDrop(page, dt) {
  for (const type of ['dragenter', 'dragover', 'drop']) {
    await page.dispatchEvent('#drop', type, { dataTransfer: dt });
  }
  await dt.dispose();
}

// Records whether the page showed its busy state (zone disabled, progress
// shown) at any moment, however short the validation.
async function watchBusy(page) {
  await page.evaluate(() => {
    window.__sawBusy = false;
    const drop = document.getElementById('drop');
    const status = document.getElementById('status');
    const look = () => {
      if (drop.getAttribute('aria-disabled') === 'true' && !status.hidden && /Validating/.test(status.textContent)) window.__sawBusy = true;
    };
    if (window.__busyObserver) window.__busyObserver.disconnect();
    window.__busyObserver = new MutationObserver(look);
    window.__busyObserver.observe(document.body, { attributes: true, subtree: true, childList: true });
  });
}

function isValidatePost(r) {
  return r.url().endsWith('/demo/validate') && r.request().method() === 'POST';
}

async function checkReport(page, json, filename) {
  await page.waitForSelector('#report:not([hidden]) #verdict', { timeout: 30_000 });
  check(['pass', 'warn', 'fail'].includes(json.verdict), `the server's verdict is ${JSON.stringify(json.verdict)}`);
  const shown = await page.evaluate(() => ({
    data: document.getElementById('verdict').getAttribute('data-verdict'),
    pill: document.getElementById('verdict-pill').textContent.trim().toLowerCase(),
    title: document.getElementById('verdict-title').textContent.trim(),
    file: document.querySelector('#verdict .v-file strong').textContent,
    counts: document.querySelector('#verdict .v-counts').textContent,
    errorHidden: document.getElementById('error').hidden,
  }));
  check(['pass', 'warn', 'fail'].includes(shown.pill), `the verdict pill reads ${JSON.stringify(shown.pill)}`);
  check(shown.pill === json.verdict && shown.data === json.verdict,
    `the page shows verdict ${shown.pill} but the server returned ${json.verdict}`);
  check(shown.file === filename && json.input.filename === filename, `the banner names ${shown.file}, expected ${filename}`);
  check(shown.counts.includes(`${json.summary.errors}failed`) && shown.counts.includes(`${json.summary.warnings}warning`),
    `the banner counts (${shown.counts}) do not match the summary ${JSON.stringify(json.summary)}`);
  check(shown.errorHidden, 'an error is shown next to the report');
  ok(`verdict "${shown.pill}" (${shown.title}) matches the server's JSON for ${filename}`);

  // Checks grouped by family, failing families open, every check listed.
  const families = [...new Set(json.checks.map((c) => c.id.split('-')[0]))];
  const groups = await page.evaluate(() => [...document.querySelectorAll('#checks details.family')].map((d) => ({
    prefix: d.getAttribute('data-family'),
    open: d.open,
    label: d.querySelector('summary strong').firstChild.textContent,
    ids: [...d.querySelectorAll('li.check')].map((li) => li.getAttribute('data-check')),
  })));
  check(groups.length === families.length, `${groups.length} check groups shown, the report has ${families.length} families (${families})`);
  for (const g of groups) {
    const expected = json.checks.filter((c) => c.id.split('-')[0] === g.prefix);
    check(JSON.stringify(g.ids) === JSON.stringify(expected.map((c) => c.id)), `group ${g.prefix} lists ${g.ids}, expected ${expected.map((c) => c.id)}`);
    if (expected.some((c) => c.status === 'fail')) check(g.open, `group ${g.prefix} has a failure but is collapsed`);
  }
  const labels = groups.map((g) => g.label).join(', ');
  for (const want of ['Spec conformance', 'Geometry', 'Performance']) check(labels.includes(want), `no "${want}" group (groups: ${labels})`);
  ok(`${groups.length} check groups (${labels}) list all ${json.checks.length} checks; failing groups are open`);

  // Measured against threshold, formatted, on a budget check.
  const perf = json.checks.find((c) => c.id === 'PERF-001');
  check(perf && perf.status !== 'skipped', 'PERF-001 is missing or skipped');
  const row = await page.evaluate(() => {
    const li = document.querySelector('li.check[data-check="PERF-001"]');
    return { text: li.textContent, visible: li.getBoundingClientRect().height > 0 || true };
  });
  const tris = perf.measured.triangles.toLocaleString('en-US');
  const budget = perf.threshold.max_tris.toLocaleString('en-US');
  check(/Measured/i.test(row.text) && /Threshold/i.test(row.text), `the PERF-001 row has no measured/threshold table: ${row.text}`);
  check(row.text.includes(tris) && row.text.includes(budget), `the PERF-001 row does not show ${tris} against ${budget}: ${row.text}`);
  check(row.text.includes(perf.message), 'the PERF-001 row does not show its message');
  const failing = json.checks.filter((c) => c.status === 'fail' || c.status === 'warn');
  for (const c of failing) {
    const t = await page.textContent(`li.check[data-check="${c.id}"] .pill`);
    check(t.trim() === c.status, `${c.id} shows status ${t}, expected ${c.status}`);
  }
  ok(`PERF-001 shows measured ${tris} triangles against the threshold ${budget}; ${failing.length} failing/warning rows carry their status`);

  // The six screenshots, loaded from /v1/screenshots/.
  check(Array.isArray(json.screenshots) && json.screenshots.length === 6, `the report has ${json.screenshots && json.screenshots.length} screenshots, expected 6`);
  for (const s of json.screenshots) check(new URL(s.url).pathname.startsWith('/v1/screenshots/'), `screenshot URL ${s.url} is not under /v1/screenshots/`);
  await page.locator('#shots').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => {
    const imgs = [...document.querySelectorAll('#shots img')];
    imgs.forEach((i) => i.scrollIntoView({ block: 'center' }));
    return imgs.length === 6 && imgs.every((i) => i.complete && i.naturalWidth > 0);
  }, null, { timeout: 30_000, polling: 250 });
  const imgs = await page.evaluate(() => [...document.querySelectorAll('#shots img')].map((i) => ({
    path: new URL(i.currentSrc || i.src).pathname, w: i.naturalWidth, cap: i.closest('figure').querySelector('figcaption').textContent,
  })));
  check(imgs.length === 6, `${imgs.length} screenshot images, expected 6`);
  for (const i of imgs) check(i.path.startsWith('/v1/screenshots/') && i.w > 0, `screenshot ${i.path} did not load from /v1/screenshots/`);
  const caps = imgs.map((i) => i.cap).join(' | ');
  for (const v of ['Front', 'Right', 'Back', 'Left', 'Top', 'Three-quarter']) check(caps.includes(v), `no "${v}" caption (${caps})`);
  ok(`6 screenshots loaded from /v1/screenshots/ (${imgs[0].w} px wide), captioned by view`);

  // The full JSON as a download (a Blob URL; the page's CSP keeps fetch to
  // its own origin, so the test downloads it the way a user does).
  const link = await page.evaluate(() => {
    const a = document.getElementById('download-json');
    return { href: a.href, download: a.getAttribute('download') };
  });
  check(link.href.startsWith('blob:') && link.download === 'report.json', `the JSON link is ${link.href} (download=${link.download})`);
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 15_000 }), page.click('#download-json')]);
  check(download.suggestedFilename() === 'report.json', `the download is named ${download.suggestedFilename()}`);
  const saved = JSON.parse(fs.readFileSync(await download.path(), 'utf8'));
  check(saved.report_id === json.report_id && saved.verdict === json.verdict, 'the downloaded report.json is not the server report');
  ok('"Download report.json" is a Blob URL holding the server report');
}

// ---------- the test ----------

async function main() {
  const opts = parseArgs(process.argv.slice(2), 'demo.mjs', { '--shots': 'shots' });
  const bin = path.resolve(opts.meshcheck);
  check(fs.existsSync(bin), `no meshcheck binary at ${bin} (build it with cargo build)`);
  check(fs.existsSync(opts.chromium), `no chromium at ${opts.chromium} (apt-get install chromium)`);
  const assetPath = path.join(opts.assets, ASSET);
  const smallPath = path.join(opts.assets, SMALL_ASSET);
  check(fs.existsSync(assetPath) && fs.existsSync(smallPath), `the shared assets are not at ${opts.assets} (need ${ASSET} and ${SMALL_ASSET})`);
  const shots = path.resolve(opts.shots || fs.mkdtempSync(path.join(os.tmpdir(), 'meshcheck-demo-shots-')));
  fs.mkdirSync(shots, { recursive: true });

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'meshcheck-demo-test-'));
  const dataDir = path.join(tmp, 'data');
  const runtimeDir = path.join(tmp, 'xdg');
  fs.mkdirSync(dataDir);
  fs.mkdirSync(runtimeDir, { mode: 0o700 });
  fs.chmodSync(runtimeDir, 0o700);

  let server = null;
  let browser = null;
  const cleanup = async () => {
    if (browser) await browser.close().catch(() => {});
    browser = null;
    if (server && server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  const guard = overall(OVERALL_MS, 'the browser test', () => {
    if (server) {
      console.error('server log (last lines):');
      for (const l of server.logs.slice(-20)) console.error(`  ${l}`);
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
    }
  });

  try {
    server = startServer(bin, dataDir, runtimeDir);
    const addr = await withTimeout(server.addr, 60_000, 'the server to log "meshcheck serve listening"');
    const base = `http://${addr}`;
    await waitHealthy(base, 30_000);
    ok(`meshcheck serve is listening on ${addr}`);

    browser = await launch(opts.chromium);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light', acceptDownloads: true });
    context.setDefaultTimeout(30_000);
    const page = await context.newPage();
    // File-chooser interception is switched on asynchronously when the first
    // listener is added: add it now, long before Enter opens the chooser.
    const choosers = [];
    page.on('filechooser', (fc) => choosers.push(fc));
    const problems = [];
    const external = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content.Security.Policy|Refused to/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
    });
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.protocol !== 'blob:' && u.protocol !== 'data:' && u.origin !== base) external.push(r.url());
    });

    const resp = await page.goto(`${base}/`, { waitUntil: 'load' });
    check(resp.status() === 200, `GET / answered ${resp.status()}`);
    const csp = resp.headers()['content-security-policy'] || '';
    check(csp.includes("default-src 'none'"), `GET / has no strict Content-Security-Policy (${csp})`);
    check(await page.isVisible('#drop'), 'no drop zone on the page');
    check((await page.getAttribute('#file', 'accept')) === '.glb,.zip', 'the file input does not accept .glb,.zip');
    ok('GET / serves the page with its Content-Security-Policy and a drop zone');

    // 1. Drop a real asset.
    const assetName = path.basename(ASSET);
    await watchBusy(page);
    const answer = page.waitForResponse(isValidatePost, { timeout: 90_000 });
    const started = Date.now();
    await dropFile(page, assetName, fs.readFileSync(assetPath), 'model/gltf-binary');
    const r1 = await answer;
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const body1 = await r1.text();
    check(r1.status() === 200, `POST /demo/validate answered ${r1.status()}: ${body1.slice(0, 300)}`);
    const json = JSON.parse(body1);
    check(r1.request().postDataBuffer() === null || r1.request().postDataBuffer().includes(Buffer.from('name="profile"')), 'the upload did not send the profile');
    await checkReport(page, json, assetName);
    check(await page.evaluate(() => window.__sawBusy), 'the page never showed its progress state (zone disabled, "Validating…")');
    check(await page.getAttribute('#drop', 'aria-disabled') === 'false', 'the drop zone is still disabled after the report');
    ok(`the drop showed progress and disabled the zone during the ${seconds} s validation`);

    // 4. Full-page screenshots of the report (desktop, dark desktop, mobile).
    const desktopShot = path.join(shots, 'demo-desktop.png');
    await page.screenshot({ path: desktopShot, fullPage: true });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.waitForTimeout(400); // the zone's colour transition
    const darkShot = path.join(shots, 'demo-desktop-dark.png');
    await page.screenshot({ path: darkShot, fullPage: true });
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 375, height: 812 });
    await page.waitForFunction(() => window.innerWidth === 375);
    const overflow = await page.evaluate(() => {
      const w = document.documentElement.clientWidth;
      const wide = [...document.querySelectorAll('body *')].filter((e) => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.right > w + 1 && !e.closest('pre');
      }).slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.className}`);
      return { scroll: document.documentElement.scrollWidth, w, wide };
    });
    check(overflow.scroll <= 375 && overflow.wide.length === 0, `the page overflows at 375 px: scrollWidth ${overflow.scroll}, ${overflow.wide.join(', ')}`);
    const mobileShot = path.join(shots, 'demo-mobile.png');
    await page.screenshot({ path: mobileShot, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    ok('no horizontal overflow at 375 px; full-page screenshots taken');

    // 1b. Keyboard: Enter on the focused zone opens the file chooser; the
    // file input uploads too.
    await page.focus('#drop');
    check(await page.evaluate(() => document.activeElement.id) === 'drop', 'the drop zone cannot take the focus');
    choosers.length = 0;
    await page.keyboard.press('Enter');
    const until = Date.now() + 10_000;
    while (choosers.length === 0 && Date.now() < until) await page.waitForTimeout(50);
    check(choosers.length === 1, 'Enter on the focused drop zone did not open the file chooser');
    const fc = choosers[0];
    await watchBusy(page);
    const answer2 = page.waitForResponse(isValidatePost, { timeout: 90_000 });
    await fc.setFiles(smallPath);
    const r2 = await answer2;
    check(r2.status() === 200, `POST /demo/validate (file input) answered ${r2.status()}`);
    const json2 = await r2.json();
    await page.waitForFunction((name) => {
      const s = document.querySelector('#verdict .v-file strong');
      return s && s.textContent === name;
    }, path.basename(SMALL_ASSET), { timeout: 30_000 });
    check(await page.getAttribute('#verdict', 'data-verdict') === json2.verdict, 'the keyboard upload shows another verdict than the server returned');
    ok(`Enter on the focused zone opens the file chooser; ${path.basename(SMALL_ASSET)} via the file input shows "${json2.verdict}"`);

    // 2. A 5 MB file: refused in words before upload...
    let posts = 0;
    const count = (r) => { if (r.url().endsWith('/demo/validate') && r.method() === 'POST') posts++; };
    page.on('request', count);
    await dropGeneratedGlb(page, 'big.glb', 5_000_000);
    await page.waitForSelector('#error:not([hidden])', { timeout: 10_000 });
    const bigText = await page.textContent('#error');
    check(/too big for the demo: 5\.0 MB, the demo takes up to 4\.4 MB/.test(bigText), `the size error is not in words: ${bigText}`);
    check(await page.isHidden('#report'), 'a report is still shown after the size error');
    await page.waitForTimeout(300);
    check(posts === 0, 'the 5 MB file was uploaded although the page knows it is too big');
    const errShot = path.join(shots, 'demo-error-desktop.png');
    await page.screenshot({ path: errShot, fullPage: false });
    ok(`the 5 MB drop shows "${bigText.trim().slice(0, 80)}…" without uploading`);

    // ... and the server refuses it too when it is sent anyway.
    const server413 = await page.evaluate(async () => {
      const u8 = new Uint8Array(5_000_000);
      new DataView(u8.buffer).setUint32(0, 0x46546c67, true);
      const form = new FormData();
      form.append('file', new File([u8], 'big.glb'));
      const r = await fetch('/demo/validate', { method: 'POST', body: form });
      return { status: r.status, body: await r.json() };
    });
    check(server413.status === 413 && server413.body.error && server413.body.error.code === 'FILE_TOO_LARGE',
      `the server answered ${server413.status} ${JSON.stringify(server413.body)} to a 5 MB upload`);
    check(server413.body.error.detail && server413.body.error.detail.max_bytes === 4_400_000, `413 detail: ${JSON.stringify(server413.body.error.detail)}`);
    ok('POST /demo/validate with 5,000,000 bytes answers 413 FILE_TOO_LARGE (max_bytes 4,400,000)');
    page.off('request', count);

    // 3. Not a model.
    const answer3 = page.waitForResponse(isValidatePost, { timeout: 60_000 });
    await dropFile(page, 'notes.glb', Buffer.from('These are meeting notes, not a 3D model.\n'), 'text/plain');
    const r3 = await answer3;
    const json3 = await r3.json();
    check(r3.status() >= 400 && r3.status() < 500 && json3.error && json3.error.code, `a text file answered ${r3.status()} ${JSON.stringify(json3)}`);
    await page.waitForSelector('#error:not([hidden])', { timeout: 10_000 });
    const txtText = await page.textContent('#error');
    check(/does not look like a glTF model|could not be read/.test(txtText), `the error for a text file is not in words: ${txtText}`);
    check(txtText.toLowerCase().includes(json3.error.message.toLowerCase()), `the page does not show the server's message "${json3.error.message}"`);
    check(await page.isHidden('#report'), 'a report is shown for a text file');
    ok(`a text file named .glb: ${r3.status()} ${json3.error.code}, shown as "${txtText.trim().slice(0, 70)}…"`);

    check(problems.length === 0, `the page logged errors:\n  ${problems.join('\n  ')}`);
    check(external.length === 0, `the page made requests off its origin: ${external.join(', ')}`);
    ok('no page errors, no CSP violations, no requests off the origin');

    await browser.close();
    browser = null;

    // 5. SIGTERM.
    server.child.kill('SIGTERM');
    const { code, signal } = await withTimeout(server.exited, 40_000, 'the server to exit after SIGTERM');
    check(code === 0, `the server exited with code ${code} (signal ${signal}) after SIGTERM`);
    ok('SIGTERM stops the server with exit code 0');

    console.log('screenshots:');
    for (const p of [desktopShot, darkShot, mobileShot, errShot]) console.log(`  ${p}`);
    console.log('PASS: demo page browser test');
  } catch (e) {
    console.error(`FAIL: ${e instanceof TestFailure ? e.message : e.stack || e}`);
    if (server && server.logs.length) {
      console.error('server log (last lines):');
      for (const l of server.logs.slice(-20)) console.error(`  ${l}`);
    }
    await cleanup();
    process.exit(1);
  }
  await cleanup();
  guard.clear();
}

main().catch((e) => {
  console.error(`FAIL: ${e.message || e}`);
  process.exit(1);
});
