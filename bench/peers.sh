#!/usr/bin/env bash
# Times meshcheck's peers on the same files, one process per file, so the
# numbers compare with `meshcheck validate FILE` run as a process:
#
#   gltf-validator    Khronos glTF-Validator (npm `gltf-validator`):
#                     validateBytes with maxIssues 0 and an external
#                     resource callback that reads from disk.
#   gltf-transform    glTF-Transform (npm `@gltf-transform/core` +
#                     `extensions` + `functions`): NodeIO.read + inspect(),
#                     the work behind `gltf-transform inspect FILE`.
#   meshcheck-cli     `$MESHCHECK_BIN validate FILE --format json`, only when
#                     MESHCHECK_BIN is set; it gets exactly the peers' input.
#                     By default meshcheck runs SPEC-001, which starts the
#                     same Khronos validator in a Node child process.
#   meshcheck-own     The same with `--skip SPEC-001,GEO,TOP,UV-002,UV-004,UV-005`: meshcheck's own loader
#                     and checks only, no Node.
#
# Usage: bench/peers.sh FILE...   (.glb, .gltf, or .zip bundles; neither peer
# reads zip, so a bundle is extracted first and every tool, meshcheck included,
# gets the extracted main .gltf/.glb).
#
# The peers are installed with npm into a scratch folder outside the
# repository ($MESHCHECK_PEERS_DIR, default /tmp/meshcheck-peers) if missing.
#
# Each tool runs once to warm the page cache, then MESHCHECK_BENCH_RUNS times
# (default 5); wall time is the whole process, startup included. Peak memory
# is one more run under /usr/bin/time (GNU time's %M: the largest max RSS of
# the process and its children, not their sum) when that exists, otherwise "-".
#
# Output on stdout, one tab-separated line per tool and file:
#   tool  file  median_ms  min_ms  peak_kb  triangles  input_used
# A tool that fails on a file (e.g. glTF-Transform on a missing texture)
# gets "error" in place of the timings.
# Progress and errors go to stderr.

set -euo pipefail
export LC_ALL=C

RUNS=${MESHCHECK_BENCH_RUNS:-5}
SCRATCH=${MESHCHECK_PEERS_DIR:-/tmp/meshcheck-peers}
VALIDATOR_VERSION=2.0.0-dev.3.10
TRANSFORM_VERSION=4.5.1

if [ "$#" -eq 0 ]; then
    echo "usage: $0 FILE..." >&2
    exit 2
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "peers.sh: node and npm are needed for the peer comparison" >&2
    exit 3
fi

mkdir -p "$SCRATCH"
if [ ! -f "$SCRATCH/node_modules/gltf-validator/package.json" ] ||
    [ ! -f "$SCRATCH/node_modules/@gltf-transform/functions/package.json" ]; then
    echo "peers.sh: installing gltf-validator@$VALIDATOR_VERSION and @gltf-transform@$TRANSFORM_VERSION into $SCRATCH" >&2
    (
        cd "$SCRATCH"
        [ -f package.json ] || echo '{"name":"meshcheck-peers","private":true}' >package.json
        npm install --no-audit --no-fund --loglevel=error \
            "gltf-validator@$VALIDATOR_VERSION" \
            "@gltf-transform/core@$TRANSFORM_VERSION" \
            "@gltf-transform/extensions@$TRANSFORM_VERSION" \
            "@gltf-transform/functions@$TRANSFORM_VERSION"
    ) >&2
fi

cat >"$SCRATCH/validate.cjs" <<'EOF'
// node validate.cjs FILE: Khronos glTF-Validator on one file; prints {"triangles","errors"}.
const fs = require('fs');
const path = require('path');
const validator = require('gltf-validator');
const file = process.argv[2];
const data = fs.readFileSync(file);
validator
  .validateBytes(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), {
    uri: path.basename(file),
    maxIssues: 0,
    writeTimestamp: false,
    externalResourceFunction: (uri) =>
      new Promise((resolve, reject) => {
        fs.readFile(path.resolve(path.dirname(file), decodeURIComponent(uri)), (err, b) =>
          err ? reject(err.toString()) : resolve(new Uint8Array(b.buffer, b.byteOffset, b.byteLength)));
      }),
  })
  .then((r) => console.log(JSON.stringify({ triangles: r.info.totalTriangleCount, errors: r.issues.numErrors })))
  .catch((e) => { console.error(String(e)); process.exit(2); });
EOF

cat >"$SCRATCH/inspect.mjs" <<'EOF'
// node inspect.mjs FILE: glTF-Transform NodeIO.read + inspect(); prints {"triangles"} (per node instance).
import { NodeIO } from '@gltf-transform/core';
import { ALL_EXTENSIONS } from '@gltf-transform/extensions';
import { inspect } from '@gltf-transform/functions';
const io = new NodeIO().registerExtensions(ALL_EXTENSIONS);
const doc = await io.read(process.argv[2]);
const report = inspect(doc);
let triangles = 0;
for (const node of doc.getRoot().listNodes()) {
  const mesh = node.getMesh();
  if (!mesh) continue;
  for (const prim of mesh.listPrimitives()) {
    if (prim.getMode() !== 4) continue;
    const idx = prim.getIndices();
    const pos = prim.getAttribute('POSITION');
    triangles += Math.floor((idx ? idx.getCount() : pos ? pos.getCount() : 0) / 3);
  }
}
console.log(JSON.stringify({ triangles, meshes: report.meshes.properties.length }));
EOF

# Wall time of one run of "$@" in microseconds (stdout kept in $LAST_OUT).
LAST_OUT=""
time_once() {
    local t0 t1
    t0=${EPOCHREALTIME/./}
    if ! LAST_OUT=$("$@" 2>/dev/null); then
        # meshcheck exits 1 on a failing verdict; that is a result, not an error.
        [ "$1" = "${MESHCHECK_BIN:-}" ] || { echo "peers.sh: failed: $*" >&2; return 1; }
    fi
    t1=${EPOCHREALTIME/./}
    echo $((t1 - t0)) >>"$TIMES"
}

# Times "$@" RUNS times after a warm-up; prints median_ms, min_ms, peak_kb, triangles (tab-separated).
measure() {
    TIMES=$(mktemp)
    time_once "$@" || { rm -f "$TIMES"; return 1; }
    : >"$TIMES"
    local i
    for ((i = 0; i < RUNS; i++)); do
        time_once "$@" || { rm -f "$TIMES"; return 1; }
    done
    local med min peak="-"
    med=$(sort -n "$TIMES" | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.1f", m/1000}')
    min=$(sort -n "$TIMES" | awk 'NR==1 {printf "%.1f", $1/1000}')
    rm -f "$TIMES"
    if [ -x /usr/bin/time ]; then
        local memf
        memf=$(mktemp)
        /usr/bin/time -f %M -o "$memf" "$@" >/dev/null 2>&1 || true
        peak=$(tail -n 1 "$memf")
        rm -f "$memf"
    fi
    printf '%s\t%s\t%s\t%s' "$med" "$min" "$peak" "$(triangles_of)"
}

triangles_of() {
    # meshcheck prints the report (or a list of them); the peers print {"triangles":N,...}.
    printf '%s' "$LAST_OUT" | node -e '
        let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
          try { let v = JSON.parse(s); if (Array.isArray(v)) v = v[0];
                console.log(v.stats ? v.stats.triangles : v.triangles); } catch { console.log("-"); } });'
}

for file in "$@"; do
    input="$file"
    case "$file" in
    *.zip)
        dest="$SCRATCH/extracted/$(basename "$file" .zip)"
        rm -rf "$dest" && mkdir -p "$dest"
        if command -v unzip >/dev/null; then
            unzip -q -o "$file" -d "$dest"
        else
            python3 -m zipfile -e "$file" "$dest"
        fi
        input=$(find "$dest" \( -name '*.gltf' -o -name '*.glb' \) -printf '%d %p\n' | sort -n | head -n 1 | cut -d' ' -f2-)
        if [ -z "$input" ]; then
            echo "peers.sh: no .gltf or .glb inside $file" >&2
            continue
        fi
        ;;
    esac
    echo "peers.sh: $(basename "$input")" >&2
    tools=(gltf-validator gltf-transform)
    [ -n "${MESHCHECK_BIN:-}" ] && tools+=(meshcheck-cli meshcheck-own)
    for tool in "${tools[@]}"; do
        case "$tool" in
        gltf-validator) cmd=(node "$SCRATCH/validate.cjs" "$input") ;;
        gltf-transform) cmd=(node "$SCRATCH/inspect.mjs" "$input") ;;
        meshcheck-cli) cmd=("$MESHCHECK_BIN" validate "$input" --format json) ;;
        meshcheck-own) cmd=("$MESHCHECK_BIN" validate "$input" --format json --skip SPEC-001,GEO,TOP,UV-002,UV-004,UV-005) ;;
        esac
        if stats=$(measure "${cmd[@]}"); then
            printf '%s\t%s\t%s\t%s\n' "$tool" "$file" "$stats" "$input"
        else
            printf '%s\t%s\terror\t-\t-\t-\t%s\n' "$tool" "$file" "$input"
        fi
    done
done
