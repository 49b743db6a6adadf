#!/usr/bin/env bash
# The GitHub Action's install step (action.yml): builds meshcheck from the
# action's own checkout with `cargo install` (the validate-only build: no
# renderer, no server) into $MESHCHECK_ROOT, installs the Khronos
# glTF-Validator that SPEC-001 runs beside it ($MESHCHECK_ROOT/share/meshcheck,
# where the binary looks), and puts the binary on the job's PATH.
set -euo pipefail
root="${MESHCHECK_ROOT:?set MESHCHECK_ROOT to the install folder}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if ! command -v cargo >/dev/null 2>&1; then
  echo "::error title=meshcheck::cargo is not on PATH; use a runner with Rust (ubuntu-latest has it) or dtolnay/rust-toolchain before this action" >&2
  exit 4
fi
if ! command -v node >/dev/null 2>&1; then
  echo "::error title=meshcheck::Node.js is not on PATH; SPEC-001 runs the Khronos glTF-Validator in Node (actions/setup-node), or pass --skip SPEC-001 in args" >&2
  exit 4
fi
cargo install --locked --no-default-features --path "$here" --root "$root"
version="$(node -p "require(process.argv[1]).dependencies['gltf-validator']" "$here/package.json")"
mkdir -p "$root/share/meshcheck"
npm install --prefix "$root/share/meshcheck" --no-audit --no-fund --no-save "gltf-validator@$version"
if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$root/bin" >> "$GITHUB_PATH"
fi
"$root/bin/meshcheck" --version
