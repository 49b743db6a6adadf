#!/usr/bin/env bash
# The GitHub Action's validate step (action.yml): writes SARIF for code
# scanning ($MC_SARIF), then validates again with `--format github`, which
# annotates the files and appends the job summary to $GITHUB_STEP_SUMMARY.
# The second run's exit code is the gate; it is handed to the last step as
# the output `exit-code`, so the SARIF upload runs whatever the verdict.
# Inputs arrive in environment variables, never spliced into the script.
set -uo pipefail
read -r -a paths <<< "${MC_PATHS:-.}"
read -r -a extra <<< "${MC_ARGS:-}"
if [ "${#paths[@]}" -eq 0 ]; then paths=(.); fi
common=(validate "${paths[@]}")
# Flags win over meshcheck.toml: pass only the inputs that were set.
if [ -n "${MC_FAIL_ON:-}" ]; then common+=(--fail-on "$MC_FAIL_ON"); fi
if [ -n "${MC_PROFILE:-}" ]; then common+=(--profile "$MC_PROFILE"); fi
if [ -n "${MC_BASELINE:-}" ]; then common+=(--baseline "$MC_BASELINE"); fi
common+=("${extra[@]}")
out="${GITHUB_OUTPUT:-/dev/null}"
if [ -n "${MC_SARIF:-}" ]; then
  meshcheck "${common[@]}" --format sarif > "$MC_SARIF"
  echo "sarif-file=$MC_SARIF" >> "$out"
fi
meshcheck "${common[@]}" --format github
code=$?
echo "exit-code=$code" >> "$out"
exit 0
