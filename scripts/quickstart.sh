#!/usr/bin/env bash
# The README's first command: install, build, start the local test cluster, run the
# quickstart study over SSH end to end, and write its report. Run as root on Debian 12.
# Prints the wall time of each stage at the end (bench/README.md's quickstart figures come from it).
set -euo pipefail
cd "$(dirname "$0")/.."
stages=()
stage() {  # stage NAME COMMAND...: runs the command and records its wall time
  local name=$1 start=$SECONDS
  shift
  "$@"
  stages+=("$name $((SECONDS - start)) s")
}
stage packages scripts/setup.sh --build
# The lab's packages (Slurm, munge, sshd) install while the build compiles; their output goes to a log.
mkdir -p build
scripts/setup.sh --quickstart >build/setup-lab.log 2>&1 &
lab_packages=$!
# The binary and the workload it stages; not the tests or benchmarks.
stage build scripts/build.sh slurmsweep mlp_train
lab_packages_wait() {
  wait "$lab_packages" || { tail -n 20 build/setup-lab.log; echo "quickstart: scripts/setup.sh --quickstart failed" >&2; exit 1; }
}
stage "lab packages" lab_packages_wait
stage cluster tests/cluster/start.sh
stage study build/bin/slurmsweep run examples/quickstart.toml
stage report build/bin/slurmsweep report examples/quickstart.toml --csv build/quickstart-trials.csv
echo "quickstart: reports: build/quickstart-report.html (open it in a browser), build/quickstart-csv/ and"
echo "quickstart: build/quickstart-trials.csv; database build/quickstart.db"
echo "quickstart: the test cluster keeps running; stop it with tests/cluster/stop.sh"
echo "quickstart: took $SECONDS s: ${stages[*]/%/,}" | sed 's/,$//'
