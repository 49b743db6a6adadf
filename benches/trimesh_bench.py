#!/usr/bin/env python3
"""Time meshcheck's geometry checks against trimesh + numpy computing the same
quantities, in one run, on the same files.

Quantities (the ones tests/crosscheck_trimesh.py compares): the exact weld
(Euclidean <= tol, transitive), collapsed triangles, edges, boundary edges and
loops, non-manifold edges, shells (edge-connected, non-manifold edges
included), open shells, winding consistency, and degenerate triangles (both
meshcheck's definition and trimesh's `nondegenerate`).

- trimesh side: each file is measured in a child Python process (so its peak
  RSS is its own); "checks" is the weld plus every quantity above, from the
  world-space triangle soup; "with load" adds `trimesh.load_scene` (process=
  False, skip_materials=True) and building the soup. Zip bundles are
  extracted once beforehand, outside the timing. Median of --runs runs after
  one warm-up (a single warm-up-free run per file with --quick).
- meshcheck side: `meshcheck validate FILE --only GEO,TOP --skip SPEC-001
  --format json` as a process (spawn to exit, stdout to a pipe), median of
  --runs runs after one warm-up; peak RSS from GNU time (`/usr/bin/time -f
  %M`) when present, else from the child's rusage. The whole checks_only run
  without SPEC-001 (`--skip SPEC-001`, every other check) is timed the same way
  for the 1-second target.
- The 1M-triangle mesh is `testkit::sphere(1000, 501, 1.0)` (tests/support/shapes.rs) written
  with `Doc::single(..).to_glb()`: the file `cargo bench --bench engine` leaves
  in $TMPDIR/meshcheck-bench/sphere_1m.glb when present (or --sphere PATH),
  otherwise a numpy replica of the same generator (same positions, normals,
  UVs and indices, bit for bit; checked against the testkit file whenever
  both exist).

Usage:
    python3 benches/trimesh_bench.py [--meshcheck BIN] [--runs N] [--quick] [--strict] [FILE...]

Prints markdown to stdout, progress to stderr. Exits 1 when the two sides
disagree on a result or a run fails; with --strict also when a target
(>= 10x faster than trimesh computing the same quantities, that is
meshcheck with GEO only, whole run on 1M triangles < 1 s, peak RSS
< 400 MB) is missed. Default files: FlightHelmet.zip,
subpass_scene_opaque.gltf, NormalTangentTest.glb and terrain.glb.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
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
DEFAULT_FILES = [
    ASSETS / "khronos-sample-models" / "FlightHelmet.zip",
    ASSETS / "other" / "subpass_scene_opaque.gltf",
    ASSETS / "khronos-sample-models" / "NormalTangentTest.glb",
    ASSETS / "other" / "terrain.glb",
]
TARGET_SPEEDUP = 10.0
TARGET_1M_SECONDS = 1.0
TARGET_RSS_MB = 400.0


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# The 1M-triangle sphere (numpy replica of testkit::sphere, tests/support/shapes.rs)
# ---------------------------------------------------------------------------


def sphere_arrays(segments: int = 1000, rings: int = 501, radius: float = 1.0):
    """Same arithmetic as tests/support/shapes.rs `sphere`: directions in f64, stored
    as f32 and scaled by the f32 radius; UVs s/segments, k/rings in f32."""
    s = np.arange(segments + 1, dtype=np.float64)
    phi = 2.0 * np.pi * s / segments
    cp, sp = np.cos(phi), np.sin(phi)
    k = np.arange(1, rings, dtype=np.float64)
    theta = np.pi * k / rings
    st, ct = np.sin(theta), np.cos(theta)
    ring_n = np.stack([st[:, None] * cp[None, :], np.broadcast_to(ct[:, None], (rings - 1, segments + 1)),
                       -st[:, None] * sp[None, :]], axis=2).reshape(-1, 3)
    normals = np.concatenate([[[0.0, 1.0, 0.0]], ring_n, [[0.0, -1.0, 0.0]]]).astype(np.float32)
    positions = normals * np.float32(radius)
    su = np.arange(segments + 1, dtype=np.float32) / np.float32(segments)
    kv = np.arange(1, rings, dtype=np.float32) / np.float32(rings)
    ring_uv = np.stack([np.broadcast_to(su[None, :], (rings - 1, segments + 1)),
                        np.broadcast_to(kv[:, None], (rings - 1, segments + 1))], axis=2).reshape(-1, 2)
    uvs = np.concatenate([[[0.5, 0.0]], ring_uv, [[0.5, 1.0]]]).astype(np.float32)
    count = len(positions)

    def ring(kk, ss):
        return 1 + (kk - 1) * (segments + 1) + ss

    S = np.arange(segments, dtype=np.int64)
    north = np.stack([np.zeros(segments, np.int64), ring(1, S), ring(1, S + 1)], axis=1)
    K = np.arange(1, rings - 1, dtype=np.int64)[:, None]
    a, b, c, d = ring(K, S[None, :]), ring(K + 1, S[None, :]), ring(K + 1, S[None, :] + 1), ring(K, S[None, :] + 1)
    quads = np.stack([a, b, c, a, c, d], axis=2).reshape(-1, 3)
    south = np.stack([ring(rings - 1, S), np.full(segments, count - 1, np.int64), ring(rings - 1, S + 1)], axis=1)
    indices = np.concatenate([north, quads, south]).astype(np.uint32)
    return positions, normals, uvs, indices


def write_glb(path: Path, positions, normals, uvs, indices) -> None:
    views, blobs, offset = [], [], 0
    for arr, target in ((positions, 34962), (normals, 34962), (uvs, 34962), (indices.reshape(-1), 34963)):
        data = np.ascontiguousarray(arr).tobytes()
        view = {"buffer": 0, "byteLength": len(data), "target": target}
        if offset:
            view["byteOffset"] = offset
        views.append(view)
        blobs.append(data)
        offset += len(data)
    doc = {
        "asset": {"version": "2.0", "generator": "meshcheck testkit"},
        "scene": 0, "scenes": [{"nodes": [0]}], "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "NORMAL": 1, "TEXCOORD_0": 2}, "indices": 3}]}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": len(positions), "type": "VEC3",
             "min": positions.min(axis=0).tolist(), "max": positions.max(axis=0).tolist()},
            {"bufferView": 1, "componentType": 5126, "count": len(normals), "type": "VEC3"},
            {"bufferView": 2, "componentType": 5126, "count": len(uvs), "type": "VEC2"},
            {"bufferView": 3, "componentType": 5125, "count": indices.size, "type": "SCALAR"},
        ],
        "bufferViews": views,
        "buffers": [{"byteLength": offset}],
    }
    js = json.dumps(doc, separators=(",", ":")).encode()
    js += b" " * ((-len(js)) % 4)
    binary = b"".join(blobs)
    binary += b"\0" * ((-len(binary)) % 4)
    total = 12 + 8 + len(js) + 8 + len(binary)
    with open(path, "wb") as f:
        f.write(struct.pack("<III", 0x46546C67, 2, total))
        f.write(struct.pack("<II", len(js), 0x4E4F534A) + js)
        f.write(struct.pack("<II", len(binary), 0x004E4942) + binary)


def glb_bin(path: Path) -> bytes:
    b = path.read_bytes()
    jl = struct.unpack_from("<I", b, 12)[0]
    bl = struct.unpack_from("<I", b, 20 + jl)[0]
    return b[28 + jl: 28 + jl + bl]


def sphere_file(explicit: Path | None, tmp: Path) -> tuple[Path, str]:
    if explicit:
        return explicit, "given with --sphere"
    testkit = Path(tempfile.gettempdir()) / "meshcheck-bench" / "sphere_1m.glb"
    arrays = sphere_arrays()
    if testkit.exists():
        same = glb_bin(testkit).rstrip(b"\0") == b"".join(np.ascontiguousarray(a).tobytes() for a in arrays).rstrip(b"\0")
        note = "testkit file from `cargo bench --bench engine`" + ("; numpy replica identical" if same else "; NOTE: numpy replica differs (testkit changed?)")
        return testkit, note
    path = tmp / "sphere_1m.glb"
    write_glb(path, *arrays)
    return path, "numpy replica of testkit::sphere(1000, 501, 1.0)"


# ---------------------------------------------------------------------------
# trimesh worker (runs in a child process per file)
# ---------------------------------------------------------------------------


def trimesh_pipeline(path: Path, tol: float) -> tuple[dict, dict]:
    """Returns (stage seconds, results)."""
    import trimesh

    sys.path.insert(0, str(REPO / "tests"))
    from crosscheck_trimesh import weld, world_soup  # the same soup and weld as the cross-check

    t = {}
    c0 = time.perf_counter()
    scene = trimesh.load_scene(str(path), process=False, merge_primitives=False, skip_materials=True)
    points, faces, _ = world_soup(scene)
    c1 = time.perf_counter()
    t["load"] = c1 - c0
    r = {"triangles": len(faces)}
    # weld: the cross-check's (cKDTree pairs within tol, then components)
    labels, _ = weld(points, tol)
    _, rep = np.unique(labels, return_index=True)  # first point of each group
    wf = labels[faces]
    collapsed = (wf[:, 0] == wf[:, 1]) | (wf[:, 1] == wf[:, 2]) | (wf[:, 0] == wf[:, 2])
    c2 = time.perf_counter()
    t["weld"] = c2 - c1
    mesh = trimesh.Trimesh(vertices=points[rep], faces=wf[~collapsed], process=False, validate=False)
    es = mesh.edges_sorted
    _, inverse = trimesh.grouping.unique_rows(es)
    use = np.bincount(inverse)
    r["edges"] = len(use)
    c3 = time.perf_counter()
    t["edges"] = c3 - c2
    boundary = trimesh.grouping.group_rows(es, require_count=1)
    r["boundary_edges"] = len(boundary)
    r["boundary_loops"] = len(trimesh.graph.connected_components(es[boundary], min_len=1)) if len(boundary) else 0
    c4 = time.perf_counter()
    t["boundary"] = c4 - c3
    r["non_manifold_edges"] = int((use >= 3).sum())
    c5 = time.perf_counter()
    t["non_manifold"] = c5 - c4
    nf = len(mesh.faces)
    adj = mesh.face_adjacency
    nm = np.flatnonzero(use[inverse] >= 3)
    order = nm[np.argsort(inverse[nm], kind="stable")]
    fo, go = mesh.edges_face[order], inverse[order]
    same = go[1:] == go[:-1]
    extra = np.column_stack([fo[:-1][same], fo[1:][same]]) if len(order) > 1 else np.zeros((0, 2), np.int64)
    shell = trimesh.graph.connected_component_labels(np.vstack([adj.reshape(-1, 2), extra]), node_count=nf)
    r["shells"] = int(shell.max()) + 1 if nf else 0
    r["open_shells"] = len(np.unique(shell[mesh.edges_face[boundary]])) if len(boundary) else 0
    c6 = time.perf_counter()
    t["shells"] = c6 - c5
    r["winding_consistent"] = bool(mesh.is_winding_consistent)
    c7 = time.perf_counter()
    t["winding"] = c7 - c6
    tri = points[faces]
    area = trimesh.triangles.area(tri)
    e = np.stack([tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 1], tri[:, 0] - tri[:, 2]], axis=1)
    longest = np.sqrt((e ** 2).sum(axis=2).max(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        hmin = np.where(longest > 0, 2.0 * area / longest, 0.0)
    repeated = (faces[:, 0] == faces[:, 1]) | (faces[:, 1] == faces[:, 2]) | (faces[:, 0] == faces[:, 2])
    r["degenerate"] = int((repeated | ~((area >= tol * tol) & (hmin >= tol))).sum())
    r["degenerate_trimesh"] = int((~trimesh.triangles.nondegenerate(tri, areas=area, height=tol)).sum())
    c8 = time.perf_counter()
    t["degenerate"] = c8 - c7
    t["checks"] = c8 - c1
    t["with_load"] = c8 - c0
    return t, r


def worker(path: Path, tol: float, runs: int, warmup: bool) -> None:
    if warmup:
        trimesh_pipeline(path, tol)
    samples, result = [], None
    for _ in range(runs):
        t, result = trimesh_pipeline(path, tol)
        samples.append(t)
    med = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"times": med, "result": result, "rss_mb": rss_kb / 1024.0}))


# ---------------------------------------------------------------------------
# meshcheck
# ---------------------------------------------------------------------------


def time_meshcheck(binary: str, path: Path, args: list[str], runs: int, warmup: bool) -> tuple[float, float, dict]:
    cmd = [binary, "validate", str(path), *args, "--format", "json"]
    gnu_time = Path("/usr/bin/time")
    if warmup:
        subprocess.run(cmd, capture_output=True)
    samples, report = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True)
        samples.append(time.perf_counter() - t0)
        report = proc.stdout
    # peak RSS in a separate run, so GNU time's own startup is not timed
    if gnu_time.exists():
        p = subprocess.run([str(gnu_time), "-f", "%M", *cmd], capture_output=True, text=True)
        rss_mb = int(p.stderr.strip().splitlines()[-1]) / 1024.0
    else:
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        subprocess.run(cmd, capture_output=True)
        rss_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024.0
    measured = {}
    try:
        rep = json.loads(report)
        for c in rep.get("checks", []):
            measured[c["id"]] = c.get("measured") or {}
        measured["_triangles"] = rep.get("stats", {}).get("triangles")
    except (json.JSONDecodeError, TypeError):
        pass
    return statistics.median(samples), rss_mb, measured


# ---------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--meshcheck", default=str(REPO / "target" / "release" / "meshcheck"))
    ap.add_argument("--runs", type=int, default=5, help="runs per measurement after one warm-up (default 5)")
    ap.add_argument("--quick", action="store_true", help="one run, no warm-up (a smoke test, not a measurement)")
    ap.add_argument("--sphere", type=Path, default=None, help="the 1M-triangle GLB (default: see the module doc)")
    ap.add_argument("--tol", type=float, default=1e-5, help="weld tolerance (meshcheck's default profile: 1e-5)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed (default: only on errors or disagreement)")
    ap.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("files", nargs="*", type=Path)
    args = ap.parse_args()
    runs, warmup = (1, False) if args.quick else (max(1, args.runs), True)
    if args.worker:
        worker(args.worker, args.tol, runs, warmup)
        return 0
    if not os.access(args.meshcheck, os.X_OK):
        log(f"trimesh_bench: {args.meshcheck} is missing; run `cargo build --release --bin meshcheck`")
        return 2
    import trimesh
    import scipy

    tmpdir = tempfile.TemporaryDirectory(prefix="trimesh-bench-")
    tmp = Path(tmpdir.name)
    sphere, sphere_note = sphere_file(args.sphere, tmp)
    files = [sphere] + (args.files or DEFAULT_FILES)
    rows, ok = [], True
    for path in files:
        if not path.exists():
            log(f"skipping {path}: missing")
            continue
        # trimesh reads a bundle's main file from disk: extract it once, untimed
        tm_path = path
        if path.suffix.lower() == ".zip":
            sys.path.insert(0, str(REPO / "tests"))
            from crosscheck_trimesh import pick_main

            with zipfile.ZipFile(path) as z:
                out = tmp / path.stem
                z.extractall(out)
                tm_path = out / pick_main(z.namelist())
        log(f"{path.name}: trimesh ...")
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", str(tm_path), "--tol", repr(args.tol)]
            + (["--quick"] if args.quick else ["--runs", str(runs)]),
            capture_output=True, text=True)
        if proc.returncode != 0:
            log(proc.stderr)
            return 1
        tmres = json.loads(proc.stdout.strip().splitlines()[-1])
        log(f"{path.name}: meshcheck ...")
        mc_s, mc_rss, mc = time_meshcheck(args.meshcheck, path, ["--only", "GEO,TOP", "--skip", "SPEC-001"], runs, warmup)
        geo_s, _, _ = time_meshcheck(args.meshcheck, path, ["--only", "GEO", "--skip", "SPEC-001"], runs, warmup)
        all_s, all_rss, _ = time_meshcheck(args.meshcheck, path, ["--skip", "SPEC-001"], runs, warmup)
        # the two sides must have measured the same thing
        r = tmres["result"]
        g2, g4 = mc.get("GEO-002", {}), mc.get("GEO-004", {})
        agree = (r["triangles"] == g4.get("triangles") and r["boundary_edges"] == g2.get("boundary_edges")
                 and r["non_manifold_edges"] == g2.get("non_manifold_edges") and r["shells"] == g2.get("shells")
                 and r["degenerate"] == g4.get("degenerate_triangles"))
        t = tmres["times"]
        rows.append(dict(name=path.name + (" (generated)" if path == sphere else ""), tris=r["triangles"],
                         tm_checks=t["checks"], tm_load=t["with_load"], tm_stages=t, tm_rss=tmres["rss_mb"],
                         mc=mc_s, mc_rss=mc_rss, geo_s=geo_s, all_s=all_s, all_rss=all_rss, agree=agree))
    tmpdir.cleanup()

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    print("# meshcheck vs trimesh: welded-mesh geometry checks\n")
    print(f"- trimesh {trimesh.__version__}, numpy {np.__version__}, scipy {scipy.__version__}, "
          f"Python {platform.python_version()}; meshcheck `{os.path.relpath(args.meshcheck, REPO)}`")
    print(f"- {os.cpu_count()} logical CPUs ({cpu}); "
          f"{'1 run, no warm-up (--quick)' if args.quick else f'median of {runs} runs after one warm-up'}; weld tolerance {args.tol:g} m")
    print(f"- 1M-triangle mesh: {sphere_note}\n")
    print("| file | triangles | trimesh checks (s) | trimesh with load (s) | meshcheck GEO,TOP process (s) "
          "| speedup (with load) | speedup (checks only) | meshcheck peak RSS (MB) | meshcheck GEO only (s) "
          "| speedup, GEO only (with load) "
          "| meshcheck whole run, SPEC-001 skipped (s) | trimesh peak RSS (MB) | same results |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    for row in rows:
        print(f"| {row['name']} | {row['tris']:,} | {row['tm_checks']:.3f} | {row['tm_load']:.3f} | {row['mc']:.3f} "
              f"| {row['tm_load'] / row['mc']:.1f}x | {row['tm_checks'] / row['mc']:.1f}x | {row['mc_rss']:.1f} "
              f"| {row['geo_s']:.3f} | {row['tm_load'] / row['geo_s']:.1f}x | {row['all_s']:.3f} | {row['tm_rss']:.1f} | {'yes' if row['agree'] else 'NO'} |")
    print("\nspeedup = trimesh seconds / meshcheck GEO,TOP process seconds (the process also runs TOP-001..004, "
          "which trimesh does not, and starts up, which the trimesh figures exclude). trimesh peak RSS: its child "
          "process, over the warm-up and all runs, Python and imports included.")
    print("\ntrimesh stages (s): weld | edges | boundary | non-manifold | shells | winding | degenerate\n")
    print("| file | load | weld | edges | boundary | non-manifold | shells | winding | degenerate |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for row in rows:
        s = row["tm_stages"]
        print(f"| {row['name']} | " + " | ".join(f"{s[k]:.3f}" for k in
              ("load", "weld", "edges", "boundary", "non_manifold", "shells", "winding", "degenerate")) + " |")
    print("\nTargets:\n")
    big = rows[0] if rows else None
    for row in rows:
        if not row["agree"]:
            ok = False
    if big:
        speed = big["tm_load"] / big["geo_s"]
        checks = [
            (f"at least {TARGET_SPEEDUP:g}x faster than trimesh computing the same quantities (1M triangles: "
             "trimesh with load against the whole meshcheck process with GEO only)",
             speed >= TARGET_SPEEDUP, f"{speed:.1f}x"),
            (f"at least {TARGET_SPEEDUP:g}x faster than trimesh on every file (same comparison)",
             all(r["tm_load"] / r["geo_s"] >= TARGET_SPEEDUP for r in rows),
             ", ".join(f"{r['tm_load'] / r['geo_s']:.1f}x" for r in rows)),
            (f"whole checks_only run without SPEC-001 on 1M triangles under {TARGET_1M_SECONDS:g} s "
             "(`--skip SPEC-001`, every other check)", big["all_s"] < TARGET_1M_SECONDS, f"{big['all_s']:.3f} s"),
            (f"peak memory under {TARGET_RSS_MB:g} MB (meshcheck, every file, whole run)",
             max(max(r["mc_rss"], r["all_rss"]) for r in rows) < TARGET_RSS_MB,
             f"max {max(max(r['mc_rss'], r['all_rss']) for r in rows):.1f} MB (1M: GEO,TOP {big['mc_rss']:.1f}, whole run {big['all_rss']:.1f})"),
        ]
        for text, passed, value in checks:
            print(f"- {'PASS' if passed else 'FAIL'}: {text}: {value}")
            ok = ok and (passed or not args.strict)
        print(f"- (not a target) with TOP-001..004 as well, which trimesh does not compute, 1M triangles: "
              f"{big['tm_load'] / big['mc']:.1f}x")
    print(f"- {'PASS' if all(r['agree'] for r in rows) else 'FAIL'}: both sides measured the same triangles, "
          "boundary and non-manifold edges, shells and degenerate triangles")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
