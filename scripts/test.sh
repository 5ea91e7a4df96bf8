#!/usr/bin/env bash
# The README's second command: install, build, and run the whole test suite. CTest starts
# the test cluster before the [cluster] tests and stops it after them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The Debian roots of the Slurm 24.11 and 26.05 labs download while the C++ builds (cached in
# /var/cache/slurmsweep/roots: nothing to do on a rerun; ~3-6 min each on a fresh machine).
roots_log=$(mktemp)
roots=()
for version in 24.11 26.05; do
  tests/cluster/slurm-root.sh "$version" >>"$roots_log" 2>&1 &
  roots+=($!)
done
scripts/build.sh
for pid in "${roots[@]}"; do
  # A root that failed to build fails its labs' ctest fixtures (which try once more); show why here.
  wait "$pid" || { echo "test: a Slurm root did not build:"; tail -n 20 "$roots_log"; }
done
grep -h '^slurm-root: built' "$roots_log" || true
rm -f "$roots_log"
cd build
ctest --output-on-failure --timeout 1500 -j3 "$@"
