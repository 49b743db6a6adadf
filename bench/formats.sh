#!/usr/bin/env bash
# Cost of the output formats and of meshcheck.toml (BENCHMARKS.md, "Output
# formats and meshcheck.toml (issue 19)"): one folder run over the shared
# assets (every .glb, .gltf and .zip under ../shared/assets/models, with
# SPEC-001 so its messages reach SARIF and the job summary), once per format,
# and the same run with a meshcheck.toml of three [[rules]] matching every
# file against --no-config (the rules change no check's work: a profile
# equal to the default, an override no asset comes near, an exit level), so
# the difference is finding, reading and matching the file. Prints the minimum wall time of N interleaved
# runs per row, and the bytes each format writes.
#
#   bench/formats.sh [MESHCHECK_BIN] [N]
#
# The folder run's work (load and checks) is the same in every row, so the
# difference between a row and `json` is what that format costs.
set -euo pipefail
BIN=$(realpath "${1:-target/release/meshcheck}")
N=${2:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
ASSETS="$HERE/../shared/assets/models"
export MESHCHECK_GLTF_VALIDATOR=${MESHCHECK_GLTF_VALIDATOR:-$HERE/node_modules/gltf-validator}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# A copy of the assets in a folder of its own, so a meshcheck.toml can sit above them.
mkdir -p "$WORK/tree/.git"
cp -r "$ASSETS" "$WORK/tree/models"
files=$(find "$WORK/tree/models" -type f \( -name '*.glb' -o -name '*.gltf' -o -name '*.zip' \) | wc -l)
cat > "$WORK/tree/rules.toml" <<'EOF'
profile = "web"
[[rules]]
paths = ["models/khronos-sample-models/**"]
profile = "web"
[[rules]]
paths = ["**/*.zip"]
overrides = { max_file_bytes = 20000000 }
[[rules]]
paths = ["models/other/**"]
fail_on = "warn"
EOF

# run LABEL ARGS...: the minimum of N runs in ms, and the output's bytes.
declare -A best bytes
run() {
  local label=$1
  shift
  local t0 t1 ms
  t0=$(date +%s%N)
  (cd "$WORK/tree" && GITHUB_STEP_SUMMARY=/dev/null "$BIN" validate models "$@" > "$WORK/out" 2> /dev/null) || true
  t1=$(date +%s%N)
  ms=$(( (t1 - t0) / 1000000 ))
  if [ -z "${best[$label]:-}" ] || [ "$ms" -lt "${best[$label]}" ]; then best[$label]=$ms; fi
  bytes[$label]=$(wc -c < "$WORK/out")
}
rows=(json table sarif github gitlab markdown html)
for _ in $(seq "$N"); do
  for f in "${rows[@]}"; do run "$f" --format "$f" --no-config; done
  run "config: none" --format json --no-config
  run "config: 3 rules" --format json --config "$WORK/tree/rules.toml"
done
echo "$files files, $BIN, minimum of $N runs"
echo
echo "| run | wall (ms) | output bytes |"
echo "|---|--:|--:|"
for f in "${rows[@]}"; do echo "| --format $f | ${best[$f]} | ${bytes[$f]} |"; done
echo "| --format json --no-config | ${best["config: none"]} | ${bytes["config: none"]} |"
echo "| --format json --config rules.toml (3 rules) | ${best["config: 3 rules"]} | ${bytes["config: 3 rules"]} |"
