#!/usr/bin/env python3
"""Cross-check meshcheck's UV-006/007/008 and MAT-005/006/007 against numpy
(and Pillow for texels) reading the glTF accessors, images and KTX2 headers
itself, with no glTF library.

For every shared asset (../shared/assets/models, relative to the repository
root) and the auditor's PBR cubes (tests/fixtures/asset-auditor), or the
files named on the command line, this script

1. runs `meshcheck validate FILE --only UV-006,UV-007,UV-008,MAT-005,MAT-006,MAT-007
   --format json` and reads their `measured`;
2. opens the GLB, .gltf (data URIs or files beside it) or zip bundle itself,
   flattens the default scene (node TRS or matrix, parents first) and takes
   each drawn primitive once, with the world matrix of its first instance and
   the mesh's default morph weights applied to POSITION;
   files with Draco, meshopt or sparse accessors are left out (their decoding
   is cross-checked elsewhere), as are GPU-instanced nodes;
3. measures, per texture space (material, TEXCOORD_n):
   - UV-006: accessor elements outside [0,1]^2 (NaN included), and those in
     lightmap sets (n >= 1 and read by no texture slot but occlusionTexture);
   - UV-007: triangles whose signed UV area (b-a)x(c-a) is positive;
   - UV-008: per triangle sqrt(UV area * W * H / 3D area), W x H the largest
     image the material samples through the set, and the area-weighted p5,
     median and p95 (the smallest value whose cumulative weight reaches q);
   and over the images used by drawn materials (KHR_texture_basisu, then
   EXT_texture_webp, EXT_texture_avif, then source):
   - MAT-005: sides that are not a power of two (PNG/JPEG/WebP via Pillow,
     KTX2 from its header);
   - MAT-006: the HSV value max(R,G,B) of base-colour texels with alpha > 0
     (Pillow decode), times baseColorFactor in linear space, or the factor
     alone for an untextured material;
   - MAT-007: KTX2 images that are GPU-compressed (BasisLZ, a UASTC/ETC1S
     DFD colour model or a block-compressed vkFormat) and those whose
     levelCount is short of a full chain while some texture samples them with
     mipmaps;
4. prints each figure on both sides and exits 0 only when all agree (counts
   exactly, densities to 1e-6 relative).

Usage:
    python3 tests/crosscheck_uv.py [--meshcheck BIN] [-v] [FILE...]

Requirements (pinned; see the pip line in .ci/run): numpy==2.4.6 pillow==12.0.0
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import urllib.parse
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT.parent / "shared" / "assets" / "models"
CHECKS = ["UV-006", "UV-007", "UV-008", "MAT-005", "MAT-006", "MAT-007"]


class Unsupported(Exception):
    pass


# ------------------------------------------------------------------ reading


def open_asset(path: Path):
    """(gltf json, list of buffer bytes, resolver for image/buffer URIs)."""
    data = path.read_bytes()
    tmp = None
    if data[:4] == b"PK\x03\x04":
        tmp = tempfile.TemporaryDirectory()
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            z.extractall(tmp.name)
        names = [Path(r) / f for r, _, fs in os.walk(tmp.name) for f in fs]
        mains = sorted(
            (p for p in names if p.suffix.lower() in (".gltf", ".glb")),
            key=lambda p: (len(p.relative_to(tmp.name).parts), p.suffix.lower() != ".gltf", str(p)),
        )
        if not mains:
            raise Unsupported("no .gltf or .glb in the zip")
        path = mains[0]
        data = path.read_bytes()
    bin_chunk = None
    if data[:4] == b"glTF":
        length = struct.unpack_from("<I", data, 12)[0]
        doc = json.loads(data[20 : 20 + length])
        off = 20 + length
        if off + 8 <= len(data):
            blen = struct.unpack_from("<I", data, off)[0]
            bin_chunk = data[off + 8 : off + 8 + blen]
    else:
        doc = json.loads(data.decode("utf-8-sig"))
    base = path.parent

    def uri_bytes(uri: str) -> bytes:
        if uri.startswith("data:"):
            return base64.b64decode(uri.split(",", 1)[1])
        return (base / urllib.parse.unquote(uri)).read_bytes()

    buffers = []
    for i, b in enumerate(doc.get("buffers", [])):
        buffers.append(uri_bytes(b["uri"]) if "uri" in b else bin_chunk)
    return doc, buffers, uri_bytes, tmp


COMPONENTS = {5120: ("i1", 127.0), 5121: ("u1", 255.0), 5122: ("<i2", 32767.0), 5123: ("<u2", 65535.0),
              5125: ("<u4", None), 5126: ("<f4", None)}
SIZES = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}


def view_bytes(doc, buffers, v):
    bv = doc["bufferViews"][v]
    buf = buffers[bv["buffer"]]
    if buf is None:
        raise Unsupported("a buffer without data")
    off = bv.get("byteOffset", 0)
    return buf[off : off + bv["byteLength"]], bv.get("byteStride")


def accessor(doc, buffers, i) -> np.ndarray:
    a = doc["accessors"][i]
    if "sparse" in a:
        raise Unsupported("sparse accessor")
    dt, norm = COMPONENTS[a["componentType"]]
    n, k = a["count"], SIZES[a["type"]]
    if "bufferView" not in a:
        return np.zeros((n, k))
    raw, stride = view_bytes(doc, buffers, a["bufferView"])
    item = np.dtype(dt).itemsize * k
    stride = stride or item
    off = a.get("byteOffset", 0)
    rows = np.frombuffer(raw, dtype=np.uint8, count=stride * (n - 1) + item if n else 0, offset=off)
    out = np.lib.stride_tricks.as_strided(rows, shape=(n, item), strides=(stride, 1)).copy()
    vals = out.view(dt).reshape(n, k).astype(np.float64)
    if a.get("normalized") and norm:
        vals = np.maximum(vals / norm, -1.0)
    return vals


def node_local(n) -> np.ndarray:
    if "matrix" in n:
        return np.array(n["matrix"], dtype=np.float64).reshape(4, 4).T
    t = np.array(n.get("translation", [0, 0, 0]), dtype=np.float64)
    x, y, z, w = n.get("rotation", [0, 0, 0, 1])
    s = np.array(n.get("scale", [1, 1, 1]), dtype=np.float64)
    r = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])
    m = np.eye(4)
    m[:3, :3] = r * s
    m[:3, 3] = t
    return m


def drawn_primitives(doc):
    """[(mesh, prim index, world matrix)] each primitive once, first instance."""
    scenes = doc.get("scenes", [])
    if not scenes:
        return []
    roots = scenes[doc.get("scene", 0)].get("nodes", [])
    nodes = doc.get("nodes", [])
    out, seen = [], set()
    stack = [(r, np.eye(4)) for r in reversed(roots)]
    visited = set()
    while stack:
        ni, parent = stack.pop()
        if ni in visited:
            continue
        visited.add(ni)
        n = nodes[ni]
        if "EXT_mesh_gpu_instancing" in n.get("extensions", {}):
            raise Unsupported("EXT_mesh_gpu_instancing")
        world = parent @ node_local(n)
        if "mesh" in n:
            for pi, _ in enumerate(doc["meshes"][n["mesh"]]["primitives"]):
                if (n["mesh"], pi) not in seen:
                    seen.add((n["mesh"], pi))
                    out.append((n["mesh"], pi, world))
        for c in reversed(n.get("children", [])):
            stack.append((c, world))
    return out


def triangles(doc, buffers, prim, nverts) -> np.ndarray:
    mode = prim.get("mode", 4)
    if "indices" in prim:
        idx = accessor(doc, buffers, prim["indices"]).astype(np.int64).ravel()
    else:
        idx = np.arange(nverts)
    if mode == 4:
        t = idx[: len(idx) // 3 * 3].reshape(-1, 3)
    elif mode == 5:
        t = np.array([(idx[i], idx[i + 1], idx[i + 2]) if i % 2 == 0 else (idx[i + 1], idx[i], idx[i + 2])
                      for i in range(len(idx) - 2)], dtype=np.int64).reshape(-1, 3)
    elif mode == 6:
        t = np.array([(idx[i + 1], idx[i + 2], idx[0]) for i in range(len(idx) - 2)], dtype=np.int64).reshape(-1, 3)
    else:
        return np.zeros((0, 3), dtype=np.int64)
    return t[(t < nverts).all(axis=1)]


def texture_slots(mat):
    """[(texture, texCoord, slot key)] like meshcheck's walk over the material."""
    out = []

    def walk(v, depth):
        if not isinstance(v, dict) or depth > 8:
            return
        for k, c in v.items():
            if (k.endswith("Texture") or k.endswith("texture")) and isinstance(c, dict) and isinstance(c.get("index"), int):
                s = c.get("texCoord", 0)
                s = c.get("extensions", {}).get("KHR_texture_transform", {}).get("texCoord", s)
                out.append((c["index"], s, k))
                continue
            if k != "extras":
                walk(c, depth + 1)

    walk(mat, 0)
    return out


def texture_image(tex):
    ext = tex.get("extensions", {})
    for name in ("KHR_texture_basisu", "EXT_texture_webp", "EXT_texture_avif"):
        if isinstance(ext.get(name, {}).get("source"), int):
            return ext[name]["source"]
    return tex.get("source")


def decodable_image(doc, t):
    tex = doc["textures"][t]
    s = tex.get("extensions", {}).get("EXT_texture_webp", {}).get("source", tex.get("source"))
    return s if isinstance(s, int) and s < len(doc.get("images", [])) else None


def image_bytes(doc, buffers, uri_bytes, i):
    img = doc["images"][i]
    if "uri" in img:
        return uri_bytes(img["uri"])
    return view_bytes(doc, buffers, img["bufferView"])[0]


KTX2_MAGIC = b"\xabKTX 20\xbb\r\n\x1a\n"


def ktx2_header(b: bytes):
    vk, _ts, w, h, _d, _layers, _faces, levels, scheme = struct.unpack_from("<9I", b, 12)
    dfd_off = struct.unpack_from("<I", b, 48)[0]
    model = b[dfd_off + 12] if dfd_off + 12 < len(b) else None
    return {"vkformat": vk, "width": w, "height": h, "levels": max(levels, 1), "scheme": scheme, "model": model}


def image_size(b: bytes):
    if b.startswith(KTX2_MAGIC):
        h = ktx2_header(b)
        return h["width"], max(h["height"], 1)
    with Image.open(io.BytesIO(b)) as im:
        return im.size


def ktx2_compressed(h) -> bool:
    vk = h["vkformat"]
    return (h["scheme"] == 1 or h["model"] in (163, 166) or 131 <= vk <= 184
            or 1_000_054_000 <= vk <= 1_000_054_007 or 1_000_066_000 <= vk <= 1_000_066_013)


def weighted_quantile(values, weights, q):
    order = np.lexsort((np.arange(len(values)), values))
    v, w = values[order], weights[order]
    cum = np.cumsum(w)
    target = q * cum[-1]
    return float(v[min(np.searchsorted(cum, target - 1e-12 * cum[-1]), len(v) - 1)])


def srgb_to_linear(c):
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb8(c):
    c = np.clip(c, 0.0, 1.0)
    s = np.where(c <= 0.0031308, c * 12.92, 1.055 * np.power(c, 1 / 2.4) - 0.055)
    return np.clip(np.floor(s * 255.0 + 0.5), 0, 255).astype(np.int64)


def reference(path: Path) -> dict:
    doc, buffers, uri_bytes, tmp = open_asset(path)
    used = doc.get("extensionsUsed", [])
    for ext in ("KHR_draco_mesh_compression", "EXT_meshopt_compression", "KHR_meshopt_compression"):
        if ext in used:
            raise Unsupported(ext)
    materials = doc.get("materials", [])
    textures = doc.get("textures", [])
    sizes = {}

    def size_of(i):
        if i not in sizes:
            try:
                sizes[i] = image_size(image_bytes(doc, buffers, uri_bytes, i))
            except Exception:
                sizes[i] = None
        return sizes[i]

    groups = {}
    for mesh, pi, world in drawn_primitives(doc):
        prim = doc["meshes"][mesh]["primitives"][pi]
        attrs = prim.get("attributes", {})
        if "POSITION" not in attrs:
            continue
        pos = accessor(doc, buffers, attrs["POSITION"])
        # The mesh's default pose: morph targets' POSITION times the mesh's weights (glTF 2.0, 3.7.2.2).
        for target, w in zip(prim.get("targets", []), doc["meshes"][mesh].get("weights", [])):
            if "POSITION" in target and w:
                pos = pos + w * accessor(doc, buffers, target["POSITION"])
        tris = triangles(doc, buffers, prim, len(pos))
        for s in range(8):
            if f"TEXCOORD_{s}" in attrs:
                uv = accessor(doc, buffers, attrs[f"TEXCOORD_{s}"])
                groups.setdefault((prim.get("material"), s), []).append((pos, tris, uv, world))
    out = {"UV-006": None, "UV-007": None, "UV-008": None}
    if groups:
        o = {"uvs": 0, "outside_uvs": 0, "lightmap_outside_uvs": 0}
        m = {"triangles": 0, "mirrored_triangles": 0}
        dens, wts = [], []
        for (mat, s), prims in sorted(groups.items(), key=lambda kv: (kv[0][0] is not None, kv[0][0] or 0, kv[0][1])):
            slots = texture_slots(materials[mat]) if mat is not None and mat < len(materials) else []
            colour = {st for (_, st, k) in slots if k != "occlusionTexture"}
            lightmap = s >= 1 and s not in colour
            bound = [size_of(texture_image(textures[t])) for (t, st, _) in slots
                     if st == s and t < len(textures) and texture_image(textures[t]) is not None]
            bound = [b for b in bound if b]
            wh = (max(b[0] for b in bound), max(b[1] for b in bound)) if bound else None
            for pos, tris, uv, world in prims:
                inside = (uv[:, 0] >= 0) & (uv[:, 0] <= 1) & (uv[:, 1] >= 0) & (uv[:, 1] <= 1)
                o["uvs"] += len(uv)
                o["outside_uvs"] += int((~inside).sum())
                if lightmap:
                    o["lightmap_outside_uvs"] += int((~inside).sum())
                t = tris[(tris < len(uv)).all(axis=1)]
                a, b, c = uv[t[:, 0]], uv[t[:, 1]], uv[t[:, 2]]
                cross = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
                m["triangles"] += len(t)
                m["mirrored_triangles"] += int((cross > 0).sum())
                if wh:
                    p = (np.c_[pos, np.ones(len(pos))] @ world.T)[:, :3]
                    e1, e2 = p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]]
                    area = 0.5 * np.linalg.norm(np.cross(e1, e2), axis=1)
                    uva = 0.5 * np.abs(cross)
                    ok = np.isfinite(area) & (area > 0) & np.isfinite(uva)
                    dens.append(np.sqrt(uva[ok] * wh[0] * wh[1] / area[ok]))
                    wts.append(area[ok])
        out["UV-006"] = o
        out["UV-007"] = m
        if dens and sum(len(d) for d in dens):
            d, w = np.concatenate(dens), np.concatenate(wts)
            out["UV-008"] = {"texel_density_p5": weighted_quantile(d, w, 0.05),
                             "texel_density_median": weighted_quantile(d, w, 0.5),
                             "texel_density_p95": weighted_quantile(d, w, 0.95)}
    # Materials drawn, images they use.
    drawn_mats = sorted({doc["meshes"][me]["primitives"][pi].get("material") for me, pi, _ in drawn_primitives(doc)} - {None})
    drawn_mats = [x for x in drawn_mats if x < len(materials)]
    imgs = sorted({texture_image(textures[t]) for x in drawn_mats for (t, _, _) in texture_slots(materials[x])
                   if t < len(textures) and texture_image(textures[t]) is not None})
    readable = [(i, size_of(i)) for i in imgs if i < len(doc.get("images", [])) and size_of(i)]
    out["MAT-005"] = None if not readable else {
        "textures": len(readable),
        "non_power_of_two": sum(1 for _, (w, h) in readable if w & (w - 1) or h & (h - 1)),
    }
    # MAT-007: KTX2 headers.
    mipmapped = set()
    for x in drawn_mats:
        for (t, _, _) in texture_slots(materials[x]):
            if t >= len(textures):
                continue
            tex = textures[t]
            f = doc.get("samplers", [])[tex["sampler"]].get("minFilter") if "sampler" in tex else None
            if f not in (9728, 9729) and texture_image(tex) is not None:
                mipmapped.add(texture_image(tex))
    comp = missing = 0
    for i, _ in readable:
        b = image_bytes(doc, buffers, uri_bytes, i)
        if b.startswith(KTX2_MAGIC):
            h = ktx2_header(b)
            comp += ktx2_compressed(h)
            full = int(max(h["width"], h["height"], 1)).bit_length()
            missing += i in mipmapped and h["levels"] < full
    out["MAT-007"] = None if not readable else {"compressed_images": comp, "missing_mips": missing, "images": len(readable)}
    # MAT-006: texels.
    lo = hi = None
    for x in drawn_mats:
        pbr = materials[x].get("pbrMetallicRoughness", {})
        f = np.array(pbr.get("baseColorFactor", [1, 1, 1, 1])[:3], dtype=np.float64)
        bct = pbr.get("baseColorTexture")
        if bct is None:
            v = int(linear_to_srgb8(f).max())
            rng = (v, v)
        else:
            i = decodable_image(doc, bct["index"]) if bct["index"] < len(textures) else None
            if i is None:
                continue
            b = image_bytes(doc, buffers, uri_bytes, i)
            if b.startswith(KTX2_MAGIC):
                continue
            with Image.open(io.BytesIO(b)) as im:
                px = np.asarray(im.convert("RGBA")).reshape(-1, 4)
            px = px[px[:, 3] > 0][:, :3].astype(np.int64)
            if len(px) == 0:
                continue
            lut = np.stack([np.arange(256) if f[k] == 1.0 else linear_to_srgb8(srgb_to_linear(np.arange(256) / 255.0) * f[k])
                            for k in range(3)])
            v = np.maximum(np.maximum(lut[0][px[:, 0]], lut[1][px[:, 1]]), lut[2][px[:, 2]])
            rng = (int(v.min()), int(v.max()))
        lo = rng[0] if lo is None else min(lo, rng[0])
        hi = rng[1] if hi is None else max(hi, rng[1])
    out["MAT-006"] = None if lo is None else {"base_color_min": lo, "base_color_max": hi}
    if tmp:
        tmp.cleanup()
    return out


def run_meshcheck(binary, path):
    proc = subprocess.run([binary, "validate", str(path), "--only", ",".join(CHECKS), "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"meshcheck exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    return {c["id"]: c for c in report.get("checks", [])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meshcheck", default=str(ROOT / "target" / "debug" / "meshcheck"))
    ap.add_argument("-v", action="store_true")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    files = [Path(f) for f in args.files] or sorted(
        p for p in ASSETS.rglob("*") if p.suffix.lower() in (".glb", ".gltf", ".zip") and "unpacked" not in p.parts
    ) + sorted((ROOT / "tests" / "fixtures" / "asset-auditor").glob("*.glb"))
    failures = compared = 0
    for path in files:
        try:
            ref = reference(path)
        except Unsupported as e:
            print(f"skip  {path.name}: {e}")
            continue
        got = run_meshcheck(args.meshcheck, path)
        for cid, want in ref.items():
            c = got.get(cid)
            if c is None:
                print(f"FAIL  {path.name} {cid}: missing from meshcheck's report")
                failures += 1
                continue
            if want is None:
                ok = c["status"] == "skipped"
                failures += not ok
                if args.v or not ok:
                    print(f"{'ok  ' if ok else 'FAIL'}  {path.name} {cid}: reference has nothing to measure; meshcheck {c['status']}")
                continue
            meas = c.get("measured") or {}
            for k, v in want.items():
                mv = meas.get(k)
                if isinstance(v, float):
                    ok = mv is not None and abs(mv - v) <= 1e-6 * max(abs(v), 1.0)
                else:
                    ok = mv == v
                compared += 1
                failures += not ok
                if args.v or not ok:
                    print(f"{'ok  ' if ok else 'FAIL'}  {path.name} {cid}.{k}: numpy {v}, meshcheck {mv}")
    print(f"{compared} figures compared, {failures} differences")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
