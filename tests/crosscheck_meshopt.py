#!/usr/bin/env python3
"""Cross-check PERF-004..007 against meshoptimizer, numpy and the glTF JSON.

For every shared asset (../shared/assets/models, relative to the repository
root) or the files named on the command line, this script

1. runs `meshcheck validate FILE --only PERF-004,PERF-005,PERF-006,PERF-007
   --format json` and reads their `measured`;
2. reads the same file itself (GLB, .gltf with external or data: buffers, or
   a zip bundle's main file), with its own accessor reader (numpy: byteStride,
   normalized integers, sparse substitution), walks the default scene from
   the JSON and counts each mesh's instances (EXT_mesh_gpu_instancing
   counts its instances);
3. for each drawn primitive with triangles (mode 4 as stored; strips and
   fans assembled as glTF 2.0 section 3.7.2.1 says; triangles naming a
   missing vertex left out) runs meshoptimizer's analyzers through
   tests/meshopt_ref.cpp, compiled here against meshoptimizer's own C++
   sources (the copy vendored in the meshopt crate, version 1.3), not
   through meshcheck's bindings: ACMR and ATVR (16-entry FIFO), overfetch
   (vertex size from the accessors, each attribute rounded up to 4 bytes,
   clamped to 12..256) and overdraw (on every k-th triangle above PERF-005's
   131,072-triangle cost cap, as meshcheck samples);
4. counts unused vertices (no triangle references them) and duplicate
   vertices (numpy: rows identical in the raw bytes of POSITION, NORMAL,
   TANGENT, TEXCOORD_n and COLOR_0) per distinct drawn primitive;
5. computes PERF-007's counts and depth from the JSON;
6. prints, per file and quantity, the reference's value and meshcheck's, and
   exits 0 only when every value agrees (integers exactly, ratios within
   1e-6, meshcheck's rounding) or the file is in ALLOW_FILE with its reason.

Usage:
    python3 tests/crosscheck_meshopt.py [--meshcheck BIN] [--cxx C++] [-v] [FILE...]

Requirements: numpy==2.4.6 (pinned in .ci/run) and a C++ compiler.
"""

from __future__ import annotations

import argparse
import base64
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
ASSETS = REPO.parent / "shared" / "assets" / "models"

# Files the reference reader cannot read as meshcheck does; every quantity of
# PERF-004..006 may differ (PERF-007 is still compared: it needs only JSON).
ALLOW_FILE: dict[str, str] = {
    "BoxMeshopt.glb": "the reference reader does not decode EXT_meshopt_compression",
    # (meshopt-fallback.zip needs no entry: its fallback buffer is a real
    # file holding the uncompressed data, which the reference reads.)
    "BoxDraco.zip": "the reference reader does not decode KHR_draco_mesh_compression",
    "SubMesh-Draco.gltf": "the reference reader does not decode KHR_draco_mesh_compression",
    "blender-default-cube-draco.glb": "the reference reader does not decode KHR_draco_mesh_compression",
}

COMPONENT = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
NCOMP = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}


def pick_main(names: list[str]) -> str | None:
    """meshcheck's rule: the shallowest .gltf, then .glb, ties by name."""
    for ext in (".gltf", ".glb"):
        c = [n for n in names if n.lower().endswith(ext) and not n.endswith("/")]
        if c:
            return min(c, key=lambda n: (n.strip("/").count("/"), n))
    return None


class Doc:
    def __init__(self, path: Path):
        data = path.read_bytes()
        self.base = path.parent
        self.glb_bin = None
        if data[:4] == b"glTF":
            jlen = struct.unpack_from("<I", data, 12)[0]
            self.json = json.loads(data[20:20 + jlen])
            off = 20 + jlen
            if off + 8 <= len(data):
                blen = struct.unpack_from("<I", data, off)[0]
                self.glb_bin = data[off + 8:off + 8 + blen]
        else:
            self.json = json.loads(data)
        self._buffers: dict[int, bytes] = {}

    def buffer(self, i: int) -> bytes:
        if i not in self._buffers:
            b = self.json["buffers"][i]
            uri = b.get("uri")
            if uri is None:
                self._buffers[i] = self.glb_bin
            elif uri.startswith("data:"):
                self._buffers[i] = base64.b64decode(uri.split(",", 1)[1])
            else:
                from urllib.parse import unquote
                self._buffers[i] = (self.base / unquote(uri)).read_bytes()
        return self._buffers[i]

    def raw(self, index: int) -> np.ndarray:
        """Accessor elements as an (count, n) array of the component type, sparse applied."""
        a = self.json["accessors"][index]
        dt = np.dtype(COMPONENT[a["componentType"]]).newbyteorder("<")
        n, count = NCOMP[a["type"]], a["count"]
        out = np.zeros((count, n), dtype=dt)
        if "bufferView" in a:
            v = self.json["bufferViews"][a["bufferView"]]
            buf = self.buffer(v["buffer"])
            start = v.get("byteOffset", 0) + a.get("byteOffset", 0)
            esize = dt.itemsize * n
            stride = v.get("byteStride") or esize
            if count:
                arr = np.lib.stride_tricks.as_strided(
                    np.frombuffer(buf, dtype=np.uint8, count=stride * (count - 1) + esize, offset=start),
                    shape=(count, esize), strides=(stride, 1))
                out = np.ascontiguousarray(arr).view(dt).reshape(count, n).copy()
        sp = a.get("sparse")
        if sp:
            iv = self.json["bufferViews"][sp["indices"]["bufferView"]]
            idt = np.dtype(COMPONENT[sp["indices"]["componentType"]]).newbyteorder("<")
            idx = np.frombuffer(self.buffer(iv["buffer"]), dtype=idt, count=sp["count"],
                                offset=iv.get("byteOffset", 0) + sp["indices"].get("byteOffset", 0))
            vv = self.json["bufferViews"][sp["values"]["bufferView"]]
            vals = np.frombuffer(self.buffer(vv["buffer"]), dtype=dt, count=sp["count"] * n,
                                 offset=vv.get("byteOffset", 0) + sp["values"].get("byteOffset", 0)).reshape(-1, n)
            out[idx.astype(np.int64)] = vals
        return out

    def floats(self, index: int) -> np.ndarray:
        """glTF 2.0 section 3.11 decoding of normalized integers; plain integers as floats."""
        a = self.json["accessors"][index]
        r = self.raw(index)
        if a["componentType"] == 5126 or not a.get("normalized"):
            return r.astype(np.float32)
        if a["componentType"] == 5121:
            return (r.astype(np.float32) / np.float32(255.0)).astype(np.float32)
        if a["componentType"] == 5123:
            return (r.astype(np.float32) / np.float32(65535.0)).astype(np.float32)
        if a["componentType"] == 5120:
            return np.maximum(r.astype(np.float32) / np.float32(127.0), np.float32(-1.0))
        return np.maximum(r.astype(np.float32) / np.float32(32767.0), np.float32(-1.0))


def triangles(mode: int, idx: np.ndarray) -> np.ndarray:
    n = len(idx)
    if mode == 4:
        return idx[: n // 3 * 3].reshape(-1, 3)
    if mode == 5:
        k = np.arange(max(n - 2, 0))
        t = np.column_stack([idx[k], idx[k + 1], idx[k + 2]])
        odd = k % 2 == 1
        t[odd] = t[odd][:, [1, 0, 2]]
        return t
    if mode == 6:
        k = np.arange(max(n - 2, 0))
        return np.column_stack([idx[k + 1], idx[k + 2], np.full(len(k), idx[0] if n else 0)])
    return np.zeros((0, 3), dtype=np.int64)


def instances(doc: Doc) -> tuple[dict[int, int], int, int]:
    """Instances per mesh in the default scene, the nodes reached and the depth."""
    j = doc.json
    nodes = j.get("nodes", [])
    scenes = j.get("scenes", [])
    si = j.get("scene", 0 if scenes else None)
    counts: dict[int, int] = {}
    if si is None or si >= len(scenes):
        return counts, 0, 0
    seen: set[int] = set()
    stack = [(r, 1) for r in reversed(scenes[si].get("nodes", []))]
    depth = 0
    while stack:
        n, d = stack.pop()
        if n in seen or n >= len(nodes):
            continue
        seen.add(n)
        depth = max(depth, d)
        node = nodes[n]
        if "mesh" in node:
            k = 1
            ext = node.get("extensions", {}).get("EXT_mesh_gpu_instancing")
            if ext and ext.get("attributes"):
                k = j["accessors"][next(iter(ext["attributes"].values()))]["count"]
            counts[node["mesh"]] = counts.get(node["mesh"], 0) + k
        stack.extend((c, d + 1) for c in reversed(node.get("children", [])))
    return counts, len(seen), depth


def vertex_size(doc: Doc, prim: dict) -> int:
    size = 0
    for acc in prim["attributes"].values():
        a = doc.json["accessors"][acc]
        if a["type"] not in ("SCALAR", "VEC2", "VEC3", "VEC4"):
            continue
        b = NCOMP[a["type"]] * np.dtype(COMPONENT[a["componentType"]]).itemsize
        size += (b + 3) // 4 * 4
    return min(max(size, 12), 256)


def reference(doc: Doc, ref_bin: str, tmp: Path) -> dict:
    j = doc.json
    counts, scene_nodes, depth = instances(doc)
    out = {
        "nodes": len(j.get("nodes", [])),
        "meshes": len(j.get("meshes", [])),
        "primitives_json": sum(len(m.get("primitives", [])) for m in j.get("meshes", [])),
        "scene_nodes": scene_nodes,
        "max_depth": depth,
    }
    tr = rf = tt = 0.0
    atvr, fetch, over = [], [], []
    unused = dups = verts = nprims = 0
    drawn = []
    for mi, n in sorted(counts.items()):
        for prim in j["meshes"][mi].get("primitives", []):
            pos = doc.floats(prim["attributes"]["POSITION"])
            nv = len(pos)
            if "indices" in prim:
                idx = doc.raw(prim["indices"]).reshape(-1).astype(np.int64)
            else:
                idx = np.arange(nv, dtype=np.int64)
            t = triangles(prim.get("mode", 4), idx)
            t = t[(t < nv).all(axis=1)]
            if len(t):
                drawn.append((prim, n, pos, nv, t))
    # PERF-005's cost cap: every k-th triangle above 131,072 (src/checks/perf.rs OVERDRAW_MAX_TRIANGLES)
    total = sum(len(t) for *_, t in drawn)
    stride = max(1, -(-total // 131072))
    out["sample_stride"] = stride if drawn else None
    for prim, n, pos, nv, t in drawn:
        nprims += 1
        f = tmp / "prim.bin"
        ind = t.astype(np.uint32).reshape(-1)
        f.write_bytes(struct.pack("<QQQ", len(ind), nv, vertex_size(doc, prim)) + ind.tobytes()
                      + np.ascontiguousarray(pos, dtype="<f4").tobytes())
        vals = subprocess.run([ref_bin, str(f), str(stride)], capture_output=True, text=True, check=True).stdout.split()
        transformed, uniq = int(vals[0]), int(vals[1])
        w = len(t) * n
        tr += transformed * n
        rf += uniq * n
        tt += w
        atvr.append((transformed / uniq, w))
        fetch.append((float(vals[5]), w))
        if int(vals[6]) > 0:
            over.append((float(vals[8]), w))
        unused += nv - uniq
        verts += nv
        # duplicate vertices: the raw bytes of the attributes meshcheck decodes
        cols = []
        for name, acc in prim["attributes"].items():
            if name in ("POSITION", "NORMAL", "TANGENT", "COLOR_0") or (name.startswith("TEXCOORD_") and int(name[9:]) < 8):
                r = doc.raw(acc)
                if len(r) == nv:
                    cols.append(np.ascontiguousarray(r).view(np.uint8).reshape(nv, -1))
        rows = np.ascontiguousarray(np.concatenate(cols, axis=1))
        dups += nv - len(np.unique(rows.view(np.dtype((np.void, rows.shape[1])))))

    def wmean(xs):
        s = sum(w for _, w in xs)
        return sum(x * w for x, w in xs) / s if s else None

    if nprims:
        out.update({
            "acmr": tr / tt, "acmr_floor": rf / tt, "atvr": wmean(atvr), "overfetch": wmean(fetch),
            "overdraw": wmean(over), "unused_vertices": unused, "duplicate_vertices": dups,
            "vertices": verts, "primitives_analyzed": nprims,
        })
    return out


def run_meshcheck(binary: str, path: Path) -> dict:
    proc = subprocess.run([binary, "validate", str(path), "--only", "PERF-004,PERF-005,PERF-006,PERF-007",
                           "--format", "json"], capture_output=True, text=True, timeout=300)
    report = json.loads(proc.stdout)
    c = {x["id"]: x for x in report["checks"]}
    m = lambda cid: c[cid].get("measured") or {}  # noqa: E731
    out = {k: m("PERF-007").get(k) for k in ("nodes", "meshes", "scene_nodes", "max_depth")}
    out["primitives_json"] = m("PERF-007").get("primitives")
    if c["PERF-004"]["status"] != "skipped":
        out.update({
            "acmr": m("PERF-004")["acmr"], "acmr_floor": m("PERF-004")["acmr_floor"], "atvr": m("PERF-004")["atvr"],
            "primitives_analyzed": m("PERF-004")["primitives"], "overfetch": m("PERF-006")["overfetch"],
            "unused_vertices": m("PERF-006")["unused_vertices"], "duplicate_vertices": m("PERF-006")["duplicate_vertices"],
            "vertices": m("PERF-006")["vertices"],
            "overdraw": m("PERF-005").get("overdraw") if c["PERF-005"]["status"] != "skipped" else None,
            "sample_stride": m("PERF-005").get("sample_stride"),
        })
    return out


def build_ref(cxx: str, tmp: Path) -> str:
    home = os.environ.get("CARGO_HOME", str(Path.home() / ".cargo"))
    src = sorted(glob.glob(f"{home}/registry/src/*/meshopt-0.7.0/vendor/src"))
    if not src:
        sys.exit("crosscheck_meshopt: meshoptimizer's sources (the meshopt 0.7.0 crate) are not in the cargo registry; run `cargo fetch`")
    s = Path(src[0])
    out = tmp / "meshopt_ref"
    files = [str(REPO / "tests" / "meshopt_ref.cpp")] + [str(s / f) for f in ("indexanalyzer.cpp", "rasterizer.cpp", "allocator.cpp")]
    subprocess.run([cxx, "-O2", "-std=c++11", "-I", str(s), *files, "-o", str(out)], check=True)
    return str(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--meshcheck", default=str(REPO / "target" / "release" / "meshcheck"))
    ap.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("files", nargs="*", type=Path)
    args = ap.parse_args()
    files = args.files or sorted(p for p in ASSETS.rglob("*") if p.suffix.lower() in (".glb", ".gltf", ".zip"))
    tmpdir = tempfile.TemporaryDirectory(prefix="crosscheck-meshopt-")
    tmp = Path(tmpdir.name)
    ref_bin = build_ref(args.cxx, tmp)
    start = time.monotonic()
    failures, rows = [], 0
    print(f"meshoptimizer 1.3 (meshopt 0.7.0's vendored sources), numpy {np.__version__}; meshcheck {args.meshcheck}\n")
    print("| file | quantity | reference | meshcheck | equal | status |")
    print("|---|---|--:|--:|---|---|")
    for path in files:
        rel = path.relative_to(ASSETS) if path.is_relative_to(ASSETS) else path.name
        allowed = ALLOW_FILE.get(path.name)
        mc = run_meshcheck(args.meshcheck, path)
        with tempfile.TemporaryDirectory(prefix="crosscheck-meshopt-") as t2:
            p = path
            if path.suffix.lower() == ".zip":
                with zipfile.ZipFile(path) as z:
                    p = Path(t2) / pick_main(z.namelist())
                    z.extractall(t2)
            try:
                ref = reference(Doc(p), ref_bin, tmp)
                err = None
            except Exception as e:  # noqa: BLE001
                ref, err = {}, f"{type(e).__name__}: {e}"
        if err:
            status = f"allowed: {allowed}" if allowed else "FAIL"
            print(f"| {rel} | (reference) | error | | no | {status}: {err} |")
            if not allowed:
                failures.append(f"{rel}: reference: {err}")
            continue
        diffs = 0
        for q in sorted(set(ref) | set(mc)):
            rv, mv = ref.get(q), mc.get(q)
            rows += 1
            if isinstance(rv, float) or isinstance(mv, float):
                equal = rv is not None and mv is not None and abs(rv - mv) <= 1e-6 * max(1.0, abs(rv))
            else:
                equal = rv == mv
            if equal:
                if args.verbose:
                    print(f"| {rel} | {q} | {rv} | {mv} | yes | ok |")
                continue
            diffs += 1
            ok = allowed and q not in ("nodes", "meshes", "primitives_json", "scene_nodes", "max_depth")
            status = f"allowed (file): {allowed}" if ok else "FAIL"
            if not ok:
                failures.append(f"{rel}: {q}: reference {rv} != meshcheck {mv}")
            print(f"| {rel} | {q} | {rv} | {mv} | no | {status} |")
        if not diffs and not args.verbose:
            print(f"| {rel} | all {len(set(ref) | set(mc))} quantities | = | = | yes | ok |")
    print(f"\n{len(files)} files, {rows} comparisons, {time.monotonic() - start:.1f} s")
    if failures:
        print(f"\n{len(failures)} unexplained differences:")
        for f in failures:
            print(f"  {f}")
        return 1
    print("every quantity agrees (or the file is allow-listed with its reason)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
