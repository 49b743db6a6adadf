#!/usr/bin/env python3
"""Issue 22, point 5, side by side: meshcheck builds over one folder against
the bare Khronos validator over the same folder, every command once a round
in a shuffled order, so that a slow stretch of the machine falls on all of
them alike.

    python3 benches/folder_ab.py FOLDER ROUNDS BINARY [BINARY...]

Run from the repository root (the builds find the validator in
node_modules, and benches/validator_folder.js is the peer, as in
`cargo bench --bench spec001 -- folder`). Each build runs
`BINARY validate FOLDER --format json --no-config` (checks_only, SPEC-001
on, every core); the peer runs `node benches/validator_folder.js FOLDER`.
One warm-up round, then ROUNDS timed rounds, each command timed by
`interleaved.run` (the same child timing as benches/interleaved.py). Prints,
for each command, the median wall time with its quartiles and the median
CPU time (user + system of the process tree), and for each build the median
of its wall time over the validator's in the same round.
"""

import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interleaved import run  # noqa: E402  (the same child timing)


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    folder, rounds, builds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    commands = {"validator": ["node", "benches/validator_folder.js", folder]}
    for b in builds:
        commands[b] = [b, "validate", folder, "--format", "json", "--no-config"]
    wall = {k: [] for k in commands}
    cpu = {k: [] for k in commands}
    for r in range(rounds + 1):
        order = list(commands)
        random.shuffle(order)
        for k in order:
            t, c, _ = run(commands[k])
            if r > 0:  # round 0 is the warm-up
                wall[k].append(t)
                cpu[k].append(c)
    base = statistics.median(wall["validator"])
    for k in commands:
        m = statistics.median(wall[k])
        q = statistics.quantiles(wall[k], n=4)
        print(
            f"{k}: wall median {m * 1e3:.1f} ms (quartiles {q[0] * 1e3:.0f}-{q[2] * 1e3:.0f}), "
            f"CPU {statistics.median(cpu[k]):.3f} s, {m / base:.3f} x the validator's median"
        )
    for b in builds:
        ratios = [ours / theirs for ours, theirs in zip(wall[b], wall["validator"])]
        print(f"{b}: median of the rounds' ratios to the validator {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
