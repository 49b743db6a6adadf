#!/usr/bin/env python3
"""Cross-check the ANM checks (skins, animations, morph targets) against the
accessors, read independently of meshcheck with numpy.

For every shared asset (../shared/assets/models, relative to the repository
root) or the files named on the command line, this script

1. runs `meshcheck validate FILE --only ANM --format json` and reads ANM-001,
   ANM-002 and ANM-003's `measured`;
2. opens the same file itself (GLB, .gltf with its files beside it, or a zip
   bundle: the shallowest .gltf, then .glb, ties by name, as meshcheck picks
   it), and reads the accessors with its own reader (bufferView strides,
   normalised integers, sparse substitution); no meshopt or Draco decoding:
   a file that needs it is reported and skipped;
3. computes, from the glTF JSON and those accessors:
   - ANM-001: max_influences (the most non-zero weights of any vertex over
     all WEIGHTS_n sets of a primitive, over every mesh primitive),
     max_joints_per_skin, skins, skinned_primitives, skinned_vertices;
   - ANM-002: animations, channels, samplers, keyframes (sum of sampler input
     counts, glTF-Transform inspect's definition), duration_s (per animation
     max input time minus min, the longest), static_channels (every keyframe
     within 1e-4 of the first; CUBICSPLINE: the values, and tangents within
     1e-4 of zero);
   - ANM-003: max_targets, morph_bytes (count x components x component size
     of every distinct POSITION/NORMAL/TANGENT target accessor),
     meshes_with_targets;
4. prints per file and key both values and exits 0 only when every one
   agrees (durations within 1e-6 s), and every check that is skipped is
   skipped on both sides (nothing to measure).

Usage:
    python3 tests/crosscheck_anm.py [--meshcheck BIN] [-v] [FILE...]

Requirements (pinned; see the pip line in .ci/run): numpy==2.4.6
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import subprocess
import sys
import urllib.parse
import zipfile
from pathlib import Path

try:
    import numpy as np
except ImportError as e:  # pragma: no cover - environment error, not a test failure
    sys.exit(f"crosscheck_anm: missing Python package ({e}); install numpy==2.4.6")

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT.parent / "shared" / "assets" / "models"
TOL = 1e-4  # glTF-Transform resample's default tolerance
COMPONENTS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
DTYPES = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
SIZES = {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}
NORM = {5120: 127.0, 5121: 255.0, 5122: 32767.0, 5123: 65535.0, 5125: 4294967295.0}


class Unsupported(Exception):
    """A file this reader does not decode (meshopt, Draco)."""


def open_asset(path: Path):
    """The glTF JSON and a function from buffer index to bytes."""
    if zipfile.is_zipfile(path):
        z = zipfile.ZipFile(path)
        names = [n for n in z.namelist() if not n.endswith("/") and not n.startswith("__MACOSX")]
        cands = [n for n in names if n.lower().endswith(".gltf")] or [n for n in names if n.lower().endswith(".glb")]
        main = sorted(cands, key=lambda n: (n.count("/"), n))[0]
        base = main.rsplit("/", 1)[0] + "/" if "/" in main else ""
        data = z.read(main)

        def fetch(uri):
            return z.read(base + urllib.parse.unquote(uri))
    else:
        data = path.read_bytes()

        def fetch(uri):
            return (path.parent / urllib.parse.unquote(uri)).read_bytes()
    bin_chunk = None
    if data[:4] == b"glTF":
        off = 12
        doc = None
        while off + 8 <= len(data):
            length, kind = struct.unpack_from("<II", data, off)
            chunk = data[off + 8 : off + 8 + length]
            if kind == 0x4E4F534A:
                doc = json.loads(chunk.decode("utf-8"))
            elif kind == 0x004E4942 and bin_chunk is None:
                bin_chunk = chunk
            off += 8 + length
    else:
        doc = json.loads(data.decode("utf-8-sig"))
    cache = {}

    def buffer(i):
        if i not in cache:
            b = doc["buffers"][i]
            uri = b.get("uri")
            if uri is None:
                cache[i] = bin_chunk
            elif uri.startswith("data:"):
                cache[i] = base64.b64decode(uri.split(",", 1)[1])
            else:
                cache[i] = fetch(uri)
        return cache[i]

    return doc, buffer


def view_bytes(doc, buffer, v):
    view = doc["bufferViews"][v]
    if "extensions" in view and "EXT_meshopt_compression" in view["extensions"]:
        raise Unsupported("meshopt-compressed bufferView")
    off = view.get("byteOffset", 0)
    return buffer(view["buffer"])[off : off + view["byteLength"]], view.get("byteStride")


def read_accessor(doc, buffer, i):
    """The accessor as a float64 array of shape (count, components)."""
    a = doc["accessors"][i]
    n = COMPONENTS[a["type"]]
    ct = a["componentType"]
    count = a["count"]

    def elements(view, offset, cnt, comps, ctype):
        raw, stride = view_bytes(doc, buffer, view)
        size = SIZES[ctype] * comps
        stride = stride or size
        out = np.empty((cnt, comps), dtype=np.float64)
        for e in range(cnt):
            start = offset + e * stride
            out[e] = np.frombuffer(raw[start : start + size], dtype=DTYPES[ctype])
        return out

    if "bufferView" in a:
        out = elements(a["bufferView"], a.get("byteOffset", 0), count, n, ct)
    else:
        out = np.zeros((count, n))
    sparse = a.get("sparse")
    if sparse:
        k = sparse["count"]
        idx = elements(sparse["indices"]["bufferView"], sparse["indices"].get("byteOffset", 0), k, 1,
                       sparse["indices"]["componentType"])[:, 0].astype(np.int64)
        vals = elements(sparse["values"]["bufferView"], sparse["values"].get("byteOffset", 0), k, n, ct)
        out[idx] = vals
    if a.get("normalized") and ct != 5126:
        out = np.maximum(out / NORM[ct], -1.0)
    return out.astype(np.float32).astype(np.float64)


def reference(path: Path):
    doc, buffer = open_asset(path)
    res = {}
    # ANM-001
    skins = doc.get("skins", [])
    prims = 0
    verts = 0
    max_inf = 0
    for mesh in doc.get("meshes", []):
        for p in mesh.get("primitives", []):
            attrs = p.get("attributes", {})
            if "WEIGHTS_0" not in attrs:
                continue
            draco = p.get("extensions", {}).get("KHR_draco_mesh_compression", {}).get("attributes", {})
            if any(k.startswith("WEIGHTS_") for k in draco):
                raise Unsupported("Draco-compressed weights")
            counts = None
            s = 0
            while f"WEIGHTS_{s}" in attrs and s < 8:
                w = read_accessor(doc, buffer, attrs[f"WEIGHTS_{s}"])
                c = (w != 0).sum(axis=1)
                counts = c if counts is None else counts + c
                s += 1
            prims += 1
            verts += len(counts)
            if len(counts):
                max_inf = max(max_inf, int(counts.max()))
    if skins or prims:
        res["ANM-001"] = {
            "max_influences": max_inf,
            "max_joints_per_skin": max((len(s.get("joints", [])) for s in skins), default=0),
            "skins": len(skins),
            "skinned_primitives": prims,
            "skinned_vertices": verts,
        }
    # ANM-002
    anims = doc.get("animations", [])
    if anims:
        channels = samplers = keyframes = static = 0
        duration = 0.0
        for a in anims:
            channels += len(a.get("channels", []))
            samplers += len(a.get("samplers", []))
            times = [read_accessor(doc, buffer, s["input"])[:, 0] for s in a.get("samplers", [])]
            keyframes += sum(len(t) for t in times)
            finite = [t[np.isfinite(t)] for t in times if np.isfinite(t).any()]
            if finite:
                duration = max(duration, max(t.max() for t in finite) - min(t.min() for t in finite))
            for ch in a.get("channels", []):
                s = a["samplers"][ch["sampler"]]
                t = times[ch["sampler"]]
                out = read_accessor(doc, buffer, s["output"]).reshape(-1)
                cubic = s.get("interpolation") == "CUBICSPLINE"
                per = 3 if cubic else 1
                k = len(t)
                frames = out.reshape(k * per, -1)
                if cubic:
                    vals = frames[1::3]
                    tang = np.concatenate([frames[0::3], frames[2::3]])
                    st = np.all(np.abs(vals - vals[0]) <= TOL) and np.all(np.abs(tang) <= TOL)
                else:
                    st = np.all(np.abs(frames - frames[0]) <= TOL)
                static += int(bool(st))
        res["ANM-002"] = {
            "animations": len(anims),
            "channels": channels,
            "samplers": samplers,
            "keyframes": keyframes,
            "duration_s": float(duration),
            "static_channels": static,
        }
    # ANM-003
    accs = set()
    with_targets = 0
    max_targets = 0
    for mesh in doc.get("meshes", []):
        t = max((len(p.get("targets", [])) for p in mesh.get("primitives", [])), default=0)
        for p in mesh.get("primitives", []):
            for target in p.get("targets", []):
                for key in ("POSITION", "NORMAL", "TANGENT"):
                    if key in target:
                        accs.add(target[key])
        if t:
            with_targets += 1
        max_targets = max(max_targets, t)
    if with_targets:
        nbytes = 0
        for i in accs:
            a = doc["accessors"][i]
            nbytes += a["count"] * COMPONENTS[a["type"]] * SIZES[a["componentType"]]
        res["ANM-003"] = {"max_targets": max_targets, "morph_bytes": nbytes, "meshes_with_targets": with_targets}
    return res


def meshcheck(binary, path):
    run = subprocess.run([binary, "validate", str(path), "--only", "ANM", "--format", "json"],
                         capture_output=True, text=True)
    report = json.loads(run.stdout)
    if isinstance(report, list):
        report = report[0]
    return {c["id"]: c for c in report["checks"] if c["id"].startswith("ANM-")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--meshcheck", default=str(ROOT / "target" / "debug" / "meshcheck"))
    ap.add_argument("-v", action="store_true")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    files = [Path(f) for f in args.files] or sorted(
        p for p in ASSETS.rglob("*") if p.suffix.lower() in (".glb", ".gltf", ".zip") and "unpacked" not in p.parts)
    failures = 0
    compared = 0
    for f in files:
        try:
            ref = reference(f)
        except Unsupported as e:
            print(f"skip {f.name}: {e}")
            continue
        got = meshcheck(args.meshcheck, f)
        for cid in ("ANM-001", "ANM-002", "ANM-003"):
            c = got.get(cid)
            if cid not in ref:
                if c is None or c["status"] != "skipped":
                    print(f"FAIL {f.name} {cid}: the reference has nothing to measure, meshcheck says {c and c['status']}")
                    failures += 1
                continue
            if c is None or c["status"] == "skipped":
                print(f"FAIL {f.name} {cid}: meshcheck skipped it ({c and c['message']})")
                failures += 1
                continue
            for key, want in ref[cid].items():
                have = c["measured"].get(key)
                ok = have is not None and (abs(have - want) <= 1e-6 if isinstance(want, float) else have == want)
                compared += 1
                if not ok:
                    failures += 1
                if not ok or args.v:
                    print(f"{'ok  ' if ok else 'FAIL'} {f.name} {cid} {key}: reference {want}, meshcheck {have}")
    print(f"crosscheck_anm: {compared} values compared over {len(files)} files, {failures} differences")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
