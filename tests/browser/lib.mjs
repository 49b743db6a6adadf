// What the browser tests (demo.mjs, report_card.mjs) share: their command
// line, assertions, time limits and how chromium is started.
//
// Chromium is Debian's (apt-get install chromium), driven through
// playwright-core (npm ci); it runs headless, without a sandbox (CI runs as
// root), a GPU or any background networking, so the only requests a page
// makes are the ones the test routes.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const CHROMIUM_ARGS = [
  '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

// A failed expectation: printed as its message, without a stack.
export class TestFailure extends Error {}

export function check(cond, message) {
  if (!cond) throw new TestFailure(message);
}

export function ok(message) {
  console.log(`ok - ${message}`);
}

// `promise`, or a TestFailure naming `what` after `ms`.
export function withTimeout(promise, ms, what) {
  let t;
  const timeout = new Promise((_, reject) => {
    t = setTimeout(() => reject(new TestFailure(`timed out after ${ms / 1000} s: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(t));
}

// Parses `--meshcheck PATH [--assets DIR] [--chromium PATH]` and the test's
// own options (`extra`: flag -> key, each taking a value). `--meshcheck` is
// required; the assets default to ../shared/assets beside the checkout and
// chromium to $CHROMIUM or /usr/bin/chromium.
export function parseArgs(argv, script, extra = {}) {
  const opts = { meshcheck: null, assets: path.resolve(REPO, '..', 'shared', 'assets'), chromium: process.env.CHROMIUM || '/usr/bin/chromium' };
  for (const key of Object.values(extra)) opts[key] = null;
  const flags = { '--meshcheck': 'meshcheck', '--assets': 'assets', '--chromium': 'chromium', ...extra };
  const usage = `usage: node tests/browser/${script} --meshcheck PATH [--assets DIR] ${Object.keys(extra).map((f) => `[${f} VALUE] `).join('')}[--chromium PATH]`;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') {
      console.log(usage);
      process.exit(0);
    }
    if (!(a in flags)) throw new Error(`unknown argument ${a}\n${usage}`);
    if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
    opts[flags[a]] = argv[++i];
  }
  if (!opts.meshcheck) throw new Error(`--meshcheck PATH is required\n${usage}`);
  return opts;
}

// Starts chromium (within 70 s, or a TestFailure).
export function launch(executablePath) {
  return withTimeout(chromium.launch({ executablePath, args: CHROMIUM_ARGS, timeout: 60_000 }), 70_000, 'chromium to start');
}

// Ends the process with a failure when the whole test runs past `ms`; call
// `.clear()` on the result when done.
export function overall(ms, what, onTimeout = () => {}) {
  const timer = setTimeout(() => {
    console.error(`FAIL: ${what} ran past ${ms / 1000} s`);
    onTimeout();
    process.exit(1);
  }, ms);
  timer.unref();
  return { clear: () => clearTimeout(timer) };
}
