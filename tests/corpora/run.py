#!/usr/bin/env python3
"""Run meshcheck over the fetched corpora and classify every file.

    run.py --meshcheck target/debug/meshcheck [--only NAME]... [--registry | --git]
           [--jobs 2] [--timeout 120] [--out target/corpora/results.json]

For every entry (.glb, .gltf, .vrm, .zip) of every fetched source under the
cache (target/corpora/<name>/, see fetch.py), runs `meshcheck validate
--format json FILE` in place (a .gltf finds its resources beside it) with a
wall-clock limit, measures the process's peak RSS (wait4 rusage: meshcheck
and the children it reaped, the Node validator among them) and classifies
the outcome:

  report        exit 0/1 and a JSON report card on stdout
  refused       exit 3 and an error envelope {"error": {"code", "message"}}
  crash         any other exit, a signal, unparseable output, or "panicked"
                on stderr
  hang          killed at --timeout
  environment   exit 4 (validator/renderer unavailable): the run is broken

Every refused file is also given to the bare Khronos glTF-Validator (the npm
package meshcheck uses, node_modules/gltf-validator): a refusal of a file
with 0 validator errors is the failure class "valid file refused".

Sources with `compare_reports` (the glTF-Validator test folder) have the
validator's expected *.report.json beside each input: the report's SPEC-001
(counts per severity, and code + pointer/offset + severity of every error
and warning) is compared with it. A difference where meshcheck also differs
from the bare validator run here is a "SPEC-001 mismatch" (meshcheck did not
carry the validator's messages verbatim); a difference that the bare
validator shares is listed as "expected-report drift" and does not fail
unless --strict-spec is given.

Writes a JSON results file and prints a summary. Exits 1 when there is any
crash, hang, environment error, valid file refused or SPEC-001 mismatch.
Python 3 standard library only (plus node for the bare validator).
"""

import argparse
import collections
import concurrent.futures
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import fetch  # noqa: E402

ENTRY_EXTS = fetch.ENTRY_EXTS
FAILING = ("crash", "hang", "environment")


# ---------------------------------------------------------------- meshcheck


def run_meshcheck(meshcheck, path, timeout, extra_args=()):
    """Runs one validation; returns a dict with exit, signal, stdout, stderr, wall_s, peak_rss_kb, timed_out."""
    t0 = time.monotonic()
    p = subprocess.Popen([meshcheck, "validate", "--format", "json", *extra_args, path],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=ROOT, start_new_session=True)
    out, err = [], []
    readers = [threading.Thread(target=lambda s=s, b=b: b.append(s.read()), daemon=True)
               for s, b in ((p.stdout, out), (p.stderr, err))]
    for r in readers:
        r.start()
    state = {"done": False, "timed_out": False}
    lock = threading.Lock()

    def kill():
        with lock:
            if not state["done"]:
                state["timed_out"] = True
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    timer = threading.Timer(timeout, kill)
    timer.start()
    _, status, ru = os.wait4(p.pid, 0)
    with lock:
        state["done"] = True
    timer.cancel()
    # Whatever the process group left behind (a validator child) goes too;
    # the group is this run's own session.
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    p.returncode = os.waitstatus_to_exitcode(status)
    for r in readers:
        r.join(30)
    wall = time.monotonic() - t0
    rc = p.returncode
    return {
        "exit": rc if rc >= 0 else None,
        "signal": -rc if rc < 0 else None,
        "stdout": (out[0] if out else b"").decode("utf-8", "replace"),
        "stderr": (err[0] if err else b"").decode("utf-8", "replace"),
        "wall_s": round(wall, 3),
        "peak_rss_kb": ru.ru_maxrss,
        "timed_out": state["timed_out"],
    }


def first_line(s, n=300):
    s = s.strip()
    return (s.splitlines()[0] if s else "")[:n]


def classify(r):
    """Returns (class, detail dict)."""
    d = {}
    if r["timed_out"]:
        return "hang", d
    if "panicked" in r["stderr"]:
        i = r["stderr"].find("panicked")
        d["message"] = r["stderr"][max(0, i - 100): i + 400].strip()
        return "crash", d
    if r["signal"] is not None:
        d["message"] = f"killed by signal {r['signal']}; stderr: {first_line(r['stderr'])}"
        return "crash", d
    rc = r["exit"]
    try:
        doc = json.loads(r["stdout"]) if r["stdout"].strip() else None
    except ValueError:
        doc = None
    if rc in (0, 1):
        if isinstance(doc, dict) and isinstance(doc.get("checks"), list):
            spec = next((c for c in doc["checks"] if c.get("id") == "SPEC-001"), None)
            d["verdict"] = doc.get("verdict")
            if spec is not None:
                m = spec.get("measured") or {}
                d["spec"] = {k: m.get(k) for k in ("errors", "warnings", "infos", "hints", "truncated")}
                d["spec_status"] = spec.get("status")
                d["_spec_measured"] = m
            if doc.get("notes"):
                d["notes"] = len(doc["notes"])
            return "report", d
        d["message"] = f"exit {rc} without a JSON report: {first_line(r['stdout'] or r['stderr'])}"
        return "crash", d
    if rc == 3:
        env = None
        for text in (r["stdout"], r["stderr"]):
            try:
                env = json.loads(text)
                break
            except ValueError:
                continue
        if isinstance(env, dict) and isinstance(env.get("error"), dict) and env["error"].get("code"):
            d["code"] = env["error"]["code"]
            d["message"] = env["error"].get("message", "")
            det = env["error"].get("detail")
            if isinstance(det, dict):
                d["detail"] = {k: det[k] for k in list(det)[:6]}
            return "refused", d
        d["message"] = f"exit 3 without an error envelope: {first_line(r['stdout'] or r['stderr'])}"
        return "crash", d
    if rc == 4:
        d["message"] = first_line(r["stdout"] or r["stderr"], 600)
        return "environment", d
    d["message"] = f"exit {rc}: {first_line(r['stderr'] or r['stdout'])}"
    return "crash", d


# ---------------------------------------------------------------- bare validator

VALIDATOR_JS = r"""
'use strict';
const log = (...a) => process.stderr.write(a.map(String).join(' ') + '\n');
console.log = log; console.info = log; console.warn = log; console.debug = log;
const fs = require('fs'), path = require('path'), readline = require('readline');
const v = require(process.env.CORPUS_VALIDATOR_PKG);
const fresh = (b) => { const o = new Uint8Array(b.length); o.set(b); return o; };
let q = Promise.resolve();
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  q = q.then(async () => {
    const { id, file } = JSON.parse(line);
    let out;
    try {
      const opts = {
        uri: path.basename(file), maxIssues: 0, writeTimestamp: false,
        externalResourceFunction: (uri) => new Promise((res, rej) => {
          try { res(fresh(fs.readFileSync(path.resolve(path.dirname(file), decodeURIComponent(uri))))); }
          catch (e) { rej(`Could not load '${uri}'`); }
        }),
      };
      const low = file.toLowerCase();
      if (low.endsWith('.glb') || low.endsWith('.vrm')) opts.format = 'glb';
      else if (low.endsWith('.gltf')) opts.format = 'gltf';
      const rep = await v.validateBytes(fresh(fs.readFileSync(file)), opts);
      const is = rep.issues || {};
      out = { id, version: rep.validatorVersion, errors: is.numErrors || 0, warnings: is.numWarnings || 0,
              infos: is.numInfos || 0, hints: is.numHints || 0, truncated: !!is.truncated,
              messages: (is.messages || []).map((m) => ({ code: m.code, severity: m.severity, pointer: m.pointer, offset: m.offset })) };
    } catch (e) {
      out = { id, exception: String(e && e.message ? e.message : e) };
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  });
});
"""


class BareValidator:
    """One long-lived node process running the npm gltf-validator on files."""

    def __init__(self, pkg, timeout):
        self.pkg, self.timeout = pkg, timeout
        self.lock = threading.Lock()
        self.proc = None
        self.n = 0

    def _start(self):
        env = dict(os.environ, CORPUS_VALIDATOR_PKG=self.pkg)
        self.proc = subprocess.Popen(["node", "-e", VALIDATOR_JS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, text=True, start_new_session=True)
        self.lines = queue.Queue()
        proc = self.proc

        def pump():
            for line in proc.stdout:
                self.lines.put(line)
            self.lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def _stop(self):
        if self.proc:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None

    def validate(self, file, zip_main=None):
        """The validator's result for a file ({errors, warnings, ..., messages} or {exception})."""
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            self.n += 1
            ident = self.n
            self.proc.stdin.write(json.dumps({"id": ident, "file": os.path.abspath(file)}) + "\n")
            self.proc.stdin.flush()
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
                except queue.Empty:
                    self._stop()
                    return {"exception": f"the bare validator took more than {self.timeout} s"}
                if line is None:
                    self._stop()
                    return {"exception": "node exited"}
                res = json.loads(line)
                if res.get("id") == ident:
                    res.pop("id")
                    return res

    def close(self):
        self._stop()


def bare_validate(bv, path, tmp_root):
    """Validates a file with the bare validator; a .zip is unpacked first and its .gltf/.glb validated."""
    if not path.lower().endswith(".zip"):
        return bv.validate(path)
    import tempfile
    import zipfile
    try:
        with zipfile.ZipFile(path) as z:
            names = [n for n in z.namelist() if n.lower().endswith((".gltf", ".glb"))]
            if not names:
                return {"exception": "zip without a .gltf or .glb"}
            d = tempfile.mkdtemp(dir=tmp_root)
            for n in z.namelist():
                if n.startswith("/") or ".." in n.split("/"):
                    continue
                z.extract(n, d)
            return bv.validate(os.path.join(d, sorted(names, key=lambda n: (n.count("/"), n))[0]))
    except (zipfile.BadZipFile, OSError) as e:
        return {"exception": f"zip unreadable: {e}"}


# ---------------------------------------------------------------- SPEC-001 comparison


def msg_key(code, severity, pointer, offset):
    where = pointer if pointer is not None else (f"@{offset}" if offset is not None else "")
    return (code, severity, where)


SEV = {0: "error", 1: "warning", 2: "info", 3: "hint"}


def expected_view(rep):
    """A report in the validator's own JSON form -> comparable view."""
    is_ = rep.get("issues", rep)
    msgs = is_.get("messages", [])
    by_code = collections.Counter(m["code"] for m in msgs)
    listed = collections.Counter(
        msg_key(m["code"], SEV.get(m.get("severity")), m.get("pointer"), m.get("offset"))
        for m in msgs if m.get("severity") in (0, 1))
    counts = {k: is_.get("num" + k.capitalize(), is_.get(k, 0)) or 0 for k in ("errors", "warnings", "infos", "hints")}
    return {"counts": counts, "listed": listed, "by_code": dict(by_code), "truncated": bool(is_.get("truncated"))}


def measured_view(m):
    listed = collections.Counter(
        msg_key(x.get("code"), x.get("severity"), x.get("pointer"), x.get("offset")) for x in m.get("messages", []))
    counts = {k: m.get(k, 0) or 0 for k in ("errors", "warnings", "infos", "hints")}
    return {"counts": counts, "listed": listed, "by_code": dict(m.get("by_code") or {}),
            "truncated": bool(m.get("truncated"))}


def bare_view(b):
    return expected_view({"issues": {"numErrors": b["errors"], "numWarnings": b["warnings"], "numInfos": b["infos"],
                                     "numHints": b["hints"], "messages": b["messages"], "truncated": b["truncated"]}})


def diff_views(a, b):
    """Differences of view a (meshcheck) from view b (reference); [] when equal."""
    out = []
    for k in ("errors", "warnings", "infos", "hints"):
        if a["counts"][k] != b["counts"][k]:
            out.append(f"{k}: {a['counts'][k]} vs {b['counts'][k]}")
    if not (a["truncated"] or b["truncated"]):
        extra = a["listed"] - b["listed"]
        missing = b["listed"] - a["listed"]
        fmt = lambda c: ", ".join(f"{code} {sev} {where}" + (f" x{n}" if n > 1 else "")
                                  for (code, sev, where), n in sorted(c.items(), key=str))
        if missing:
            out.append("missing: " + fmt(missing))
        if extra:
            out.append("extra: " + fmt(extra))
    if a["by_code"] != b["by_code"]:
        codes = sorted(set(a["by_code"]) | set(b["by_code"]))
        d = [f"{c} {a['by_code'].get(c, 0)} vs {b['by_code'].get(c, 0)}" for c in codes
             if a["by_code"].get(c, 0) != b["by_code"].get(c, 0)]
        out.append("by_code: " + "; ".join(d))
    return out


# ---------------------------------------------------------------- driver


def find_entries(cache, names):
    out = []
    for name in names:
        base = os.path.join(cache, name)
        marker = os.path.join(base, fetch.MARKER)
        try:
            with open(marker) as f:
                entries = json.load(f)["entries"]
        except (OSError, ValueError, KeyError):
            continue
        for rel in entries:
            p = os.path.join(base, *rel.split("/"))
            if os.path.exists(p):
                out.append((name, rel, p))
    return out


def message_class(msg):
    """A message with its particulars (numbers, quoted parts, positions) blanked, to group refusals by cause."""
    m = re.sub(r"`[^`]*`", "`…`", msg.splitlines()[0] if msg else "")
    m = re.sub(r"'[^']*'", "'…'", m)
    m = re.sub(r"(asset\.version is )\S*", r"\1…", m)
    m = re.sub(r" at line \d+ column \d+", "", m)
    m = re.sub(r"\d+", "N", m)
    return m[:200]


def human_kb(kb):
    return f"{kb / 1024:.0f} MiB"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meshcheck", default=os.path.join(ROOT, "target", "debug", "meshcheck"))
    ap.add_argument("--only", action="append", help="source name (repeatable)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--registry", action="store_true", help="only the registry sources (what CI can fetch)")
    g.add_argument("--git", action="store_true", help="only the git sources")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--cache", default=fetch.DEFAULT_CACHE)
    ap.add_argument("--out", default=None, help="results JSON (default CACHE/results.json)")
    ap.add_argument("--validator-pkg", default=os.path.join(ROOT, "node_modules", "gltf-validator"))
    ap.add_argument("--strict-spec", action="store_true",
                    help="expected-report drift that the bare validator shares fails too")
    ap.add_argument("--require", action="store_true", help="fail when a selected source is not fetched")
    ap.add_argument("--quiet", action="store_true", help="no per-file progress")
    ap.add_argument("--markdown", default=None, help="also write the summary table as Markdown to this file")
    a = ap.parse_args(argv)

    cfg = fetch.load_sources()
    srcs = {s["name"]: s for s in cfg["sources"]}
    if a.only:
        unknown = sorted(set(a.only) - set(srcs))
        if unknown:
            ap.error("unknown source: " + ", ".join(unknown))
    names = [n for n, s in srcs.items()
             if (not a.only or n in a.only) and not (a.registry and s["kind"] == "git")
             and not (a.git and s["kind"] != "git")]
    missing = [n for n in names if not fetch.cached(srcs[n], a.cache)]
    for n in missing:
        print(f"{n}: not fetched (fetch.py {'git' if srcs[n]['kind'] == 'git' else 'registry'}); skipped",
              file=sys.stderr)
    if missing and a.require:
        return 2
    names = [n for n in names if n not in missing]
    if not os.access(a.meshcheck, os.X_OK):
        ap.error(f"{a.meshcheck} is not an executable (cargo build)")
    entries = find_entries(a.cache, names)
    entries.sort(key=lambda e: -os.path.getsize(e[2]))  # largest first: a shorter tail
    out_path = a.out or os.path.join(a.cache, "results.json")
    tmp_root = os.path.join(a.cache, "_tmp")
    os.makedirs(tmp_root, exist_ok=True)

    bv = BareValidator(a.validator_pkg, a.timeout)
    t0 = time.monotonic()
    results = []
    done = [0]
    plock = threading.Lock()

    def work(e):
        name, rel, path = e
        r = run_meshcheck(a.meshcheck, path, a.timeout)
        cls, d = classify(r)
        rec = {"corpus": name, "path": rel, "file": os.path.relpath(path, ROOT), "bytes": os.path.getsize(path),
               "class": cls, "exit": r["exit"], "signal": r["signal"], "wall_s": r["wall_s"],
               "peak_rss_kb": r["peak_rss_kb"]}
        spec_m = d.pop("_spec_measured", None)
        rec.update(d)
        if cls in ("refused",) + FAILING and cls != "environment":
            b = bare_validate(bv, path, tmp_root)
            rec["validator"] = ({k: b[k] for k in ("errors", "warnings", "infos", "hints")}
                                if "exception" not in b else {"exception": b["exception"]})
            if cls == "refused" and b.get("errors") == 0:
                rec["valid_file_refused"] = True
        if srcs[name].get("compare_reports") and not rel.endswith(".zip"):
            rep_path = path + ".report.json"
            if os.path.exists(rep_path):
                with open(rep_path, encoding="utf-8") as f:
                    exp = expected_view(json.load(f))
                rec["expected_errors"] = exp["counts"]["errors"]
                if cls == "report" and spec_m is not None:
                    diffs = diff_views(measured_view(spec_m), exp)
                    if diffs:
                        b = bv.validate(path)
                        if "exception" in b:
                            rec["spec_mismatch"] = diffs
                            rec["bare_validator"] = b["exception"]
                        else:
                            vs_bare = diff_views(measured_view(spec_m), bare_view(b))
                            if vs_bare:
                                rec["spec_mismatch"] = vs_bare
                                rec["spec_mismatch_vs_expected"] = diffs
                            else:
                                rec["expected_drift"] = diffs
                elif cls == "report" and spec_m is None:
                    rec["spec_mismatch"] = ["no SPEC-001 check in the report"]
        with plock:
            done[0] += 1
            if not a.quiet and (cls != "report" or done[0] % 50 == 0 or rec.get("spec_mismatch")):
                tag = cls if cls != "refused" else f"refused {rec.get('code')}"
                print(f"[{done[0]}/{len(entries)}] {tag}: {name}/{rel} ({r['wall_s']:.1f} s)", file=sys.stderr,
                      flush=True)
        return rec

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
            for rec in ex.map(work, entries):
                results.append(rec)
    finally:
        bv.close()
    elapsed = time.monotonic() - t0
    results.sort(key=lambda r: (r["corpus"], r["path"]))

    # ---- summary
    per = collections.OrderedDict()
    for n in names:
        per[n] = {"files": 0, "reports": 0, "refused": 0, "refused_by_code": collections.Counter(),
                  "valid_file_refused": 0, "crashes": 0, "hangs": 0, "environment": 0, "spec_mismatches": 0,
                  "expected_drift": 0, "max_peak_rss_kb": 0, "max_wall_s": 0.0, "total_wall_s": 0.0,
                  "spec_errors_files": 0, "reports_with_notes": 0}
    for r in results:
        s = per[r["corpus"]]
        s["files"] += 1
        s["max_peak_rss_kb"] = max(s["max_peak_rss_kb"], r["peak_rss_kb"])
        s["max_wall_s"] = max(s["max_wall_s"], r["wall_s"])
        s["total_wall_s"] += r["wall_s"]
        c = r["class"]
        if c == "report":
            s["reports"] += 1
            if (r.get("spec") or {}).get("errors"):
                s["spec_errors_files"] += 1
            if r.get("notes"):
                s["reports_with_notes"] += 1
        elif c == "refused":
            s["refused"] += 1
            s["refused_by_code"][r.get("code")] += 1
        elif c == "crash":
            s["crashes"] += 1
        elif c == "hang":
            s["hangs"] += 1
        elif c == "environment":
            s["environment"] += 1
        if r.get("valid_file_refused"):
            s["valid_file_refused"] += 1
        if r.get("spec_mismatch"):
            s["spec_mismatches"] += 1
        if r.get("expected_drift"):
            s["expected_drift"] += 1
    tot = collections.Counter()
    for s in per.values():
        for k, v in s.items():
            if k == "refused_by_code":
                continue
            if k.startswith("max_"):
                tot[k] = max(tot[k], v)
            else:
                tot[k] += v
    failing = tot["crashes"] + tot["hangs"] + tot["environment"] + tot["valid_file_refused"] + tot["spec_mismatches"]
    if a.strict_spec:
        failing += tot["expected_drift"]

    doc = {
        "meshcheck": os.path.relpath(os.path.abspath(a.meshcheck), ROOT),
        "meshcheck_mtime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.path.getmtime(a.meshcheck))),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "jobs": a.jobs, "timeout_s": a.timeout, "elapsed_s": round(elapsed, 1),
        "corpora": {n: dict(s, refused_by_code=dict(s["refused_by_code"]), total_wall_s=round(s["total_wall_s"], 1))
                    for n, s in per.items()},
        "totals": dict(tot),
        "failing": failing,
        "files": results,
    }
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)

    print(f"\nmeshcheck corpus run: {len(results)} files in {len(per)} corpora, {elapsed:.0f} s, "
          f"{a.jobs} jobs, timeout {a.timeout:.0f} s")
    cols = ["corpus", "files", "reports", "w/ notes", "refused", "0-err refused", "crash", "hang", "SPEC-001 ≠",
             "drift", "peak RSS", "max s", "refused by code"]
    allcodes = collections.Counter()
    for x in per.values():
        allcodes.update(x["refused_by_code"])

    def row(n, x, codes):
        return [n, x["files"], x["reports"], x["reports_with_notes"], x["refused"], x["valid_file_refused"],
                x["crashes"] + x["environment"], x["hangs"], x["spec_mismatches"], x["expected_drift"],
                human_kb(x["max_peak_rss_kb"]), f"{x['max_wall_s']:.1f}",
                ", ".join(f"{k} {v}" for k, v in sorted(codes.items()))]

    rows = [row(n, x, x["refused_by_code"]) for n, x in per.items()]
    total = row("total", tot, allcodes)
    widths = [max(len(str(r[i])) for r in rows + [total, cols]) for i in range(len(cols) - 1)]
    fmt = lambda r: " ".join(str(v).ljust(widths[i]) if i == 0 else str(v).rjust(widths[i])
                             for i, v in enumerate(r[:-1])) + "  " + r[-1]
    print(fmt(cols))
    print("-" * (sum(widths) + len(widths) + 16))
    for r in rows:
        print(fmt(r))
    print("-" * (sum(widths) + len(widths) + 16))
    print(fmt(total))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
            for r in rows + [["**total**"] + total[1:]]:
                f.write("| " + " | ".join(str(v) for v in r) + " |\n")

    non = [r for r in results if r["class"] != "report"]
    if non:
        print(f"\nNot a report ({len(non)}):")
        for r in non:
            v = r.get("validator") or {}
            vtxt = f" [validator: {v['errors']} errors]" if "errors" in v else (
                f" [validator: {v['exception']}]" if v else "")
            flag = "  VALID FILE REFUSED" if r.get("valid_file_refused") else ""
            what = r.get("code") or r["class"].upper()
            print(f"  {r['class']:8} {what:20} {r['file']}: {(r.get('message') or '')[:240]}{vtxt}{flag}")
    if non:
        groups = collections.OrderedDict()
        for r in sorted(non, key=lambda r: (r["class"], r.get("code") or "", message_class(r.get("message") or ""))):
            groups.setdefault((r["class"], r.get("code") or "", message_class(r.get("message") or "")), []).append(r)
        print(f"\nNot a report, grouped by message ({len(groups)} groups):")
        for (cls, code, msg), rs in groups.items():
            print(f"  {len(rs):4}  {cls} {code}: {msg}\n        e.g. {rs[0]['file']}")
    mm = [r for r in results if r.get("spec_mismatch")]
    if mm:
        print(f"\nSPEC-001 mismatches ({len(mm)}): meshcheck differs from the bare validator")
        for r in mm:
            print(f"  {r['file']}: " + " | ".join(r["spec_mismatch"])[:400])
    dr = [r for r in results if r.get("expected_drift")]
    if dr:
        print(f"\nExpected-report drift ({len(dr)}): meshcheck == bare validator, both differ from *.report.json")
        for r in dr:
            print(f"  {r['file']}: " + " | ".join(r["expected_drift"])[:300])
    print(f"\nresults: {os.path.relpath(out_path, ROOT)}")
    print(("FAIL: " if failing else "OK: ") +
          f"{tot['crashes']} crashes, {tot['hangs']} hangs, {tot['environment']} environment errors, "
          f"{tot['valid_file_refused']} valid files refused, {tot['spec_mismatches']} SPEC-001 mismatches")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
