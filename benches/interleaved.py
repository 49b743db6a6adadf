#!/usr/bin/env python3
"""Whole-process timing of meshcheck builds side by side, interleaved.

Runs `BINARY validate FILE --no-config --format json [EXTRA...]` for every
binary in turn, RUNS rounds, each as a child process reaped with `os.wait4`:
wall time (millisecond resolution, where `/usr/bin/time` rounds to 10 ms),
user + system CPU, and peak resident memory (`ru_maxrss`). Prints, for each
binary, the median wall with its quartiles and minimum, the median CPU and
the range of peaks. Interleaving puts each build in the same moments of a
sitting, whose speed on a shared two-core guest moves by a third within an
hour (BENCHMARKS.md, "Twenty-seventh step").

    python3 benches/interleaved.py --runs 15 BASE,NEW FILE -- --skip SPEC-001

A binary just copied maps about a megabyte more of itself than one that
was not (twenty-fifth step): drop the page cache first when comparing peaks
(`sync; echo 3 > /proc/sys/vm/drop_caches`).
"""

import argparse
import os
import subprocess
import time


def quantile(sorted_values, q):
    return sorted_values[int(q * (len(sorted_values) - 1))]


def run(command):
    """Runs `command` as a child reaped with `os.wait4`, its output dropped:
    (wall seconds, user + system CPU seconds, peak resident MiB)."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binaries", help="comma-separated meshcheck binaries")
    ap.add_argument("file", help="the input to validate")
    ap.add_argument("extra", nargs="*", help="more arguments for validate (after --)")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    binaries = args.binaries.split(",")
    results = {b: [] for b in binaries}
    for _ in range(args.runs):
        for b in binaries:
            results[b].append(run([b, "validate", args.file, "--no-config", "--format", "json", *args.extra]))
    for b in binaries:
        wall = sorted(r[0] for r in results[b])
        cpu = sorted(r[1] for r in results[b])
        peak = sorted(r[2] for r in results[b])
        print(
            f"{b}: wall median {quantile(wall, 0.5):.3f} s (quartiles {quantile(wall, 0.25):.3f}-"
            f"{quantile(wall, 0.75):.3f}, min {wall[0]:.3f}), CPU {quantile(cpu, 0.5):.3f} s, "
            f"peak {peak[0]:.1f}-{peak[-1]:.1f} MiB"
        )


if __name__ == "__main__":
    main()
