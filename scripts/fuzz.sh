#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ into build-fuzz/ and runs each for SECONDS (default 60)
# on a scratch corpus seeded from tests/fuzz/corpus/; the repo corpus only grows with --merge.
# Usage: scripts/fuzz.sh [SECONDS] [--merge] [TARGET...]   (CTest runs `scripts/fuzz.sh 10`)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/build-fuzz

ALL_TARGETS=(study_fuzz expr_fuzz metrics_fuzz slurm_fuzz)
# Only the code under test is compiled with the sanitizers; the transports, store and CLI
# (libssh, SQLite, Boost.Process) stay out so each target builds in one clang call. An
# "undefined reference" after a change elsewhere means a file must be added here.
declare -A SOURCES=(
  [study_fuzz]="base/status.cc base/text.cc base/params.cc base/params_text.cc base/metric_format.cc study/study.cc study/expr.cc
                study/loader.cc study/loader_space.cc study/template_vars.cc study/toml_table.cc study/space.cc study/stopping_config.cc study/repeats.cc study/repeats_load.cc study/trial_key.cc study/names.cc study/keys.cc"
  [expr_fuzz]="base/status.cc study/expr.cc"
  [metrics_fuzz]="base/metric_format.cc base/text.cc logs/metrics_parser.cc logs/framework_logs.cc logs/parse_util.cc"
  [slurm_fuzz]="base/status.cc base/text.cc base/params.cc base/terminal.cc slurm/sbatch_script.cc slurm/shell_context.cc slurm/shell_commands.cc slurm/slurm_client.cc slurm/job_state.cc"
)

usage() {
  echo "usage: scripts/fuzz.sh [SECONDS] [--merge] [TARGET...]   targets: ${ALL_TARGETS[*]}" >&2
  exit 2
}

seconds=60
merge=0
targets=()
for arg in "$@"; do
  case $arg in
    --merge) merge=1 ;;
    -h | --help) usage ;;
    *[!0-9]*) [[ -v SOURCES[$arg] ]] || usage; targets+=("$arg") ;;
    *) seconds=$arg ;;
  esac
done
((${#targets[@]})) || targets=("${ALL_TARGETS[@]}")

command -v clang++ >/dev/null || { echo "fuzz: clang++ not found; run scripts/setup.sh" >&2; exit 1; }
mkdir -p "$OUT"
# build-fuzz/ is not in the repo's .gitignore; this keeps it out of `git status` all the same.
[[ -f $OUT/.gitignore ]] || echo '*' >"$OUT/.gitignore"
# A manual run and CTest's fuzz_short may overlap; they share binaries and scratch corpora.
exec 9>"$OUT/.lock"
flock 9

read -r -a TOML_FMT_CFLAGS <<<"$(pkg-config --cflags tomlplusplus fmt)"
read -r -a TOML_FMT_LIBS <<<"$(pkg-config --libs tomlplusplus fmt)"
# shellcheck disable=SC2054  # the commas are part of -fsanitize's value
CXXFLAGS=(-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
          -Wall -Wextra -I"$ROOT" "${TOML_FMT_CFLAGS[@]}")

# Rebuilds when the binary is older than this script (flags) or than any file it was built
# from, as listed by the compiler after the previous build (system headers excepted).
build() {
  local name=$1 bin=$OUT/$1 srcs=() deps=()
  read -r -a srcs <<<"${SOURCES[$name]//$'\n'/ }"
  srcs=("tests/fuzz/$name.cc" "${srcs[@]}")
  [[ -f $bin.deps ]] && mapfile -t deps <"$bin.deps"
  # A dependency that no longer exists makes find complain, which also counts as stale.
  if [[ -x $bin && ${#deps[@]} -gt 0 &&
        -z $(find scripts/fuzz.sh "${srcs[@]}" "${deps[@]}" -newer "$bin" -print -quit 2>&1) ]]; then
    echo "fuzz: $name is up to date"
    return
  fi
  echo "fuzz: building $name"
  local start=$SECONDS
  clang++ "${CXXFLAGS[@]}" -o "$bin.tmp" "${srcs[@]}" "${TOML_FMT_LIBS[@]}"
  clang++ -std=c++20 -I"$ROOT" "${TOML_FMT_CFLAGS[@]}" -MM "${srcs[@]}" |
    sed -e 's/^[^ ]*: //' -e 's/ *\\$//' | tr -s ' ' '\n' | sed '/^$/d' | sort -u >"$bin.deps"
  mv "$bin.tmp" "$bin"
  echo "fuzz: built $name in $((SECONDS - start)) s"
}

# Prints one line from libFuzzer's final stats and last status line.
summary() {
  local log=$1 runs rate cov
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*/[0-9a-zA-Z]*' "$log" | tail -1)
  echo "${runs:-?} runs, ${rate:-?} exec/s, $cov"
}

run() {
  local name=$1 bin=$OUT/$1 seeds=$ROOT/tests/fuzz/corpus/$1
  local scratch=$OUT/corpus/$name artifacts=$OUT/artifacts/$name log=$OUT/logs/$name.log
  # libFuzzer writes new inputs only into the first corpus directory, so the repo's seeds are
  # read from the second and stay untouched.
  rm -rf "$scratch"
  mkdir -p "$scratch" "$artifacts" "$OUT/logs" "$seeds"
  local args=(-max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -print_final_stats=1
              -artifact_prefix="$artifacts/")
  [[ -f tests/fuzz/$name.dict ]] && args+=(-dict="tests/fuzz/$name.dict")
  echo "fuzz: running $name for ${seconds} s"
  if ! UBSAN_OPTIONS=print_stacktrace=1 "$bin" "${args[@]}" "$scratch" "$seeds" >"$log" 2>&1; then
    echo "fuzz: $name FAILED ($(summary "$log")); log: $log" >&2
    local why
    why=$(grep -A60 -E '^==[0-9]+==ERROR|runtime error|^[a-z]+_fuzz: |ALARM|out-of-memory' "$log" | head -80 || true)
    if [[ -n $why ]]; then echo "$why" >&2; else tail -40 "$log" >&2; fi
    grep -h '^artifact_prefix=.*Test unit written to' "$log" | sed 's/.*written to /fuzz: reproducer: /' >&2 || true
    echo "fuzz: rerun it with: $bin REPRODUCER" >&2
    return 1
  fi
  echo "fuzz: $name ok: $(summary "$log")"
  if ((merge)); then
    "$bin" -merge=1 "$seeds" "$scratch" >>"$log" 2>&1
    echo "fuzz: merged into tests/fuzz/corpus/$name: $(find "$seeds" -type f | wc -l) files"
  fi
}

# One target at a time, built and run in turn: the machine is shared.
for t in "${targets[@]}"; do build "$t"; done
failed=()
for t in "${targets[@]}"; do run "$t" || failed+=("$t"); done
if ((${#failed[@]})); then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${seconds} s without a finding"
