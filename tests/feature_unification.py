#!/usr/bin/env python3
"""Checks that the validate-only build reuses the default build's dependencies.

`cargo test --no-default-features` (.ci/run) follows `cargo test`. A crate
that both builds use but that resolves to fewer features without the
renderer, the server and the MCP server is compiled twice, and so is
everything above it: before hack/ existed that was 109 of the validate-only
build's 284 units. hack/Cargo.toml turns those features on in every build.

This script asks cargo for both builds' unit graphs (`--unit-graph`, which
plans and compiles nothing), names every unit of the second that the first
lacks (its package, features and dependencies compared), and fails when one
is outside meshcheck itself and ALLOWED, printing the crates whose features
differ so that hack/Cargo.toml can be brought back in step. It runs for
`cargo test` and for `cargo clippy --all-targets` (check mode).

Before asking cargo, it runs its comparison on small made-up graphs (a
dependency with a feature fewer, a unit above it, a difference in meshcheck
alone) and stops if the comparison does not tell them apart, so that a
change to this script cannot make it pass everything.

Usage: python3 tests/feature_unification.py
"""

import json
import os
import subprocess
import sys

# Units the validate-only build may compile again, with the reason.
ALLOWED = {
    # meshcheck's own units: their features are the difference.
    "meshcheck": "the crate itself",
    # schemars' `chrono04` comes with rmcp (mcp); turning it on everywhere
    # would put chrono in the validate-only build for one small crate.
    "schemars": "chrono04 stays out of the validate-only build",
}


def unit_graph(args):
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")
    out = subprocess.run(
        ["cargo", *args, "--locked", "--unit-graph", "-Zunstable-options"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    return json.loads(out)["units"]


def identities(units):
    """One key per unit: its own settings and, recursively, its dependencies'."""
    memo = {}

    def key(i):
        if i not in memo:
            u = units[i]
            memo[i] = (
                u["pkg_id"],
                u["target"]["name"],
                u["mode"],
                tuple(sorted(u["features"])),
                u["profile"]["opt_level"],
                u["platform"],
                tuple(sorted(key(d["index"]) for d in u["dependencies"])),
            )
        return memo[i]

    return [key(i) for i in range(len(units))]


def crate(pkg_id):
    # "registry+https://...#serde@1.0.229" or "path+file:///...#meshcheck@0.1.0"
    return pkg_id.rsplit("#", 1)[-1].split("@", 1)[0]


def compare(command):
    return not twice(" ".join(command), unit_graph(command), unit_graph([*command, "--no-default-features"]))


def twice(label, default, validate_only):
    """The crates outside ALLOWED with a unit in `validate_only` that
    `default` lacks (compiled twice), sorted; the causes printed."""
    known = set(identities(default))
    keys = identities(validate_only)
    again = [i for i, k in enumerate(keys) if k not in known]
    again_set = set(again)
    crates = {crate(validate_only[i]["pkg_id"]) for i in again}
    extra = sorted(crates - set(ALLOWED))
    print(
        f"{label}: the validate-only build has {len(validate_only)} units, "
        f"{len(again)} not in the default build ({', '.join(sorted(crates))})"
    )
    if not extra:
        return extra
    # The causes: units compiled again whose dependencies are all shared.
    for i in again:
        u = validate_only[i]
        if any(d["index"] in again_set for d in u["dependencies"]):
            continue
        name = crate(u["pkg_id"])
        if name in ALLOWED:
            continue
        theirs = [
            sorted(d["features"])
            for d in default
            if d["pkg_id"] == u["pkg_id"] and d["target"]["name"] == u["target"]["name"] and d["mode"] == u["mode"]
        ]
        print(f"  {name} ({u['target']['name']}, {u['mode']}): {sorted(u['features'])}; default build: {theirs}")
    print(f"  compiled twice because of the above: {', '.join(extra)}; add the missing features to hack/Cargo.toml")
    return extra


def made_up(units):
    """A unit graph from (crate, features, dependency indices) triples."""
    return [
        {
            "pkg_id": f"registry+https://example.invalid#{name}@1.0.0",
            "target": {"name": name},
            "mode": "build",
            "features": features,
            "profile": {"opt_level": "2"},
            "platform": None,
            "dependencies": [{"index": d} for d in deps],
        }
        for name, features, deps in units
    ]


def self_test():
    """The comparison on made-up graphs: a difference in meshcheck alone
    compiles nothing twice; serde with a feature fewer compiles serde and
    gltf (above it) twice, and meshcheck is not named (it is ALLOWED)."""
    default = made_up([("serde", ["derive", "std"], []), ("gltf", [], [0]), ("meshcheck", ["serve"], [1])])
    same = made_up([("serde", ["derive", "std"], []), ("gltf", [], [0]), ("meshcheck", [], [1])])
    fewer = made_up([("serde", ["std"], []), ("gltf", [], [0]), ("meshcheck", [], [1])])
    cases = [("equal but for meshcheck", same, []), ("serde with a feature fewer", fewer, ["gltf", "serde"])]
    for label, graph, expected in cases:
        if twice(f"self-test, {label}", default, graph) != expected:
            sys.exit(f"self-test: the comparison got {label!r} wrong; fix this script before trusting it")


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    self_test()
    ok = compare(["test", "--no-run"])
    ok = compare(["check", "--all-targets"]) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
