#!/usr/bin/env python3
"""Cross-check meshcheck's KHR_draco_mesh_compression decoding against Draco.

Every Draco encoding must decode: sequential and edgebreaker connectivity
(the standard and the valence traversal), the point-cloud codecs (sequential
and kd-tree), quantised and unquantised attributes, and the legacy bitstream
versions older encoders wrote. This script proves it with real encoder output:

1. Encoded meshes: a few real meshes (Fox.glb and CesiumMan.glb from the
   shared assets, read with trimesh, plus a generated torus) are encoded with
   DracoPy (Google's C++ Draco encoder) at compression levels 0..10, several
   position quantisations, with and without normals and texture coordinates
   (quantised and stored as floats) and with preserve_order. Each stream's
   header says which codec the encoder picked: byte 8 is the method
   (0 sequential, 1 edgebreaker) and, for edgebreaker, the byte after the
   11-byte header (there is no metadata) is the traversal (0 standard,
   1 predictive, 2 valence). Draco 1.5 (DracoPy 2.2.0) writes sequential at
   level 0, edgebreaker above it, and the valence traversal at levels 6..10
   for meshes of 1,000 faces or more (CesiumMan, torus; Fox's 576 stay
   standard). The run fails unless every one of these was really produced.
2. Encoded point clouds: points only (and with normals, and with RGB
   colours), at levels that produce both the sequential and the kd-tree
   point-cloud codec.
   And three cases where the primitive's mode is not the stream's natural
   one: a mesh stream in a POINTS primitive (no triangles), in a
   TRIANGLE_STRIP (its index list drawn as a strip), and a point cloud in a
   TRIANGLES primitive (non-indexed triangles), as glTF draws accessors.
3. Legacy and reference streams: the real .drc files in tests/fixtures/draco/
   (from google/draco's testdata; see the README.md there), written by Draco
   0.9.1, 0.10.0, 1.0.0 and 1.1.0 (bitstreams 1.1 to 2.1) and by current
   encoders, meshes and point clouds.

Each stream is wrapped into a GLB built here (one primitive carrying
KHR_draco_mesh_compression; mode 4 for meshes, 0 for point clouds; accessors
without bufferView, as the extension asks; extensionsUsed and
extensionsRequired set), and `meshcheck validate FILE --skip SPEC-001
--format json` must

  - exit 0 or 1 (a report; never 3 or 4),
  - report stats.triangles equal to what the mode draws: the decoded face
    count for a mesh in TRIANGLES, 0 for POINTS,
  - report stats.vertices equal to DracoPy's decoded point count,
  - report an XFM-001 bounding box equal to the decoded positions' bounds
    within the quantisation step (and, for the streams encoded here, the
    decoded bounds are checked against the source mesh the same way).

Counts are checked, not only the exit code: a primitive that fails to decode
may become a note in an otherwise valid report.

Usage:
    target/pyenv/bin/python tests/crosscheck_draco.py [--meshcheck BIN] [-j N] [--keep DIR] [-v]

Requirements (pinned; see the pip line in .ci/run):
    trimesh==5.2.0 numpy==2.4.6 scipy==1.17.1 networkx==3.6.1 DracoPy==2.2.0
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

try:
    import DracoPy
    import numpy as np
    import trimesh
except ImportError as e:  # pragma: no cover - environment error, not a test failure
    sys.exit(
        f"crosscheck_draco: missing Python package ({e}); install with\n"
        "  python3 -m pip install trimesh==5.2.0 numpy==2.4.6 scipy==1.17.1 "
        "networkx==3.6.1 DracoPy==2.2.0"
    )

REPO = Path(__file__).resolve().parent.parent
ASSETS = REPO.parent / "shared" / "assets" / "models"
FIXTURES = REPO / "tests" / "fixtures" / "draco"

# Draco's GeometryAttribute::Type.
POSITION, NORMAL, COLOR, TEX_COORD = 0, 1, 2, 3
SEMANTIC = {POSITION: "POSITION", NORMAL: "NORMAL", COLOR: "COLOR_0", TEX_COORD: "TEXCOORD_0"}
# Draco's DataType -> glTF componentType (integer colours are normalised).
COMPONENT = {9: 5126, 2: 5121, 4: 5123}
TRAVERSAL = {0: "standard", 1: "predictive", 2: "valence"}

# Legacy fixtures: expected counts, from the source meshes in google/draco's
# testdata (test_nm.obj: 170 faces; cube_att.obj: 12 faces; cube_pc: 24 points;
# pc_color / pc_kd_color: 7733 points; point_cloud_no_qp: 21 points). DracoPy
# decodes every one of these too; the two must agree.
FIXTURE_EXPECT: dict[str, tuple[int, int]] = {
    # name: (points, faces); the point count differs between sequential and
    # edgebreaker streams of the same mesh (edgebreaker splits non-manifold
    # vertices: test_nm is "test non-manifold").
    "test_nm.obj.edgebreaker.0.9.1.drc": (99, 170),
    "test_nm.obj.sequential.0.9.1.drc": (97, 170),
    "test_nm.obj.edgebreaker.0.10.0.drc": (99, 170),
    "test_nm.obj.sequential.0.10.0.drc": (97, 170),
    "test_nm.obj.edgebreaker.1.0.0.drc": (99, 170),
    "test_nm.obj.sequential.1.0.0.drc": (97, 170),
    "test_nm.obj.edgebreaker.1.1.0.drc": (99, 170),
    "test_nm.obj.sequential.1.1.0.drc": (97, 170),
    "test_nm_quant.0.9.0.drc": (99, 170),
    "test_nm.obj.edgebreaker.cl10.2.2.drc": (99, 170),
    "test_nm.obj.edgebreaker.cl4.2.2.drc": (99, 170),
    "test_nm.obj.sequential.cl3.2.2.drc": (97, 170),
    "cube_att.drc": (24, 12),
    "cube_pc.drc": (24, 0),
    "pc_color.drc": (7733, 0),
    "pc_kd_color.drc": (7733, 0),
    "point_cloud_no_qp.drc": (21, 0),
}


# ---------------------------------------------------------------------------
# Draco header
# ---------------------------------------------------------------------------


@dataclass
class Header:
    version: str
    geometry: str  # "mesh" or "points"
    method: str  # sequential / edgebreaker / kd-tree
    traversal: str  # edgebreaker only: standard / predictive / valence; "" otherwise
    metadata: bool


def parse_header(data: bytes) -> Header:
    if data[:5] != b"DRACO" or len(data) < 12:
        raise ValueError("not a Draco stream")
    major, minor, gtype, method = data[5], data[6], data[7], data[8]
    (flags,) = struct.unpack_from("<H", data, 9)
    metadata = bool(flags & 0x8000) and (major, minor) >= (1, 3)
    if gtype == 1:
        name = {0: "sequential", 1: "edgebreaker"}.get(method, f"method {method}")
        traversal = ""
        if method == 1:
            # MeshEdgebreakerDecoder reads the traversal type first thing after
            # the header (and the metadata, which these streams must not have).
            traversal = "?" if metadata else TRAVERSAL.get(data[11], f"type {data[11]}")
        return Header(f"{major}.{minor}", "mesh", name, traversal, metadata)
    if gtype == 0:
        name = {0: "sequential", 1: "kd-tree"}.get(method, f"method {method}")
        return Header(f"{major}.{minor}", "points", name, "", metadata)
    raise ValueError(f"geometry type {gtype}")


# ---------------------------------------------------------------------------
# GLB wrapper
# ---------------------------------------------------------------------------


def make_glb(stream: bytes, decoded, points: bool, ids: dict[str, int], mode: int) -> bytes:
    """One node, one mesh, one primitive (in `mode`) whose geometry is `stream`.

    `ids` maps glTF semantics to Draco attribute unique ids. Accessors carry
    the decoded counts and no bufferView (KHR_draco_mesh_compression); a mesh
    stream's faces are the primitive's indices."""
    pos = np.asarray(decoded.points, dtype=np.float64).reshape(-1, 3)
    n = len(pos)
    by_id = {int(a["unique_id"]): a for a in reversed(list(decoded.attributes))}
    accessors, attributes = [], {}
    for sem, uid in ids.items():
        att = by_id[uid]
        acc = {
            "componentType": COMPONENT.get(att["data_type"], 5126),
            "count": n,
            "type": f"VEC{att['num_components']}",
        }
        if acc["componentType"] != 5126:
            acc["normalized"] = True
        if sem == "POSITION":
            acc["min"] = [float(x) for x in pos.min(axis=0)] if n else [0.0, 0.0, 0.0]
            acc["max"] = [float(x) for x in pos.max(axis=0)] if n else [0.0, 0.0, 0.0]
        attributes[sem] = len(accessors)
        accessors.append(acc)
    prim: dict = {
        "attributes": attributes,
        "mode": mode,
        "extensions": {"KHR_draco_mesh_compression": {"bufferView": 0, "attributes": dict(ids)}},
    }
    if not points:
        faces = np.asarray(decoded.faces).reshape(-1, 3)
        prim["indices"] = len(accessors)
        accessors.append({"componentType": 5125, "count": int(faces.size), "type": "SCALAR"})
    doc = {
        "asset": {"version": "2.0", "generator": "meshcheck tests/crosscheck_draco.py"},
        "extensionsUsed": ["KHR_draco_mesh_compression"],
        "extensionsRequired": ["KHR_draco_mesh_compression"],
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [prim]}],
        "accessors": accessors,
        "bufferViews": [{"buffer": 0, "byteOffset": 0, "byteLength": len(stream)}],
        "buffers": [{"byteLength": len(stream)}],
    }
    js = json.dumps(doc, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 4)
    bin_ = stream + b"\0" * (-len(stream) % 4)
    total = 12 + 8 + len(js) + 8 + len(bin_)
    return (
        struct.pack("<4sII", b"glTF", 2, total)
        + struct.pack("<I4s", len(js), b"JSON")
        + js
        + struct.pack("<I4s", len(bin_), b"BIN\0")
        + bin_
    )


def attribute_ids(decoded, legacy: bool) -> dict[str, int]:
    """glTF semantic -> Draco unique id, for the attributes the stream has.

    Bitstreams before 1.3 store no unique ids (every attribute reads as 0), so
    only POSITION, the first attribute in every such fixture, can be named."""
    atts = list(decoded.attributes)
    if legacy:
        if not atts or atts[0]["attribute_type"] != POSITION:
            raise ValueError("legacy stream whose first attribute is not POSITION")
        return {"POSITION": int(atts[0]["unique_id"])}
    ids: dict[str, int] = {}
    for a in atts:
        sem = SEMANTIC.get(a["attribute_type"])
        if sem and sem not in ids:
            ids[sem] = int(a["unique_id"])
    if len({*ids.values()}) != len(ids):
        raise ValueError(f"attribute unique ids are not unique: {ids}")
    return ids


# ---------------------------------------------------------------------------
# Source meshes
# ---------------------------------------------------------------------------


@dataclass
class Source:
    name: str
    points: np.ndarray  # (n, 3) float32
    faces: np.ndarray | None  # (m, 3) uint32, None for a point cloud
    uv: np.ndarray | None = None
    normals: np.ndarray | None = None
    colors: np.ndarray | None = None  # (n, 3) uint8


def load_glb_mesh(rel: str) -> Source:
    path = ASSETS / rel
    scene = trimesh.load_scene(str(path), process=False, merge_primitives=False)
    # The largest triangle mesh of the file, in its own (local) space.
    geom = max(
        (g for g in scene.geometry.values() if isinstance(g, trimesh.Trimesh)),
        key=lambda g: len(g.faces),
    )
    uv = getattr(geom.visual, "uv", None)
    return Source(
        name=path.stem,
        points=np.asarray(geom.vertices, dtype=np.float32),
        faces=np.asarray(geom.faces, dtype=np.uint32),
        uv=None if uv is None else np.asarray(uv, dtype=np.float64),
        normals=np.asarray(geom.vertex_normals, dtype=np.float64),
    )


def torus(major: int = 64, minor: int = 32, r1: float = 1.0, r2: float = 0.35) -> Source:
    """A UV-mapped torus: (major+1) x (minor+1) vertices (the seams carry two
    UVs), 2 * major * minor triangles (4096 with the defaults)."""
    u = np.linspace(0.0, 1.0, major + 1)
    v = np.linspace(0.0, 1.0, minor + 1)
    uu, vv = np.meshgrid(u, v, indexing="ij")
    a, b = uu * 2 * np.pi, vv * 2 * np.pi
    pts = np.stack([(r1 + r2 * np.cos(b)) * np.cos(a), (r1 + r2 * np.cos(b)) * np.sin(a), r2 * np.sin(b)], axis=-1)
    nrm = np.stack([np.cos(b) * np.cos(a), np.cos(b) * np.sin(a), np.sin(b)], axis=-1)
    uv = np.stack([uu, vv], axis=-1)
    idx = np.arange((major + 1) * (minor + 1)).reshape(major + 1, minor + 1)
    q0, q1, q2, q3 = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
    faces = np.concatenate([np.stack([q0, q1, q2], -1).reshape(-1, 3), np.stack([q0, q2, q3], -1).reshape(-1, 3)])
    return Source(
        name="torus",
        points=pts.reshape(-1, 3).astype(np.float32),
        faces=faces.astype(np.uint32),
        uv=uv.reshape(-1, 2),
        normals=nrm.reshape(-1, 3),
    )


def point_cloud(n: int = 6000, seed: int = 7) -> Source:
    """Points on and around a torus, with normals (a scan-like cloud)."""
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0, 2 * np.pi, n), rng.uniform(0, 2 * np.pi, n)
    r = 0.35 + rng.normal(0, 0.01, n)
    pts = np.stack([(1 + r * np.cos(b)) * np.cos(a), (1 + r * np.cos(b)) * np.sin(a), r * np.sin(b)], -1)
    nrm = np.stack([np.cos(b) * np.cos(a), np.cos(b) * np.sin(a), np.sin(b)], -1)
    rgb = np.clip((nrm * 0.5 + 0.5) * 255, 0, 255).astype(np.uint8)
    return Source("cloud", (pts * 2.5 + [10, -3, 0.5]).astype(np.float32), None, None, nrm, rgb)


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------


@dataclass
class Case:
    label: str  # what the table shows as the setting
    source: str
    stream: bytes
    qbits: int | None  # position quantisation (None: unknown/legacy)
    src_bounds: tuple[np.ndarray, np.ndarray] | None = None  # source mesh's bounds
    expect: tuple[int, int] | None = None  # fixture: (points, faces) from the source mesh
    legacy: bool = False  # bitstream before 1.3: no attribute unique ids
    mode: int | None = None  # the primitive's mode; None: 0 for a point cloud, 4 for a mesh
    # results
    header: Header | None = None
    ok: bool = False
    detail: str = ""
    problems: list[str] = field(default_factory=list)


def encode_cases(sources: list[Source], cloud: Source) -> list[Case]:
    cases: list[Case] = []

    def add(src: Source, label: str, *, qbits: int = 14, level: int = 7, attrs: bool = True, mode=None, **kw):
        args = dict(quantization_bits=qbits, compression_level=level)
        if attrs:
            if src.uv is not None:
                args["tex_coord"] = src.uv
                args["tex_coord_quantization_bits"] = kw.pop("uvq", 12)
            if src.normals is not None:
                args["normals"] = src.normals
                args["normal_quantization_bits"] = kw.pop("nq", 10)
        else:
            kw.pop("uvq", None)
            kw.pop("nq", None)
        args.update(kw)
        stream = DracoPy.encode(src.points, faces=src.faces, **args)
        bounds = (src.points.min(axis=0).astype(np.float64), src.points.max(axis=0).astype(np.float64))
        cases.append(Case(f"{label}", src.name, stream, qbits, bounds, mode=mode))

    for src in sources:
        attrs = "+".join(x for x, v in (("uv", src.uv), ("nrm", src.normals)) if v is not None) or "pos"
        for level in range(11):
            add(src, f"cl{level} q14 {attrs}", level=level)
        for qbits in (8, 11, 16, 24):
            for level in (0, 5, 10):
                add(src, f"cl{level} q{qbits} {attrs}", qbits=qbits, level=level)
        for level in (0, 4, 7, 10):
            add(src, f"cl{level} q14 pos only", level=level, attrs=False)
        # Normals and UVs stored as floats (no quantisation transform).
        for level in (0, 7):
            add(src, f"cl{level} q14 {attrs} as floats", level=level, uvq=None, nq=None)
        add(src, f"cl7 q14 {attrs} preserve_order", level=7, preserve_order=True)

    # Point clouds: speed 10 is the sequential codec, anything else the kd-tree.
    for level in (0, 3, 5, 7, 10):
        add(cloud, f"points cl{level} q14", level=level, attrs=False)
    for qbits in (8, 20):
        add(cloud, f"points cl7 q{qbits}", qbits=qbits, level=7, attrs=False)
    add(cloud, "points cl0 q14 +nrm", level=0)
    add(cloud, "points cl7 q14 +nrm", level=7)
    for level in (0, 7):
        add(cloud, f"points cl{level} q14 +rgb", level=level, attrs=False, colors=cloud.colors)

    # The primitive's mode, not the stream, decides what is drawn (glTF
    # 3.7.2.1): a mesh stream in a POINTS primitive draws no triangles, one in
    # a TRIANGLE_STRIP draws its index list as a strip, and a point cloud in a
    # TRIANGLES primitive is non-indexed triangles.
    torus_src = sources[-1]
    add(torus_src, "mode 0 (POINTS) over a mesh, cl7", level=7, mode=0)
    add(torus_src, "mode 5 (STRIP) over a mesh, cl0", level=0, mode=5)
    add(cloud, "mode 4 (TRIANGLES) over points, cl7", level=7, attrs=False, mode=4)
    return cases


def fixture_cases() -> list[Case]:
    out = []
    for path in sorted(FIXTURES.glob("*.drc")):
        data = path.read_bytes()
        h = parse_header(data)
        legacy = tuple(int(x) for x in h.version.split(".")) < (1, 3)
        out.append(Case(path.name, "fixture", data, None, None, FIXTURE_EXPECT.get(path.name), legacy))
    return out


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------


def decode_with_dracopy(stream: bytes):
    return DracoPy.decode(stream)


def run_case(case: Case, bin_: str, tmp: Path, index: int, verbose: bool) -> Case:
    try:
        case.header = parse_header(case.stream)
        points = case.header.geometry == "points"
        dec = decode_with_dracopy(case.stream)
        pos = np.asarray(dec.points, dtype=np.float64).reshape(-1, 3)
        n_points = len(pos)
        n_faces = 0 if points else len(np.asarray(dec.faces).reshape(-1, 3))
        if case.expect is not None and case.expect != (n_points, n_faces):
            case.problems.append(f"DracoPy decodes {(n_points, n_faces)}, the source mesh has {case.expect}")
        ids = attribute_ids(dec, case.legacy)
        mode = case.mode if case.mode is not None else (0 if points else 4)
        # What the mode draws: a mesh stream's faces are its index list, a
        # point cloud has none (vertices drawn in order).
        drawn = n_points if points else 3 * n_faces
        want_tris = {4: drawn // 3, 5: max(drawn - 2, 0), 6: max(drawn - 2, 0)}.get(mode, 0)
        glb = make_glb(case.stream, dec, points, ids, mode)
    except Exception as e:  # a harness failure is a failure too
        case.problems.append(f"harness: {type(e).__name__}: {e}")
        return case
    path = tmp / f"{index:03d}-{case.source}-{case.label.replace(' ', '_').replace('+', '')}.glb"
    path.write_bytes(glb)
    proc = subprocess.run(
        [bin_, "validate", str(path), "--skip", "SPEC-001", "--format", "json", "-j", "1"],
        capture_output=True,
        text=True,
    )
    if proc.returncode not in (0, 1):
        case.problems.append(f"exit {proc.returncode}: {proc.stderr.strip()[-400:] or proc.stdout.strip()[-400:]}")
        return case
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        case.problems.append(f"stdout is not JSON ({e})")
        return case
    stats = report.get("stats", {})
    if stats.get("triangles") != want_tris:
        case.problems.append(
            f"stats.triangles {stats.get('triangles')} != {want_tris} (mode {mode}, {n_faces} decoded faces, {n_points} points)"
        )
    if stats.get("vertices") != n_points:
        case.problems.append(f"stats.vertices {stats.get('vertices')} != {n_points} decoded points")
    xfm = next((c for c in report.get("checks", []) if c.get("id") == "XFM-001"), None)
    measured = (xfm or {}).get("measured") or {}
    if "bounds_min" not in measured or "bounds_max" not in measured or n_points == 0:
        case.problems.append(f"XFM-001 has no bounds ({(xfm or {}).get('status')}: {(xfm or {}).get('message')})")
    else:
        lo, hi = pos.min(axis=0), pos.max(axis=0)
        extent = float((hi - lo).max())
        # One quantisation step of the position transform (Draco quantises the
        # largest side into 2^bits - 1 steps); for fixtures, whose settings
        # are not ours, 2^-12 of the extent (they use 11 to 14 bits). Plus the
        # report's 1e-6 rounding and float32 precision.
        step = extent / ((1 << case.qbits) - 1) if case.qbits else extent * 2.0**-12
        scale = float(np.abs(np.concatenate([lo, hi])).max())
        tol = step + 1e-6 + 2.0**-22 * scale
        got_lo = np.asarray(measured["bounds_min"], dtype=np.float64)
        got_hi = np.asarray(measured["bounds_max"], dtype=np.float64)
        dev = float(max(np.abs(got_lo - lo).max(), np.abs(got_hi - hi).max()))
        case.detail = f"bbox dev {dev:.2e} (tol {tol:.1e})"
        if not dev <= tol:
            case.problems.append(f"XFM-001 bounds {got_lo.tolist()}..{got_hi.tolist()} != decoded {lo.tolist()}..{hi.tolist()} (dev {dev:.3g} > {tol:.3g})")
        if case.src_bounds is not None:
            sdev = float(max(np.abs(case.src_bounds[0] - lo).max(), np.abs(case.src_bounds[1] - hi).max()))
            if not sdev <= tol:
                case.problems.append(f"decoded bounds are {sdev:.3g} from the source mesh's (> {tol:.3g})")
    if case.problems:
        notes = [n for k in ("notes", "unread") for n in (report.get(k) or [])]
        if notes:
            case.problems.append(f"report notes: {json.dumps(notes)[:400]}")
    case.ok = not case.problems
    if verbose:
        print(f"  {case.source:12s} {case.label:34s} {'ok' if case.ok else 'FAIL'} {case.detail}", flush=True)
    return case


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--meshcheck", default=str(REPO / "target" / "debug" / "meshcheck"), help="meshcheck binary")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2, help="meshcheck runs in parallel")
    ap.add_argument("--keep", metavar="DIR", help="write the generated GLBs into DIR and keep them")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case as it finishes")
    args = ap.parse_args()
    if not Path(args.meshcheck).is_file():
        print(f"crosscheck_draco: no meshcheck binary at {args.meshcheck} (cargo build --locked)", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    sources = [load_glb_mesh("khronos-sample-models/Fox.glb"), load_glb_mesh("khronos-sample-models/CesiumMan.glb"), torus()]
    cases = encode_cases(sources, point_cloud()) + fixture_cases()

    with tempfile.TemporaryDirectory(prefix="crosscheck_draco-") as td:
        tmp = Path(args.keep) if args.keep else Path(td)
        tmp.mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            done = list(pool.map(lambda ic: run_case(ic[1], args.meshcheck, tmp, ic[0], args.verbose), enumerate(cases)))

    # Summary table.
    print(f"{'source':12s} {'setting':36s} {'ver':4s} {'method':12s} {'traversal':10s} {'decoded':8s} detail")
    for c in done:
        h = c.header
        print(
            f"{c.source:12s} {c.label:36s} {h.version if h else '?':4s} {h.method if h else '?':12s} "
            f"{(h.traversal or '-') if h else '?':10s} {'ok' if c.ok else 'FAIL':8s} {c.detail}"
        )
        for p in c.problems:
            print(f"    ! {p}")

    # Coverage: the run proves nothing unless the encoder really produced every codec.
    seen = {(c.header.geometry, c.header.method, c.header.traversal) for c in done if c.header}
    versions = {c.header.version for c in done if c.header}
    required = {
        ("mesh", "sequential", ""): "sequential mesh connectivity",
        ("mesh", "edgebreaker", "standard"): "standard edgebreaker",
        ("mesh", "edgebreaker", "valence"): "valence edgebreaker",
        ("points", "sequential", ""): "sequential point cloud",
        ("points", "kd-tree", ""): "kd-tree point cloud",
    }
    missing = [what for key, what in required.items() if key not in seen]
    # 1.1 (Draco 0.9.1) to 2.1 (1.1.0) are legacy; 2.2 is every current
    # mesh, 2.3 every current point cloud.
    for v in ("1.1", "1.2", "2.0", "2.1", "2.2", "2.3"):
        if v not in versions:
            missing.append(f"bitstream version {v}")
    failed = [c for c in done if not c.ok]
    counts: dict[tuple, int] = {}
    for c in done:
        if c.header:
            key = (c.header.geometry, c.header.method, c.header.traversal)
            counts[key] = counts.get(key, 0) + 1
    print()
    print("coverage: " + ", ".join(f"{g} {m}{' ' + t if t else ''}: {n}" for (g, m, t), n in sorted(counts.items())))
    print(f"bitstream versions: {', '.join(sorted(versions))}")
    print(f"{len(done) - len(failed)}/{len(done)} streams decoded and measured correctly in {time.monotonic() - t0:.1f} s")
    for what in missing:
        print(f"NOT COVERED: {what}")
    return 1 if failed or missing else 0


if __name__ == "__main__":
    sys.exit(main())
