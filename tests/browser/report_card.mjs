#!/usr/bin/env node
// Browser test of the HTML report card (`meshcheck validate --format html`).
//
//   node tests/browser/report_card.mjs --meshcheck target/debug/meshcheck \
//        [--assets ../shared/assets] [--screenshot docs/report-card.png] [--chromium /usr/bin/chromium]
//
// Makes three cards with the real binary and opens each in Debian's chromium
// through playwright-core, with every request routed and none allowed but
// the page itself:
//   (a) a real asset in full mode with its turntable: it renders, six stills
//       and the GIF load from data: URIs, every family and check is shown,
//       gauges and validator messages are there, no overflow at 375 px;
//   (b) a folder run: an index row per file whose links reach its card, an
//       error card for a broken file;
//   (c) a code-built .gltf whose file name, node, mesh, material, texture,
//       image URI, scene and extension names hold markup and <script> /
//       <img onerror> payloads: they show as text, no element, attribute or
//       dialog comes of them.
// On every page: no console errors (a CSP violation is one), no page errors,
// no request at all besides the document. Then (d) `compare --mode full
// --format html` of two assets: the stills side by side, each pair with
// its difference score, under the same rules. --screenshot writes a 1200 px
// wide picture of card (a) (docs/report-card.png is made so).
// Exits 1 with a message on the first failure; bounded to three minutes.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO, TestFailure, check, launch, ok, overall, parseArgs } from './lib.mjs';

const OVERALL_MS = 180_000;
const ASSET = 'models/khronos-sample-models/CesiumMan.glb'; // skinned, textured; fails SPEC-001 with many messages
const FOLDER_ASSETS = ['models/khronos-sample-models/Box.glb', 'models/khronos-sample-models/Fox.glb', 'models/khronos-sample-models/BoxTextured.zip'];
// Where the test serves each card; any other request fails the test.
const DOC_URL = 'http://report-card.invalid/card.html';
const VIEWS = ['front', 'right', 'back', 'left', 'top', 'three_quarter'];

// Markup and script where an asset keeps text.
const PAYLOADS = [
  '<script>alert(1)</script>',
  '<img src=x onerror=alert(2)>',
  '"><svg onload=alert(3)>',
  "' onmouseover='alert(4)",
  '</details><b>bold</b>',
];
const HOSTILE_NAME = '"><img src=x onerror=alert(5)>.gltf';



// A one-triangle .gltf (buffer inline) whose every name holds a payload; the
// image URI does not resolve and the extension is unknown, so both reach the
// report's messages.
function hostileGltf() {
  const pos = new Float32Array([0, 0, 0, 1, 0, 0, 0, 1, 0]);
  const idx = new Uint16Array([0, 1, 2, 0]);
  const buf = Buffer.concat([Buffer.from(pos.buffer), Buffer.from(idx.buffer)]);
  const gltf = {
    asset: { version: '2.0', generator: PAYLOADS[2] },
    extensionsUsed: [PAYLOADS[0]],
    scene: 0,
    scenes: [{ nodes: [0], name: PAYLOADS[4] }],
    nodes: [{ mesh: 0, name: PAYLOADS[0] }],
    meshes: [{ name: PAYLOADS[1], primitives: [{ attributes: { POSITION: 0 }, indices: 1, material: 0 }] }],
    materials: [{ name: PAYLOADS[2], pbrMetallicRoughness: { baseColorTexture: { index: 0 } } }],
    textures: [{ source: 0, name: PAYLOADS[3] }],
    images: [{ uri: `${PAYLOADS[1]}.png`, name: PAYLOADS[4] }],
    accessors: [
      { bufferView: 0, componentType: 5126, count: 3, type: 'VEC3', min: [0, 0, 0], max: [1, 1, 0] },
      { bufferView: 1, componentType: 5123, count: 3, type: 'SCALAR' },
    ],
    bufferViews: [{ buffer: 0, byteOffset: 0, byteLength: 36 }, { buffer: 0, byteOffset: 36, byteLength: 6 }],
    buffers: [{ byteLength: buf.length, uri: `data:application/octet-stream;base64,${buf.toString('base64')}` }],
  };
  return JSON.stringify(gltf);
}

// Runs meshcheck; returns its stdout (the page) after checking the exit code.
function card(bin, args, env, codes, what, cwd) {
  const r = spawnSync(bin, args, { env, cwd, encoding: 'utf8', maxBuffer: 256 << 20, timeout: 120_000 });
  check(r.error === undefined, `meshcheck ${what}: ${r.error}`);
  check(codes.includes(r.status), `meshcheck ${what} exited ${r.status} (expected ${codes.join(' or ')}):\n${(r.stderr || '').slice(-2000)}`);
  check(!/panicked/.test(r.stderr), `meshcheck ${what} panicked:\n${r.stderr}`);
  check(r.stdout.startsWith('<!doctype html>'), `meshcheck ${what} did not print a page: ${r.stdout.slice(0, 200)}`);
  return r.stdout;
}

// Opens a page in a fresh context with every request routed: the document
// is served, anything else is recorded and refused. Console errors (a CSP
// violation is one), page errors and dialogs are recorded as problems.
async function open(browser, html, viewport) {
  const context = await browser.newContext({ viewport, colorScheme: 'light', deviceScaleFactor: 1 });
  context.setDefaultTimeout(30_000);
  const requests = [];
  const problems = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url === DOC_URL) return route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: html });
    requests.push(`routed: ${url}`);
    return route.abort('blockedbyclient');
  });
  const page = await context.newPage();
  page.on('request', (r) => {
    const u = r.url();
    if (u !== DOC_URL && !u.startsWith('data:')) requests.push(`request: ${u}`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.type()} ${d.message()}`);
    d.dismiss().catch(() => {});
  });
  const resp = await page.goto(DOC_URL, { waitUntil: 'load' });
  check(resp && resp.status() === 200, 'the card did not load');
  // Give anything that would fire late (an injected handler, a lazy image) a moment.
  await page.waitForTimeout(300);
  return { context, page, requests, problems };
}

// What no card may hold: script, active elements, event-handler attributes,
// images that did not load, anything fetched.
async function checkInert(view, what) {
  const facts = await view.page.evaluate(() => {
    const handlers = [];
    for (const el of document.querySelectorAll('*')) {
      for (const a of el.attributes) if (/^on/i.test(a.name)) handlers.push(`${el.tagName.toLowerCase()}[${a.name}]`);
    }
    return {
      scripts: document.scripts.length,
      active: document.querySelectorAll('iframe, object, embed, frame, form, input, button, link[rel=stylesheet], meta[http-equiv=refresh], base').length,
      handlers,
      images: [...document.images].map((i) => ({ ok: i.complete && i.naturalWidth > 0, src: i.src.slice(0, 30) })),
      csp: (document.querySelector('meta[http-equiv="Content-Security-Policy"]') || {}).content || '',
      styled: getComputedStyle(document.body).backgroundColor,
    };
  });
  check(facts.scripts === 0, `${what}: ${facts.scripts} script elements`);
  check(facts.active === 0, `${what}: ${facts.active} active elements (iframe, object, form, stylesheet link, …)`);
  check(facts.handlers.length === 0, `${what}: event-handler attributes ${facts.handlers.join(', ')}`);
  const bad = facts.images.filter((i) => !i.ok || !i.src.startsWith('data:image/'));
  check(bad.length === 0, `${what}: images that did not load from data: URIs: ${JSON.stringify(bad)}`);
  check(/^default-src 'none'; img-src data:; style-src 'sha256-/.test(facts.csp), `${what}: CSP is ${facts.csp}`);
  check(facts.styled === 'rgb(245, 246, 248)', `${what}: the stylesheet did not apply (body background ${facts.styled})`);
  check(view.requests.length === 0, `${what}: requests besides the document:\n  ${view.requests.join('\n  ')}`);
  check(view.problems.length === 0, `${what}: console or page errors:\n  ${view.problems.join('\n  ')}`);
  return facts;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2), 'report_card.mjs', { '--screenshot': 'screenshot' });
  const bin = path.resolve(opts.meshcheck);
  opts.assets = path.resolve(opts.assets);
  check(fs.existsSync(bin), `no meshcheck binary at ${bin} (build it with cargo build)`);
  check(fs.existsSync(opts.chromium), `no chromium at ${opts.chromium} (apt-get install chromium)`);
  for (const rel of [ASSET, ...FOLDER_ASSETS]) check(fs.existsSync(path.join(opts.assets, rel)), `the shared assets are not at ${opts.assets} (need ${rel})`);

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'meshcheck-card-test-'));
  const runtimeDir = path.join(tmp, 'xdg');
  fs.mkdirSync(runtimeDir, { mode: 0o700 });
  fs.chmodSync(runtimeDir, 0o700);
  const env = { ...process.env, XDG_RUNTIME_DIR: runtimeDir };
  // Card (a) runs in the assets folder: name the repository's validator package.
  const validator = path.join(REPO, 'node_modules', 'gltf-validator');
  if (!env.MESHCHECK_GLTF_VALIDATOR && fs.existsSync(validator)) env.MESHCHECK_GLTF_VALIDATOR = validator;
  let browser = null;
  const cleanup = async () => {
    if (browser) await browser.close().catch(() => {});
    browser = null;
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  const guard = overall(OVERALL_MS, 'the report card test');

  try {
    // The three cards.
    const started = Date.now();
    // Run in the assets folder, so the card names the file as the corpus does.
    const pageA = card(bin, ['validate', ASSET, '--format', 'html', '--mode', 'full', '--turntable'], env, [0, 1], 'on the real asset', opts.assets);
    ok(`card (a): ${path.basename(ASSET)} in full mode with a turntable, ${(pageA.length / 1024).toFixed(0)} KiB in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    const folder = path.join(tmp, 'folder');
    fs.mkdirSync(path.join(folder, 'sub'), { recursive: true });
    for (const rel of FOLDER_ASSETS) fs.copyFileSync(path.join(opts.assets, rel), path.join(folder, path.basename(rel) === 'Fox.glb' ? 'sub/Fox.glb' : path.basename(rel)));
    fs.writeFileSync(path.join(folder, 'broken.glb'), Buffer.from('glTF\x02\x00\x00\x00\xff\xff\xff\xff', 'latin1'));
    const pageB = card(bin, ['validate', folder, '--format', 'html'], env, [3], 'on a folder');
    ok('card (b): a folder of four files, one broken (exit 3)');
    const hostileDir = path.join(tmp, 'hostile');
    fs.mkdirSync(hostileDir);
    const hostilePath = path.join(hostileDir, HOSTILE_NAME);
    fs.writeFileSync(hostilePath, hostileGltf());
    const pageC = card(bin, ['validate', hostilePath, '--format', 'html'], env, [1], 'on the hostile asset');
    ok('card (c): a .gltf whose names, URI and file name hold markup and script (exit 1)');
    const pageD = card(bin, ['compare', FOLDER_ASSETS[0], FOLDER_ASSETS[2], '--mode', 'full', '--format', 'html'], env, [1], 'compare', opts.assets);
    ok('page (d): compare Box.glb with BoxTextured.zip in full mode (exit 1: NEW is worse)');
    const catalog = JSON.parse(spawnSync(bin, ['checks', '--format', 'json'], { encoding: 'utf8' }).stdout);
    const families = [...new Set(catalog.map((c) => c.id.split('-')[0]))];

    browser = await launch(opts.chromium);

    // (a) The real asset.
    {
      const view = await open(browser, pageA, { width: 1200, height: 1500 });
      const facts = await checkInert(view, 'card (a)');
      const shown = await view.page.evaluate(() => ({
        verdict: document.querySelector('.verdict').getAttribute('data-verdict'),
        title: document.querySelector('.verdict h2').textContent,
        file: document.querySelector('.verdict .v-file strong').textContent,
        views: [...document.querySelectorAll('.shots figure:not([data-view=turntable])')].map((f) => ({ view: f.getAttribute('data-view'), w: f.querySelector('img').naturalWidth })),
        gif: [...document.images].filter((i) => i.src.startsWith('data:image/gif')).map((i) => i.naturalWidth),
        families: [...document.querySelectorAll('details.family')].map((d) => d.getAttribute('data-family')),
        checks: [...document.querySelectorAll('li.check')].map((c) => c.getAttribute('data-check')),
        open: [...document.querySelectorAll('details.family[open]')].map((d) => d.getAttribute('data-family')),
        gauges: document.querySelectorAll('svg.gauge').length,
        messages: document.querySelectorAll('.msgs li').length,
        measured: [...document.querySelectorAll('.mt-col h4')].map((h) => h.textContent),
      }));
      check(['pass', 'warn', 'fail'].includes(shown.verdict), `verdict ${shown.verdict}`);
      check(shown.file === ASSET, `the banner names ${shown.file}`);
      check(JSON.stringify(shown.views.map((v) => v.view)) === JSON.stringify(VIEWS), `the views are ${JSON.stringify(shown.views)}`);
      check(shown.views.every((v) => v.w === 512), `stills are not 512 px: ${JSON.stringify(shown.views)}`);
      check(shown.gif.length === 1 && shown.gif[0] > 0, `the turntable: ${JSON.stringify(shown.gif)}`);
      check(shown.families.length === families.length && families.every((f) => shown.families.includes(f)),
        `families ${shown.families.join(',')} vs the catalog's ${families.join(',')}`);
      check(shown.checks.length === catalog.length && catalog.every((c) => shown.checks.includes(c.id)), `checks shown: ${shown.checks.length} of ${catalog.length}`);
      check(shown.gauges >= 5, `only ${shown.gauges} gauges`);
      check(shown.messages > 5, `only ${shown.messages} validator messages`);
      check(shown.measured.includes('Measured') && shown.measured.includes('Threshold'), 'measured vs threshold tables');
      ok(`card (a) renders: "${shown.title}", ${facts.images.length} images from data: URIs (6 stills of 512 px, a turntable), ${shown.families.length} families (${shown.open.join(', ') || 'none'} open), ${shown.checks.length} checks, ${shown.gauges} gauges, ${shown.messages} validator messages`);

      if (opts.screenshot) {
        const out = path.resolve(opts.screenshot);
        fs.mkdirSync(path.dirname(out), { recursive: true });
        await view.page.screenshot({ path: out, fullPage: false });
        ok(`screenshot ${out} (${(fs.statSync(out).size / 1024).toFixed(0)} KiB)`);
      }
      // Narrow screens: nothing wider than the viewport.
      await view.page.setViewportSize({ width: 375, height: 812 });
      await view.page.waitForFunction(() => window.innerWidth === 375);
      const overflow = await view.page.evaluate(() => {
        const w = document.documentElement.clientWidth;
        const wide = [...document.querySelectorAll('body *')].filter((e) => {
          const r = e.getBoundingClientRect();
          return r.width > 0 && r.right > w + 1;
        }).slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.className.baseVal ?? e.className}`);
        return { scroll: document.documentElement.scrollWidth, wide };
      });
      check(overflow.scroll <= 375 && overflow.wide.length === 0, `card (a) overflows at 375 px: scrollWidth ${overflow.scroll}, ${overflow.wide.join(', ')}`);
      // Dark mode follows the system, as on the demo page.
      await view.page.emulateMedia({ colorScheme: 'dark' });
      const dark = await view.page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      check(dark === 'rgb(11, 16, 32)', `dark mode background ${dark}`);
      check(view.requests.length === 0 && view.problems.length === 0, `card (a) after resizing: ${[...view.requests, ...view.problems].join('; ')}`);
      ok('card (a): no console errors, no requests, no overflow at 375 px, dark mode follows the system');
      await view.context.close();
    }

    // (b) The folder.
    {
      const view = await open(browser, pageB, { width: 1200, height: 900 });
      await checkInert(view, 'card (b)');
      const rows = await view.page.evaluate(() => [...document.querySelectorAll('#index tbody tr')].map((tr) => ({
        verdict: tr.getAttribute('data-verdict'),
        href: tr.querySelector('a').getAttribute('href'),
        text: tr.querySelector('a').textContent,
      })));
      check(rows.length === 4, `the index has ${rows.length} rows`);
      check(rows.some((r) => r.verdict === 'error' && r.text.endsWith('broken.glb')), `no error row for broken.glb: ${JSON.stringify(rows)}`);
      check(rows.some((r) => r.text.endsWith('sub/Fox.glb')), 'the file in the subfolder is listed');
      for (const r of rows) {
        await view.page.click(`#index a[href="${r.href}"]`);
        await view.page.waitForFunction((h) => location.hash === h, r.href);
        const target = await view.page.evaluate((id) => {
          const el = document.getElementById(id);
          if (!el) return null;
          const b = el.getBoundingClientRect();
          return { top: b.top, height: innerHeight, label: el.getAttribute('aria-label'), verdict: (el.querySelector('[data-verdict]') || {}).getAttribute?.('data-verdict') };
        }, r.href.slice(1));
        check(target && target.top > -5 && target.top < target.height / 2, `${r.href} did not scroll to its card: ${JSON.stringify(target)}`);
        check(target.label === r.text && target.verdict === r.verdict, `${r.href}: card ${JSON.stringify(target)} vs row ${JSON.stringify(r)}`);
      }
      const errorCard = await view.page.evaluate(() => (document.querySelector('.alert') || {}).textContent || '');
      check(/could not be validated/.test(errorCard) && /MALFORMED_GLTF/.test(errorCard), `the broken file's card: ${errorCard}`);
      check(view.requests.length === 0 && view.problems.length === 0, `card (b) after navigating: ${[...view.requests, ...view.problems].join('; ')}`);
      ok(`card (b): ${rows.length} index rows (${rows.map((r) => r.verdict).join(', ')}), each link reaches its card; the broken file has an error card`);
      await view.context.close();
    }

    // (c) The hostile asset.
    {
      const view = await open(browser, pageC, { width: 1200, height: 900 });
      await checkInert(view, 'card (c)');
      const seen = await view.page.evaluate(() => ({
        text: document.body.innerText,
        title: document.title,
        bold: [...document.querySelectorAll('b')].filter((b) => b.textContent === 'bold').length,
        svgs: [...document.querySelectorAll('svg')].filter((s) => s.closest('.gauge') === null && s.querySelector('path') === null).length,
        imgs: document.images.length,
        file: document.querySelector('.verdict .v-file strong').textContent,
      }));
      check(seen.bold === 0, 'a <b> element came from an asset name');
      check(seen.svgs === 0, 'an <svg> element came from an asset name');
      check(seen.imgs === 0, `${seen.imgs} images on a checks_only card (an <img> came from an asset name)`);
      check(seen.file === hostilePath, `the file name shows as ${JSON.stringify(seen.file)}`);
      check(seen.title === `meshcheck report: ${hostilePath}`, `the title is ${JSON.stringify(seen.title)}`);
      const text = seen.text.replace(/\s+/g, ' ');
      for (const p of [`${PAYLOADS[1]}.png`, PAYLOADS[0]]) check(text.includes(p), `the page does not show ${JSON.stringify(p)} as text`);
      check(view.problems.length === 0, `card (c): ${view.problems.join('; ')}`);
      ok('card (c): the file name, the image URI and the extension name show as text; no element, handler or dialog came of them');
      await view.context.close();
    }

    // (d) compare --mode full --format html: the same rules, stills side by side.
    {
      const view = await open(browser, pageD, { width: 1200, height: 900 });
      const facts = await checkInert(view, 'compare page (d)');
      const pairs = await view.page.evaluate(() => [...document.querySelectorAll('li.pair')].map((li) => ({
        view: li.getAttribute('data-view'),
        imgs: [...li.querySelectorAll('img')].map((i) => i.naturalWidth),
        score: li.querySelector('.pair-head span').textContent,
      })));
      check(JSON.stringify(pairs.map((p) => p.view)) === JSON.stringify(VIEWS), `pairs ${JSON.stringify(pairs)}`);
      check(pairs.every((p) => p.imgs.length === 2 && p.imgs.every((w) => w === 512)), `pair images ${JSON.stringify(pairs)}`);
      check(pairs.every((p) => /^difference \d+(\.\d+)?% · SSIM 0\.\d+$/.test(p.score)), `scores ${pairs.map((p) => p.score).join('; ')}`);
      const worse = await view.page.evaluate(() => document.querySelector('.verdict').getAttribute('data-worse'));
      check(worse === 'true', `data-worse ${worse}`);
      ok(`page (d): ${pairs.length} views side by side (${facts.images.length} images), ${pairs[0].score} for the front; no console errors, no requests`);
      await view.context.close();
    }

    await browser.close();
    browser = null;
    console.log('PASS: report card browser test');
  } catch (e) {
    console.error(`FAIL: ${e instanceof TestFailure ? e.message : e.stack || e}`);
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
