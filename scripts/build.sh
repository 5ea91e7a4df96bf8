#!/usr/bin/env bash
# Configures and builds slurmsweep, its tests and the example workload into ./build (or only the
# targets named).
set -euo pipefail
cd "$(dirname "$0")/.."
# -O2 without debug info: 0.74x the CPU time of RelWithDebInfo for the quickstart's targets (359 s vs 484 s
# measured side by side); asserts stay on (no NDEBUG). Unity build: the .cc files of a library are compiled
# in batches of 8 as one translation unit, so each batch parses fmt, nlohmann/json, toml++, Boost.Process once
# (the quickstart's targets: 212 s of CPU time instead of 432 s at load 6; bench/README.md's build timings). The test
# binary is not a unity build (CMakeLists.txt). A plain `cmake` configures the per-file build.
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O2 -DCMAKE_UNITY_BUILD=ON >/dev/null
# Targets to build (default: all), e.g. `scripts/build.sh slurmsweep mlp_train`.
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j"$(nproc)" "${targets[@]}"
