#!/usr/bin/env bash
# Cost of issue 20's UV and MAT checks (BENCHMARKS.md, "Issue 20: cost of the
# new checks"): writes two 1,000,000-triangle UV spheres (one untextured, one
# with a 2048x2048 base-colour PNG) into $OUT (default $TMPDIR/meshcheck-uvmat)
# and prints, per option set, the minimum wall time of N interleaved runs.
#
#   bench/uvmat_cost.sh [MESHCHECK_BIN] [N]
#
# Needs python3 with numpy and Pillow (the pins of .ci/run: target/pyenv).
set -euo pipefail
BIN=${1:-target/debug/meshcheck}
N=${2:-7}
PY=${PYTHON:-target/pyenv/bin/python}
OUT=${OUT:-${TMPDIR:-/tmp}/meshcheck-uvmat}
mkdir -p "$OUT"
"$PY" - "$OUT" <<'PYEOF'
import io, json, struct, sys
import numpy as np
from PIL import Image
out = sys.argv[1]
S, R = 1000, 500
th, ph = np.linspace(0, np.pi, R + 1), np.linspace(0, 2 * np.pi, S + 1)
T, P = np.meshgrid(th, ph, indexing="ij")
pos = np.stack([np.sin(T) * np.cos(P), np.cos(T), np.sin(T) * np.sin(P)], -1).reshape(-1, 3).astype(np.float32)
uv = np.stack([P / (2 * np.pi), T / np.pi], -1).reshape(-1, 2).astype(np.float32)
i = np.arange(R)[:, None] * (S + 1) + np.arange(S)[None, :]
a, b, c, d = i, i + 1, i + S + 1, i + S + 2
idx = np.concatenate([np.stack([a, c, b], -1).reshape(-1, 3), np.stack([b, c, d], -1).reshape(-1, 3)]).astype(np.uint32)

def build(textured):
    bin_, views, accs = bytearray(), [], []
    def add(arr, typ, ct, target, minmax=False):
        while len(bin_) % 4: bin_.append(0)
        views.append({"buffer": 0, "byteOffset": len(bin_), "byteLength": arr.nbytes, "target": target})
        bin_.extend(arr.tobytes())
        acc = {"bufferView": len(views) - 1, "componentType": ct, "count": len(arr), "type": typ}
        if minmax: acc["min"], acc["max"] = arr.min(0).tolist(), arr.max(0).tolist()
        accs.append(acc)
        return len(accs) - 1
    prim = {"attributes": {"POSITION": add(pos, "VEC3", 5126, 34962, True), "NORMAL": add(pos, "VEC3", 5126, 34962),
                           "TEXCOORD_0": add(uv, "VEC2", 5126, 34962)}, "indices": add(idx.ravel(), "SCALAR", 5125, 34963)}
    j = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
         "meshes": [{"primitives": [prim]}], "accessors": accs, "bufferViews": views}
    if textured:
        img = Image.fromarray(np.random.default_rng(1).integers(30, 240, (2048, 2048, 3), dtype=np.uint8))
        buf = io.BytesIO(); img.save(buf, "PNG"); png = buf.getvalue()
        while len(bin_) % 4: bin_.append(0)
        views.append({"buffer": 0, "byteOffset": len(bin_), "byteLength": len(png)}); bin_.extend(png)
        j["images"] = [{"bufferView": len(views) - 1, "mimeType": "image/png"}]
        j["textures"] = [{"source": 0}]
        j["materials"] = [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
        prim["material"] = 0
    while len(bin_) % 4: bin_.append(0)
    j["buffers"] = [{"byteLength": len(bin_)}]
    js = json.dumps(j).encode()
    while len(js) % 4: js += b" "
    return (b"glTF" + struct.pack("<II", 2, 28 + len(js) + len(bin_)) + struct.pack("<I", len(js)) + b"JSON" + js
            + struct.pack("<I", len(bin_)) + b"BIN\x00" + bytes(bin_))

open(f"{out}/sphere_1m_uv.glb", "wb").write(build(False))
open(f"{out}/sphere_1m_textured.glb", "wb").write(build(True))
PYEOF
NEW=UV-006,UV-007,UV-008,MAT-005,MAT-006,MAT-007
cfgs=("--only PERF-001" "--only UV-006" "--only UV-007" "--only UV-008" "--only MAT-005" "--only MAT-006" "--only MAT-007" "--skip SPEC-001" "--skip SPEC-001,$NEW")
for f in "$OUT/sphere_1m_uv.glb" "$OUT/sphere_1m_textured.glb"; do
  declare -A best=()
  for _ in $(seq "$N"); do
    for c in "${cfgs[@]}"; do
      s=$EPOCHREALTIME; "$BIN" validate "$f" --format json $c > /dev/null || true; e=$EPOCHREALTIME
      t=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%d", (e - s) * 1000 }')
      if [ -z "${best[$c]:-}" ] || [ "$t" -lt "${best[$c]}" ]; then best[$c]=$t; fi
    done
  done
  echo "== $(basename "$f")"
  for c in "${cfgs[@]}"; do echo "$c: ${best[$c]} ms"; done
  unset best
done
