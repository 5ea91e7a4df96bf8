#!/usr/bin/env bash
# Runs every integration test ([cluster], [fault], [outage]; not only CI's [versions] subset) against one Slurm
# version, as root:
#   scripts/test-slurm.sh 24.11                 # or 22.05 (this machine's), 26.05
#   scripts/test-slurm.sh 26.05 --accounting    # the [fault] lab with slurmdbd and MariaDB (a root of ~590 MB)
# Builds first (scripts/build.sh), then starts two labs of that version (lab profile for the SSH tests, production
# profile for the [fault] tests), runs the tests, stops the labs. Extra arguments go to the test binary.
# Its labs (/tmp/slurmsweep-try-*, net prefixes sstry*, subnets 10.213.105-106, ports 16941-16948, 22105-22106)
# are apart from CI's, so it can run beside scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-}
case $version in
  22.05 | 24.11 | 26.05) shift ;;
  *) echo "usage: scripts/test-slurm.sh 22.05|24.11|26.05 [--accounting] [test binary arguments]" >&2; exit 2 ;;
esac
accounting=none
if [[ ${1:-} == --accounting ]]; then
  accounting=slurmdbd
  shift
fi
# 22.05's [fault] lab keeps accounting as in CI.
[[ $version == 22.05 ]] && accounting=slurmdbd

scripts/setup.sh
scripts/build.sh

lab=/tmp/slurmsweep-try-$version
prod=/tmp/slurmsweep-try-${version}p
tag=${version/./}
export SLURMSWEEP_SLURM=$version
stop_labs() {
  SLURMSWEEP_LAB=$lab tests/cluster/stop.sh || true
  SLURMSWEEP_LAB=$prod tests/cluster/stop.sh || true
}
trap stop_labs EXIT

SLURMSWEEP_LAB=$lab SLURMSWEEP_NET_PREFIX=sstry$tag SLURMSWEEP_SUBNET=10.213.105 SLURMSWEEP_SLURMCTLD_PORT=16941 \
  SLURMSWEEP_SLURMD_PORT=16942 SLURMSWEEP_SSH_PORT=22105 tests/cluster/start.sh
SLURMSWEEP_LAB=$prod SLURMSWEEP_PROFILE=production SLURMSWEEP_ACCOUNTING=$accounting \
  SLURMSWEEP_NET_PREFIX=sstry${tag}p SLURMSWEEP_SUBNET=10.213.106 SLURMSWEEP_SLURMCTLD_PORT=16945 \
  SLURMSWEEP_SLURMD_PORT=16946 SLURMSWEEP_SSH_PORT=22106 SLURMSWEEP_SLURMDBD_PORT=16947 SLURMSWEEP_MARIADB_PORT=16948 \
  tests/cluster/start.sh

tests=build/tests/slurmsweep_tests
rc=0
# The lab's bin/ first in PATH: its Slurm's commands for the tests and the local transport.
SLURMSWEEP_LAB=$prod PATH=$prod/bin:$PATH "$tests" "[fault]" "$@" &
fault=$!
SLURMSWEEP_LAB=$lab PATH=$lab/bin:$PATH "$tests" "[cluster]~[fault]" "$@" || rc=1
wait "$fault" || rc=1
# Last: they stop sshd and slurmctld and cut a node's link.
SLURMSWEEP_LAB=$lab PATH=$lab/bin:$PATH "$tests" "[outage]" "$@" || rc=1
if ((rc)); then echo "test-slurm: FAILED against Slurm $version" >&2; else echo "test-slurm: all passed against Slurm $version"; fi
exit "$rc"
