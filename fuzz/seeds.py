#!/usr/bin/env python3
"""Writes the fuzz targets' seed inputs into fuzz/corpus/<target>/.

Seeds are byte-for-byte copies of small files from ../shared/assets (their
sources and licences are in ../shared/assets/MANIFEST.json; fuzz/corpus/README.md
sums them up), plus a few inputs written here (hostile zip bundles, KTX2
header variants, multipart request bodies), which are ours (MIT OR Apache-2.0,
like meshcheck). Existing corpus files are kept; run it from anywhere:

    python3 fuzz/seeds.py [--assets ../shared/assets]

After a fuzzing run, `cargo fuzz cmin <target>` minimises each folder again.
"""

import argparse
import base64
import io
import json
import os
import stat
import struct
import zipfile
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
MAX_SEED = 40_000  # bytes: larger files slow every run and are left out


def models(assets: Path, names):
    for n in names:
        p = assets / "models" / n
        yield p.name, p.read_bytes()


def suite(assets: Path, suffixes, folders=None):
    root = assets / "validator-suite" / "test"
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in suffixes and not p.name.endswith(".report.json"):
            rel = p.relative_to(root)
            if folders and not any(str(rel).startswith(f) for f in folders):
                continue
            yield "vs-" + str(rel).replace("/", "-"), p.read_bytes()


GLB_MODELS = [
    "khronos-sample-models/Box.glb",
    "khronos-sample-models/BoxInterleaved.glb",
    "khronos-sample-models/AnimatedMorphCube.glb",
    "khronos-sample-models/SimpleInstancing.glb",
    "khronos-sample-models/RiggedSimple.glb",
    "khronos-sample-models/BoxAnimated.glb",
    "khronos-sample-models/BoxTexturedNonPowerOfTwo.glb",
    "khronos-asset-auditor/blender-default-cube-draco.glb",
    "khronos-asset-auditor/blender-default-cube-no-materials.glb",
    "khronos-asset-auditor/blender-default-cube-passing.glb",
    "khronos-asset-auditor/blender-default-cube-multi-material.glb",
    "khronos-asset-auditor/blender-default-cube-non-manifold.glb",
    "khronos-asset-auditor/blender-default-cube-failing.glb",
    "other/BoxMeshopt.glb",
    "other/IrradianceVolumeExample.glb",
]
GLTF_MODELS = [
    "khronos-sample-models/TriangleWithoutIndices.gltf",
    "khronos-sample-models/SimpleMeshes.gltf",
    "khronos-sample-models/SimpleSparseAccessor.gltf",
    "khronos-sample-models/AnimatedTriangle.gltf",
    "khronos-sample-models/SimpleSkin.gltf",
    "khronos-sample-models/SimpleMorph.gltf",
    "khronos-sample-models/TextureCoordinateTest.gltf",
    "khronos-sample-models/unpacked/Triangle/Triangle.gltf",
    "khronos-sample-models/unpacked/Box/Box.gltf",
    "other/TextureVariants-Embedded-KTX.gltf",
    "other/SubMesh-Draco.gltf",
]
ZIP_MODELS = [
    "khronos-sample-models/Triangle.zip",
    "khronos-sample-models/Box.zip",
    "khronos-sample-models/TextureTransformTest.zip",
    "khronos-sample-models/BoxTextured.zip",
    "khronos-sample-models/MorphPrimitivesTest.zip",
    "khronos-asset-generator/Mesh_PrimitiveMode_00.zip",
    "khronos-asset-generator/Mesh_PrimitiveMode_11.zip",
    "khronos-asset-generator/Mesh_PrimitiveMode_12.zip",
    "khronos-asset-generator/Mesh_PrimitiveRestart_09.zip",
    "other/BoxDraco.zip",
    "other/12_orm_two_uvmaps.zip",
    "other/meshopt-fallback.zip",
]
ACCESSOR_MODELS = [
    "khronos-asset-auditor/blender-default-cube-draco.glb",
    "other/BoxDraco.zip",
    "other/SubMesh-Draco.gltf",
    "other/BoxMeshopt.glb",
    "other/meshopt-fallback.zip",
    "khronos-sample-models/SimpleSparseAccessor.gltf",
    "khronos-sample-models/SimpleInstancing.glb",
    "khronos-sample-models/AnimatedMorphCube.glb",
    "khronos-sample-models/SimpleMorph.gltf",
    "khronos-sample-models/SimpleSkin.gltf",
    "khronos-sample-models/BoxInterleaved.glb",
    "khronos-sample-models/TriangleWithoutIndices.gltf",
    "khronos-asset-generator/Mesh_PrimitiveRestart_09.zip",
]


def ktx2_images(assets: Path):
    """The KTX2 image embedded in TextureVariants-Embedded-KTX.gltf, as is."""
    doc = json.loads((assets / "models/other/TextureVariants-Embedded-KTX.gltf").read_bytes())
    buf = base64.b64decode(doc["buffers"][0]["uri"].split(",", 1)[1])
    for i, img in enumerate(doc.get("images", [])):
        if img.get("mimeType") == "image/ktx2" and "bufferView" in img:
            v = doc["bufferViews"][img["bufferView"]]
            off = v.get("byteOffset", 0)
            yield f"TextureVariants-Embedded-KTX-image{i}.ktx2", buf[off : off + v["byteLength"]]


KTX2_ID = bytes([0xAB, 0x4B, 0x54, 0x58, 0x20, 0x32, 0x30, 0xBB, 0x0D, 0x0A, 0x1A, 0x0A])


def ktx2(vk_format, w, h, levels, scheme=0, model=1, samples=4, layers=0, faces=1, depth=0, sgd=b""):
    """A KTX2 file: header, level index, a basic DFD, optional SGD, level data."""
    dfd_block = struct.pack("<IHHBBBB4B8B", 0, 2, 24 + 16 * samples, model, 1, 2, 0, 3, 3, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0)
    for s in range(samples):
        dfd_block += struct.pack("<HBB4BII", s * 8, 7, s, 0, 0, 0, 0, 0, 255)
    dfd = struct.pack("<I", 4 + len(dfd_block)) + dfd_block
    n = max(levels, 1)
    index_at = 80
    dfd_at = index_at + 24 * n
    sgd_at = dfd_at + len(dfd)
    sgd_at += (-sgd_at) % 8
    data_at = sgd_at + len(sgd)
    data_at += (-data_at) % 16
    sizes = [max(1, (w >> i)) * max(1, (h >> i)) * 4 for i in range(n)]
    index = b""
    at = data_at
    blobs = b""
    for size in sizes:
        index += struct.pack("<QQQ", at, size, size)
        blobs += bytes(size)
        at += size
    head = KTX2_ID + struct.pack("<9I", vk_format, 1, w, h, depth, layers, faces, levels, scheme)
    head += struct.pack("<IIIIQQ", dfd_at, len(dfd), 0, 0, sgd_at if sgd else 0, len(sgd))
    out = head + index + dfd
    out += bytes(sgd_at - len(out)) if sgd else b""
    out += sgd
    out += bytes(data_at - len(out))
    return out + blobs


def ktx2_variants():
    yield "rgba8-8x8-4levels.ktx2", ktx2(37, 8, 8, 4)
    yield "rgba8-16x4-1level.ktx2", ktx2(37, 16, 4, 1)
    yield "uastc-8x8.ktx2", ktx2(0, 8, 8, 1, model=166, samples=1)
    yield "etc1s-basislz-8x8.ktx2", ktx2(0, 8, 8, 2, scheme=1, model=163, samples=2, sgd=bytes(40))
    yield "zlib-cube-array.ktx2", ktx2(37, 4, 4, 1, scheme=3, faces=6, layers=2)
    yield "levels0-3d.ktx2", ktx2(37, 4, 4, 0, depth=4)


def zip_bytes(entries, method=zipfile.ZIP_DEFLATED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data, *attr in entries:
            info = zipfile.ZipInfo(name)
            info.compress_type = method
            if attr:
                info.external_attr = attr[0] << 16
            z.writestr(info, data)
    return buf.getvalue()


def hostile_zips(assets: Path):
    tri = assets / "models/khronos-sample-models/unpacked/Triangle"
    gltf, bin_ = (tri / "Triangle.gltf").read_bytes(), (tri / "simpleTriangle.bin").read_bytes()
    box = (assets / "models/khronos-sample-models/Box.glb").read_bytes()
    yield "stored-triangle.zip", zip_bytes([("Triangle.gltf", gltf), ("simpleTriangle.bin", bin_)], zipfile.ZIP_STORED)
    yield "nested-main.zip", zip_bytes(
        [("a/b/Triangle.gltf", gltf), ("a/b/simpleTriangle.bin", bin_), ("z.glb", box), ("__MACOSX/._a.gltf", b"x")]
    )
    yield "glb-main.zip", zip_bytes([("Box.glb", box), (".hidden.gltf", b"{}")])
    yield "traversal.zip", zip_bytes([("../evil.gltf", gltf)])
    yield "absolute.zip", zip_bytes([("/abs.gltf", gltf)])
    yield "symlink.zip", zip_bytes([("Triangle.gltf", gltf), ("simpleTriangle.bin", b"/etc/passwd", stat.S_IFLNK | 0o777)])
    yield "no-main.zip", zip_bytes([("simpleTriangle.bin", bin_), ("dir/", b"")])
    escaping = gltf.replace(b'"simpleTriangle.bin"', b'"sub/%2e%2e/../simpleTriangle.bin"')
    yield "escaping-uri.zip", zip_bytes([("m/Triangle.gltf", escaping), ("simpleTriangle.bin", bin_)])


def multipart(parts):
    out = b""
    for name, value, filename in parts:
        disp = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        ctype = b"Content-Type: application/octet-stream\r\n" if filename else b""
        out += b"--fuzzboundary\r\nContent-Disposition: " + disp.encode() + b"\r\n" + ctype + b"\r\n" + value + b"\r\n"
    return out + b"--fuzzboundary--\r\n"


def multipart_bodies(assets: Path):
    glb = (assets / "validator-suite/test/base/data/glb/valid.glb").read_bytes()
    tri = (assets / "models/khronos-sample-models/TriangleWithoutIndices.gltf").read_bytes()
    yield "file-only.txt", multipart([("file", glb, "valid.glb")])
    yield "file-and-options.txt", multipart(
        [
            ("file", tri, "TriangleWithoutIndices.gltf"),
            ("profile", b"mobile", None),
            ("mode", b"full", None),
            ("screenshots", b"true", None),
            ("overrides", b'{"max_tris": 1000, "max_verts": 2e3}', None),
            ("weld_tolerance", b"0.0001", None),
            ("webhook_url", b"https://127.0.0.1:9/hook", None),
        ]
    )
    yield "url.txt", multipart([("url", b"https://example.com/model.glb", None), ("mode", b"checks_only", None)])
    yield "blob.txt", multipart([("blob_id", b"blob_0123456789abcdefghijklmn", None)])
    yield "bad-fields.txt", multipart(
        [("file", b"glTF", "../../x.glb"), ("overrides", b"[1,2]", None), ("screenshots", b"maybe", None)]
    )
    yield "repeated.txt", multipart([("file", b"{}", "a.gltf"), ("file", b"{}", "b.gltf"), ("profile", b"web", None)])
    yield "unquoted-name.txt", (
        b"--fuzzboundary\r\nContent-Disposition: form-data; name=file%5F; filename*=UTF-8''x%20y.glb\r\n\r\n"
        + glb
        + b"\r\n--fuzzboundary--\r\n"
    )
    yield "truncated.txt", multipart([("file", glb, "valid.glb")])[:-20]


def write(target: str, seeds):
    folder = FUZZ / "corpus" / target
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for name, data in seeds:
        if len(data) > MAX_SEED:
            continue
        (folder / ("seed-" + name)).write_bytes(data)
        n += 1
    print(f"{target}: {n} seeds")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--assets", type=Path, default=FUZZ.parent.parent / "shared" / "assets")
    a = ap.parse_args().assets
    write("glb", [*models(a, GLB_MODELS), *suite(a, {".glb"})])
    write("gltf_json", [*models(a, GLTF_MODELS), *suite(a, {".gltf"})])
    write("zip_bundle", [*models(a, ZIP_MODELS), *hostile_zips(a)])
    write(
        "accessors",
        [
            *models(a, ACCESSOR_MODELS),
            *suite(
                a,
                {".gltf", ".glb"},
                [
                    "base/data/accessor",
                    "base/data/buffer_view",
                    "base/data/mesh_data",
                    "ext/KHR_mesh_quantization",
                    "base/data/skin_data",
                ],
            ),
        ],
    )
    write("ktx2", [*ktx2_images(a), *ktx2_variants(), *suite(a, {".png"})])
    write("multipart", multipart_bodies(a))


if __name__ == "__main__":
    main()
