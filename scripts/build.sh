#!/usr/bin/env bash
# Configures and builds slurmsweep, its tests and the example workload into ./build (or only the
# targets named).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# Targets to build (default: all), e.g. `scripts/build.sh slurmsweep mlp_train`.
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build build -j"$(nproc)" "${targets[@]}"
