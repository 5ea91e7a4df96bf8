#!/usr/bin/env bash
# The README's second command: install, build, and run the whole test suite. CTest starts
# the test cluster before the [cluster] tests and stops it after them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd build
ctest --output-on-failure --timeout 1500 -j3 "$@"
