#!/usr/bin/env bash
# The fuzzing stage of CI (.ci/run): builds every target the way `cargo fuzz
# build` does (libFuzzer, AddressSanitizer, SanitizerCoverage, debug
# assertions), replays fuzz/regressions, then runs each target for
# FUZZ_SECONDS (60) on its committed corpus, FUZZ_JOBS (2) at a time.
# `fuzz/ci.sh build` only builds; `fuzz/ci.sh run` only replays and runs (on
# a finished build); no argument does both.
#
# It calls cargo directly with cargo-fuzz 0.13's flags instead of installing
# cargo-fuzz, and builds at opt-level 1 with the default codegen units
# (cargo-fuzz forces one codegen unit at opt-level 3). Cold, this build
# takes about 21 CPU-minutes: every crate gets ASan and the coverage
# passes. Opt-level 0 for the dependencies took 9 CPU-minutes, but the
# targets ran up to ten times fewer inputs a second; opt-level 0 for the
# crates the targets do not run (wgpu, rustls, clap, ...) saved a fifth and
# still slowed zip_bundle ninefold (BENCHMARKS.md, "CI's time"). Even the
# renderer's four largest crates alone at 0 (naga, wgpu-core, wgpu-hal,
# wgpu: no target runs them) made the targets slower: at opt-levels 0 and 1
# rustc shares generic instances between crates, so meshcheck called their
# unoptimised `Iter<u32>::next` instead of inlining its own, and the 16M-vertex
# reproducer took 36 s instead of 7-14. The build leaves out `mcp`. The runs
# are a smoke test of minutes, not the 10-minute campaigns of
# fuzz/README.md.
#
# New corpus entries go to a scratch folder, so the committed corpus stays as
# minimised. A crash, a timeout over 10 s (60 s for a replayed reproducer)
# or an allocation over 1 GB fails the stage; the reproducer is in
# target/fuzz-ci/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH="${FUZZ_SECONDS:-60}"
JOBS="${FUZZ_JOBS:-2}"
TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
OUT=target/fuzz-ci
TARGETS=(glb gltf_json zip_bundle accessors ktx2 geometry multipart)

export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing \
-Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Zsanitizer=address \
-Cllvm-args=-sanitizer-coverage-stack-depth -Cdebug-assertions"
# meshoptimizer's C++ defines one global twice; cargo-fuzz sets the same.
export ASAN_OPTIONS="detect_odr_violation=0"

PHASE="${1:-all}"
BIN="$OUT/build/$TRIPLE/release"

if [ "$PHASE" = build ] || [ "$PHASE" = all ]; then
started=$(date +%s)
cargo build --locked --manifest-path fuzz/Cargo.toml --target "$TRIPLE" --release \
  --config 'profile.release.opt-level=1' --config 'profile.release.debug=false' \
  --target-dir "$OUT/build" --bins
echo "fuzz: built ${#TARGETS[@]} targets in $(( $(date +%s) - started )) s"
fi
[ "$PHASE" = build ] && exit 0

dict_for() {
  case "$1" in glb|gltf_json|accessors) echo "-dict=fuzz/dicts/gltf.dict" ;; esac
}

# Every reproducer of a fixed bug runs clean: no crash, no allocation over
# 1 GB, none over 60 s. The largest (gltf_json's viewless-positions-16M: 16
# million vertices) takes 7-18 s in this ASan build on two cores, 0.9 s in
# a release build; the runs below keep the 10 s limit that finds hangs.
for t in "${TARGETS[@]}"; do
  if [ -d "fuzz/regressions/$t" ]; then
    files=(fuzz/regressions/"$t"/*)
    "$BIN/$t" -rss_limit_mb=1024 -timeout=60 -runs=1 "${files[@]}" > "$OUT/regressions-$t.log" 2>&1 \
      || { tail -n 40 "$OUT/regressions-$t.log"; echo "fuzz: a regression of $t fails"; exit 1; }
    echo "fuzz: $t: ${#files[@]} regression inputs run clean"
  fi
done

run_one() {
  local t=$1 scratch="$OUT/corpus/$1"
  rm -rf "$scratch"
  mkdir -p "$scratch" "$OUT/artifacts/$t"
  # The first folder receives new inputs; the committed corpus is read only.
  # shellcheck disable=SC2046
  "$BIN/$t" "$scratch" "fuzz/corpus/$t" $(dict_for "$t") -max_total_time="$SECONDS_EACH" \
    -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$t/" \
    > "$OUT/$t.log" 2>&1
}

failed=()
running=0
pids=()
names=()
for t in "${TARGETS[@]}"; do
  run_one "$t" &
  pids+=($!)
  names+=("$t")
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait "${pids[0]}" || failed+=("${names[0]}")
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
    running=$((running - 1))
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done

for t in "${TARGETS[@]}"; do
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$OUT/$t.log" | tail -n 1)
  echo "fuzz: $t: ${runs:-?} inputs in ${SECONDS_EACH} s"
done
if [ "${#failed[@]}" -gt 0 ]; then
  for t in "${failed[@]}"; do
    echo "fuzz: $t FAILED:"
    grep -E "ERROR|panicked|Test unit written" "$OUT/$t.log" | head -n 20 || true
  done
  exit 1
fi
echo "fuzz: all ${#TARGETS[@]} targets ran ${SECONDS_EACH} s each without a crash, timeout or out-of-memory"
