#!/usr/bin/env node
// `meshcheck validate --format sarif` checked by Microsoft's SARIF validator.
//
//   node tests/sarif_check.mjs --meshcheck target/debug/meshcheck [--assets ../shared/assets]
//
// Runs meshcheck on real assets of the shared corpus (from the corpus folder,
// so artifact URIs are relative) and validates every log with the SARIF
// Multitool (npm @microsoft/sarif-multitool, pinned in package.json; a
// self-contained .NET program in the platform package): a folder run, files
// with many SPEC-001 validator messages, files that cannot be validated, a
// single file, a run against a baseline (baselineState and suppressions),
// and a file outside the working directory (a file: URI). Any result of
// level `error` in the validator's own log fails the run; its warnings are
// printed. Exits 1 on the first failure.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

function parseArgs(argv) {
  const opts = { meshcheck: null, assets: path.resolve(REPO, '..', 'shared', 'assets') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--meshcheck') opts.meshcheck = path.resolve(argv[++i]);
    else if (a === '--assets') opts.assets = path.resolve(argv[++i]);
    else fail(`unknown argument ${a}`);
  }
  if (!opts.meshcheck) fail('--meshcheck BIN is required');
  return opts;
}

function fail(message) {
  console.error(`sarif_check: ${message}`);
  process.exit(1);
}

// The multitool's executable in the platform package that npm installed.
function multitool() {
  const pkg = `@microsoft/sarif-multitool-${process.platform}`;
  let dir;
  try {
    dir = path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    fail(`${pkg} is not installed: run npm ci`);
  }
  const exe = path.join(dir, process.platform === 'win32' ? 'Sarif.Multitool.exe' : 'Sarif.Multitool');
  if (!fs.existsSync(exe)) fail(`${exe} is missing`);
  // npm may skip the package's postinstall (chmod u+x).
  if (process.platform !== 'win32') fs.chmodSync(exe, 0o755);
  return exe;
}

const opts = parseArgs(process.argv.slice(2));
const tool = multitool();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'meshcheck-sarif-'));
const env = {
  ...process.env,
  // .NET without ICU (a bare machine) would abort; the validator needs no culture data.
  DOTNET_SYSTEM_GLOBALIZATION_INVARIANT: '1',
  DOTNET_CLI_TELEMETRY_OPTOUT: '1',
};
// meshcheck runs in the corpus folder: point it at this checkout's validator.
if (!env.MESHCHECK_GLTF_VALIDATOR && fs.existsSync(path.join(REPO, 'node_modules', 'gltf-validator'))) {
  env.MESHCHECK_GLTF_VALIDATOR = path.join(REPO, 'node_modules', 'gltf-validator');
}

function meshcheck(args, cwd = opts.assets) {
  const r = spawnSync(opts.meshcheck, ['validate', ...args], { cwd, env, encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.error) fail(`meshcheck did not run: ${r.error.message}`);
  // 0 pass/warn, 1 fail, 3 unreadable input: all still write a SARIF log.
  if (![0, 1, 3].includes(r.status)) fail(`meshcheck ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

let total = { logs: 0, results: 0, warnings: 0 };

function validate(name, sarifText, expect) {
  const log = JSON.parse(sarifText);
  const results = log.runs[0].results;
  if (expect) expect(log);
  const file = path.join(tmp, `${name}.sarif`);
  const out = path.join(tmp, `${name}.validation.sarif`);
  fs.writeFileSync(file, sarifText);
  const r = spawnSync(tool, ['validate', file, '--output', out, '--quiet'], { env, encoding: 'utf8' });
  if (r.error) fail(`the SARIF Multitool did not run: ${r.error.message}`);
  if (r.status !== 0 || !fs.existsSync(out)) {
    fail(`the SARIF Multitool failed on ${name} (exit ${r.status}): ${r.stdout}${r.stderr}`);
  }
  const report = JSON.parse(fs.readFileSync(out, 'utf8'));
  const found = report.runs.flatMap((run) => run.results || []);
  const text = (x) => `${x.ruleId}: ${x.message.text || (x.message.arguments || []).join(' | ')}`;
  const errors = found.filter((x) => x.level === 'error');
  const warnings = found.filter((x) => x.level !== 'error' && x.level !== 'note' && x.level !== 'none');
  for (const w of warnings) console.log(`  ${name}: warning ${text(w)}`);
  if (errors.length > 0) {
    for (const e of errors) console.error(`  ${name}: ERROR ${text(e)}`);
    fail(`${name}: ${errors.length} SARIF validation errors (log kept at ${file})`);
  }
  total.logs += 1;
  total.results += results.length;
  total.warnings += warnings.length;
  console.log(`ok ${name}: ${results.length} results, ${warnings.length} validator warnings`);
}

function must(cond, message) {
  if (!cond) fail(message);
}

// 1. A folder run: thirteen Blender cubes, one problem each.
const folder = meshcheck(['models/khronos-asset-auditor', '--format', 'sarif']);
validate('folder', folder, (log) => {
  must(log.runs[0].artifacts.length === 13, 'the folder run lists its 13 files as artifacts');
  must(log.runs[0].results.every((r) => !r.locations[0].physicalLocation.artifactLocation.uri.startsWith('file:')),
    'artifact URIs are relative to the working directory');
});

// 2. SPEC-001: the validator suite's mesh tests, many messages with pointers.
const spec = meshcheck(['validator-suite/test/base/data/mesh', 'validator-suite/test/base/data/mesh_data', '--format', 'sarif']);
validate('spec001', spec, (log) => {
  const messages = log.runs[0].results.filter((r) => r.ruleId === 'SPEC-001' && r.properties.pointer);
  must(messages.length > 20, `SPEC-001 messages have results of their own (${messages.length})`);
  must(messages.every((r) => r.locations[0].logicalLocations[0].fullyQualifiedName === r.properties.pointer),
    'each validator message carries its JSON pointer as a logical location');
});

// 3. Files that cannot be validated (GLB containers the suite breaks on purpose).
const broken = meshcheck(['validator-suite/test/base/data/glb', '--format', 'sarif']);
validate('unreadable', broken, (log) => {
  must(log.runs[0].results.some((r) => r.ruleId === 'MALFORMED_GLTF'), 'an unreadable file is a MALFORMED_GLTF result');
});

// 4. One textured, skinned file.
validate('single', meshcheck(['models/khronos-sample-models/CesiumMan.glb', '--format', 'sarif']));

// 5. Against a baseline: the auditor folder accepted, the mesh tests new.
const baseline = path.join(tmp, 'baseline.json');
meshcheck(['models/khronos-asset-auditor', '--write-baseline', baseline, '--format', 'json']);
const judged = meshcheck(['models/khronos-asset-auditor', 'validator-suite/test/base/data/mesh', '--baseline', baseline, '--format', 'sarif']);
validate('baseline', judged, (log) => {
  const states = new Set(log.runs[0].results.map((r) => r.baselineState));
  must(states.has('new') && states.has('unchanged') && states.size === 2, `baselineState is new or unchanged (${[...states]})`);
  must(log.runs[0].results.filter((r) => r.baselineState === 'unchanged').every((r) => r.suppressions[0].status === 'accepted'),
    'accepted findings carry an accepted suppression');
});

// 6. A file outside the working directory: an absolute file: URI.
const outside = meshcheck([path.join(opts.assets, 'models/khronos-sample-models/Fox.glb'), '--format', 'sarif'], tmp);
validate('outside', outside, (log) => {
  must(log.runs[0].artifacts[0].location.uri.startsWith('file:///'), 'a file outside the working directory has a file: URI');
});

fs.rmSync(tmp, { recursive: true, force: true });
console.log(`sarif_check: ${total.logs} SARIF logs, ${total.results} results: no validator errors (${total.warnings} warnings)`);
