#!/usr/bin/env bash
# The README's first command: install, build, start the local test cluster, run the
# quickstart study over SSH end to end, and write its report. Run as root on Debian 12.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --quickstart
scripts/build.sh slurmsweep mlp_train  # the binary and the workload it stages; not the tests or benchmarks
tests/cluster/start.sh
build/bin/slurmsweep run examples/quickstart.toml
build/bin/slurmsweep report examples/quickstart.toml --csv build/quickstart-trials.csv
echo "quickstart: reports: build/quickstart-report.html (open it in a browser), build/quickstart-csv/ and"
echo "quickstart: build/quickstart-trials.csv; database build/quickstart.db"
echo "quickstart: the test cluster keeps running; stop it with tests/cluster/stop.sh"
