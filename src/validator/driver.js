// meshcheck's driver for the Khronos glTF-Validator (npm gltf-validator).
//
// Embedded in the meshcheck binary and run as `node -e <this>`; it speaks
// length-prefixed frames on stdin/stdout:
//   frame   = u32le total_length, u32le json_length, json, payload
//   total_length counts everything after itself.
// Rust -> Node: {type:"validate", id, uri, path?, size?, resources?} + the
//               asset bytes (none when `path` names the plain file to read
//               instead, of `size` bytes); `resources` answers ahead the
//               URIs a .gltf names: uri -> {path, size} or {reason};
//               {type:"bytes", id} + the asset bytes, when asked for them;
//               {type:"resource", req, found, reason?, path?, size?} + the
//               resource bytes (none when `path` names the file to read).
// Node -> Rust: {type:"ready", version, supported, flags, v8_flags} (flags:
//               the Node options it was started with, from process.execArgv;
//               v8_flags: those it set itself, from MESHCHECK_V8_FLAGS);
//               {type:"started", id} as a validation begins (they run one at
//               a time, in the order sent; later ones wait in the queue);
//               {type:"bytes", id, reason} when `path` could not be read as
//               announced (gone, another size): meshcheck sends the bytes;
//               {type:"resource", id, req, uri, local} when the validator asks
//               for a file (`local: false` after a path could not be read:
//               bytes only);
//               {type:"result", id, ...folded report} or {type:"error", id, message}.
// The report is folded here (counts per code, at most MAX_MESSAGES errors and
// warnings kept) so that a file with a million issues costs little to send.
// Reading a local file here saves a copy of its bytes through the pipe (and
// two more inside Node); what the validator sees is the same bytes.
'use strict';

// The validator's own logging must never reach stdout, which carries frames.
const log = (...args) => process.stderr.write(args.map(String).join(' ') + '\n');
console.log = log;
console.info = log;
console.warn = log;
console.debug = log;

// V8 options from meshcheck (validator::V8_FLAGS), set before the validator
// is loaded. Here, unlike on Node's command line, an option this V8 does not
// know costs an error line on stderr, not the start.
const v8 = require('v8');
const v8Flags = (process.env.MESHCHECK_V8_FLAGS || '').split(' ').filter(Boolean);
for (const flag of v8Flags) v8.setFlagsFromString(flag);

const fs = require('fs');
const pkg = process.env.MESHCHECK_VALIDATOR_PKG;
const validator = require(pkg);
const MAX_MESSAGES = Number(process.env.MESHCHECK_VALIDATOR_MAX_MESSAGES || 1000);
const supported = validator.supportedExtensions();

function send(header, payload) {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const body = payload ? Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength) : Buffer.alloc(0);
  const head = Buffer.alloc(8);
  head.writeUInt32LE(4 + json.length + body.length, 0);
  head.writeUInt32LE(json.length, 4);
  process.stdout.write(Buffer.concat([head, json, body]));
}

// A copy with its own ArrayBuffer (memcpy speed).
function fresh(view) {
  const out = new Uint8Array(view.length);
  out.set(view);
  return out;
}

// A local file read into a Uint8Array of its own, or null when it cannot be
// read or is not the regular file of `size` bytes meshcheck announced.
function readLocal(path, size) {
  let fd;
  try {
    fd = fs.openSync(path, 'r');
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size !== size) return null;
    const out = new Uint8Array(size);
    let off = 0;
    while (off < size) {
      const n = fs.readSync(fd, out, off, size - off, off);
      if (n === 0) return null;
      off += n;
    }
    return out;
  } catch (e) {
    return null;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

const pending = new Map();
const wanted = new Map(); // validation id -> resolve, waiting for its bytes
let nextReq = 0;
let queue = Promise.resolve();

function fold(report) {
  const issues = report.issues || {};
  const byCode = {};
  const messages = [];
  let kept = 0;
  let listed = 0;
  for (const m of issues.messages || []) {
    byCode[m.code] = (byCode[m.code] || 0) + 1;
    if (m.severity === 0 || m.severity === 1) {
      listed += 1;
      if (kept < MAX_MESSAGES) {
        const out = { code: m.code, message: m.message, severity: m.severity === 0 ? 'error' : 'warning' };
        if (m.pointer !== undefined) out.pointer = m.pointer;
        if (m.offset !== undefined) out.offset = m.offset;
        messages.push(out);
        kept += 1;
      }
    }
  }
  const used = (report.info && report.info.extensionsUsed) || [];
  return {
    validatorVersion: report.validatorVersion,
    errors: issues.numErrors || 0,
    warnings: issues.numWarnings || 0,
    infos: issues.numInfos || 0,
    hints: issues.numHints || 0,
    truncated: listed > kept || !!issues.truncated,
    messages,
    byCode,
    notCovered: used.filter((e) => !supported.includes(e)),
  };
}

// Asks meshcheck for a resource; with `local`, meshcheck may answer with the
// path of a plain file instead of its bytes, which is read here (and asked
// for again as bytes if that read fails).
function resource(id, uri, local) {
  return new Promise((resolve, reject) => {
    const req = nextReq++;
    pending.set(req, { resolve, reject, uri, id });
    send({ type: 'resource', id, req, uri, local });
  });
}

// A resource meshcheck answered in the validate frame: a file to read here
// (asked for as bytes if that read fails, as a `path` reply is) or the
// reason it cannot be had.
function answered(id, uri, ahead) {
  if (typeof ahead.path === 'string') {
    const local = readLocal(ahead.path, ahead.size);
    return local ? Promise.resolve(local) : resource(id, uri, false);
  }
  return Promise.reject(ahead.reason || `Could not load '${uri}'`);
}

// The asset's bytes: read from `path`, or the frame's payload; when the file
// cannot be read as announced, meshcheck is asked for the bytes.
function bytesOf(header, payload) {
  if (typeof header.path !== 'string') return Promise.resolve(fresh(payload));
  const local = readLocal(header.path, header.size);
  if (local) return Promise.resolve(local);
  return new Promise((resolve) => {
    wanted.set(header.id, resolve);
    send({ type: 'bytes', id: header.id, reason: 'the file could not be read as announced' });
  });
}

function validate(header, payload) {
  const id = header.id;
  // Validations run one at a time in the order sent; meshcheck's timeout for
  // this one runs from here.
  send({ type: 'started', id });
  // One request, and one copy, per URI: a document whose thousand buffers
  // name one file gets that file once (it would otherwise be held a
  // thousand times over).
  const fetched = new Map();
  const known = header.resources || {};
  const options = {
    uri: header.uri,
    maxIssues: 0,
    writeTimestamp: false,
    externalResourceFunction: (uri) => {
      if (!fetched.has(uri)) {
        const ahead = Object.prototype.hasOwnProperty.call(known, uri) ? known[uri] : null;
        fetched.set(uri, ahead ? answered(id, uri, ahead) : resource(id, uri, true));
      }
      return fetched.get(uri);
    },
  };
  if (header.format === 'glb' || header.format === 'gltf') options.format = header.format;
  return bytesOf(header, payload)
    .then((bytes) => validator.validateBytes(bytes, options))
    .then((report) => send(Object.assign({ type: 'result', id }, fold(report))))
    .catch((e) => send({ type: 'error', id, message: String(e && e.message ? e.message : e) }));
}

function onFrame(header, payload) {
  if (header.type === 'validate') {
    // One validation at a time, the next already queued while this one
    // runs; resource replies are handled immediately.
    queue = queue.then(() => validate(header, payload));
  } else if (header.type === 'bytes') {
    const resolve = wanted.get(header.id);
    if (!resolve) return;
    wanted.delete(header.id);
    resolve(fresh(payload));
  } else if (header.type === 'resource') {
    const p = pending.get(header.req);
    if (!p) return;
    pending.delete(header.req);
    if (!header.found) {
      p.reject(header.reason || `Could not load '${p.uri}'`);
    } else if (typeof header.path === 'string') {
      const local = readLocal(header.path, header.size);
      if (local) p.resolve(local);
      else resource(p.id, p.uri, false).then(p.resolve, p.reject);
    } else {
      // A fresh copy with its own ArrayBuffer: the compiled validator reads the
      // whole underlying buffer, ignoring a view's offset.
      p.resolve(fresh(payload));
    }
  }
}

// Chunks are kept in a list and joined once per frame, so a large asset
// arriving in 64 KiB pieces is copied twice, not once per piece.
let chunks = [];
let have = 0;
let need = -1; // bytes of the frame being read, once its length is known
function joined() {
  const b = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, have);
  chunks = [b];
  return b;
}
process.stdin.on('data', (chunk) => {
  chunks.push(chunk);
  have += chunk.length;
  for (;;) {
    if (need < 0) {
      if (have < 4) return;
      need = 4 + joined().readUInt32LE(0);
    }
    if (have < need) return;
    const b = joined();
    const jlen = b.readUInt32LE(4);
    const header = JSON.parse(b.subarray(8, 8 + jlen).toString('utf8'));
    const payload = b.subarray(8 + jlen, need);
    const rest = b.subarray(need);
    chunks = rest.length ? [rest] : [];
    have = rest.length;
    need = -1;
    onFrame(header, payload);
  }
});
process.stdin.on('end', () => process.exit(0));

// The Node options: execArgv up to `-e`, which is followed by this script.
const dashE = process.execArgv.indexOf('-e');
const flags = dashE < 0 ? process.execArgv : process.execArgv.slice(0, dashE);
send({ type: 'ready', version: validator.version(), supported, flags, v8_flags: v8Flags });
