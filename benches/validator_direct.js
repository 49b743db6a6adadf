// The Khronos glTF-Validator run directly in Node, with no meshcheck in
// between: the reference that SPEC-001 is compared with (tests) and timed
// against (benchmarks).
//
//   node benches/validator_direct.js [--repeat N] FILE...
//
// Prints one JSON line per file: {file, ms (median wall time of one
// validation), ms_all, errors, warnings, infos, hints, messages (errors and
// warnings: code, message, severity, pointer/offset)}. External resources
// are read from disk beside the file, as the validator's own CLI does.
'use strict';
const fs = require('fs');
const path = require('path');
const pkg = process.env.MESHCHECK_GLTF_VALIDATOR || path.join(__dirname, '..', 'node_modules', 'gltf-validator');
const validator = require(pkg);

async function once(file) {
  const bytes = fs.readFileSync(file);
  const data = new Uint8Array(bytes.length);
  data.set(bytes);
  return validator.validateBytes(data, {
    uri: path.basename(file),
    maxIssues: 0,
    writeTimestamp: false,
    externalResourceFunction: (uri) =>
      new Promise((resolve, reject) => {
        if (/^[a-z][a-z0-9+.-]+:/i.test(uri) || uri.startsWith('/')) return reject(`Could not load '${uri}': remote or absolute URIs are not fetched`);
        fs.readFile(path.resolve(path.dirname(file), decodeURIComponent(uri)), (err, b) => {
          if (err) return reject(`Could not load '${uri}': not found`);
          const out = new Uint8Array(b.length);
          out.set(b);
          resolve(out);
        });
      }),
  });
}

async function main() {
  const args = process.argv.slice(2);
  let repeat = 1;
  if (args[0] === '--repeat') {
    repeat = Number(args[1]);
    args.splice(0, 2);
  }
  for (const file of args) {
    const times = [];
    let report;
    try {
      for (let i = 0; i < repeat; i++) {
        const t0 = process.hrtime.bigint();
        report = await once(file);
        times.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    } catch (e) {
      console.log(JSON.stringify({ file, error: String(e) }));
      continue;
    }
    times.sort((a, b) => a - b);
    const i = report.issues;
    console.log(
      JSON.stringify({
        file,
        ms: times[Math.floor(times.length / 2)],
        ms_all: times,
        errors: i.numErrors,
        warnings: i.numWarnings,
        infos: i.numInfos,
        hints: i.numHints,
        messages: i.messages
          .filter((m) => m.severity <= 1)
          .map((m) => {
            const o = { code: m.code, message: m.message, severity: m.severity === 0 ? 'error' : 'warning' };
            if (m.pointer !== undefined) o.pointer = m.pointer;
            if (m.offset !== undefined) o.offset = m.offset;
            return o;
          }),
      }),
    );
  }
}
main();
