// The Khronos glTF-Validator run bare over a folder, in one Node process:
// the peer of a `meshcheck validate FOLDER` run with SPEC-001
// (benches/spec001.rs, "folder"). It walks FOLDER recursively for .glb and
// .gltf files, sorted by path as meshcheck sorts them, and validates each in
// turn as meshcheck's driver does: the bytes read from disk, maxIssues 0, no
// timestamp, external resources read from disk beside the file.
//
//   node benches/validator_folder.js FOLDER
//
// Prints one JSON line: {files, ms (validations only, process start and
// module load excluded), errors (the sum of every file's error count),
// refused (files the validator rejected outright)}. The benchmark times the
// whole process, start included.
'use strict';
const fs = require('fs');
const path = require('path');
const pkg = process.env.MESHCHECK_GLTF_VALIDATOR || path.join(__dirname, '..', 'node_modules', 'gltf-validator');
const validator = require(pkg);

function walk(dir, out) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.isFile() && /\.(glb|gltf)$/i.test(e.name)) out.push(p);
  }
  return out;
}

// A Uint8Array with its own ArrayBuffer (the compiled validator reads the
// whole underlying buffer, so a pooled Buffer's view would not do).
function own(b) {
  const out = new Uint8Array(b.length);
  out.set(b);
  return out;
}

function once(file) {
  return validator.validateBytes(own(fs.readFileSync(file)), {
    uri: path.basename(file),
    maxIssues: 0,
    writeTimestamp: false,
    externalResourceFunction: (uri) =>
      new Promise((resolve, reject) => {
        if (/^[a-z][a-z0-9+.-]+:/i.test(uri) || uri.startsWith('/')) {
          return reject(`Could not load '${uri}': remote or absolute URIs are not fetched`);
        }
        fs.readFile(path.resolve(path.dirname(file), decodeURIComponent(uri)), (err, b) => {
          if (err) return reject(`Could not load '${uri}': not found`);
          resolve(own(b));
        });
      }),
  });
}

async function main() {
  const files = walk(process.argv[2], []).sort();
  const t0 = process.hrtime.bigint();
  let errors = 0;
  let refused = 0;
  for (const f of files) {
    try {
      errors += (await once(f)).issues.numErrors;
    } catch (e) {
      refused += 1;
    }
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  console.log(JSON.stringify({ files: files.length, ms, errors, refused }));
}
main();
