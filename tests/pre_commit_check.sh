#!/usr/bin/env bash
# The pre-commit hook (.pre-commit-hooks.yaml) through pre-commit itself:
# a throwaway repository stages a passing and a failing asset, and
# `pre-commit try-repo` runs the hook `meshcheck` from this checkout with
# the built binary on PATH. The passing asset passes; the failing one stops
# the commit. Usage: tests/pre_commit_check.sh PYTHON MESHCHECK_BIN
set -euo pipefail
# Both paths may be relative to the checkout: make them absolute before cd.
python="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
bin_dir="$(cd "$(dirname "$2")" && pwd)"
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PATH="$bin_dir:$PATH"
# SPEC-001 runs the validator this checkout installed (npm ci).
export MESHCHECK_GLTF_VALIDATOR="$here/node_modules/gltf-validator"
cd "$work"
git init -q .
git config user.email ci@example.invalid
git config user.name ci
cp "$here/../shared/assets/models/khronos-sample-models/Box.glb" good.glb
"$bin_dir/meshcheck" validate good.glb --skip SPEC-001 --format json > /dev/null
cp "$here/../shared/assets/models/khronos-sample-models/FlightHelmet.zip" heavy.zip
git add good.glb
"$python" -m pre_commit try-repo "$here" meshcheck --files good.glb
git add heavy.zip
if "$python" -m pre_commit try-repo "$here" meshcheck --files heavy.zip > failing.log 2>&1; then
  cat failing.log
  echo "the hook passed an asset that fails its budget" >&2
  exit 1
fi
cat failing.log
grep -q 'exit code: 1$' failing.log || { echo "the hook failed, but not on the verdict (exit 1)" >&2; exit 1; }
echo "pre-commit hook: ok"
