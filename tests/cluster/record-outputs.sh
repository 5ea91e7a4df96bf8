#!/usr/bin/env bash
# Records, on a running lab, the real output of every Slurm command slurmsweep parses, as the parser tests'
# data: tests/data/<command>_<version>_<case>.txt (slurm/slurm_test.cc reads them). Run as root:
#   SLURMSWEEP_LAB=/tmp/lab tests/cluster/record-outputs.sh [OUT_DIR]      (default OUT_DIR: tests/data)
# It submits a fixed set of jobs (named, with comments), cancels one, requeues one, stops slurmctld for a moment
# (restarted with $LAB/bin/start-slurmctld). Use a lab nobody else is using; job ids differ run to run, names
# do not.
set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB=${SLURMSWEEP_LAB:-/tmp/slurmsweep-lab}
OUT=${1:-$HERE/../data}
# What slurm/slurm_client.cc asks for (kSqueueFormat, kSacctFields).
SQUEUE_FORMAT='JobArrayID:|,State:|,Reason:|,exit_code:|,Name:|,StartTime:|,EndTime:|,Comment:|,restartcnt:'
SACCT_FIELDS=JobID,State,ExitCode,Reason,JobName,Start,End,Comment

# shellcheck disable=SC1091
. "$LAB/env"
VERSION=$SLURMSWEEP_SLURM
WORK=$(mktemp -d /tmp/slurmsweep-record.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

log() { echo "record: $*" >&2; }
sub() { sbatch --parsable -o "$WORK/%j.out" "$@"; }
state() { squeue -h -t all -j "$1" -o %T 2>/dev/null || true; }
wait_state() {  # JOB STATE...: waits (60 s at most) until the job is in one of the states
  local i s
  for i in $(seq 300); do
    s=$(state "$1")
    for want in "${@:2}"; do [[ $s == "$want" ]] && return 0; done
    sleep 0.2
  done
  log "job $1 is '$s', not ${*:2}"
  return 1
}
squeue_of() { squeue -h -r -t all -j "$1" -O "$SQUEUE_FORMAT"; }
save() { cat >"$OUT/$1"; log "wrote $OUT/$1 ($(wc -l <"$OUT/$1") lines)"; }
# stderr and exit status of a command that is expected to fail
refusal() { local rc=0 err; err=$("$@" 2>&1 >/dev/null) || rc=$?; printf '%s\nexit=%d\n' "$err" "$rc"; }

mkdir -p "$OUT"
log "Slurm $VERSION lab $LAB -> $OUT"
scancel -u root 2>/dev/null || true

# Finished, failed, cancelled, signalled and pending jobs side by side (squeue, scontrol, sacct).
ok=$(sub -J ok --comment=slurmsweep:study=rec:trial=t-ok:attempt=1 --wrap true)
fail=$(sub -J fail42 --comment=slurmsweep:study=rec:trial=t-fail:attempt=1 --wrap 'exit 42')
segv=$(sub -J segv --wrap 'kill -SEGV $$')
cancel=$(sub -J cancelme '--comment=with|pipe and spaces' --wrap 'sleep 300')
held=$(sub -J held -H --wrap true)
wait_state "$held" PENDING
wait_state "$cancel" RUNNING
wait_state "$fail" FAILED
wait_state "$ok" COMPLETED
wait_state "$segv" FAILED COMPLETED CANCELLED
scancel "$cancel"
wait_state "$cancel" CANCELLED
ids=$ok,$fail,$segv,$cancel,$held
squeue_of "$ids" | save "squeue_${VERSION}_mixed.txt"
scontrol -o show job "$fail" | save "scontrol_${VERSION}_show_job.txt"
scancel "$held"
wait_state "$held" CANCELLED
# sacct: with accounting, what slurmdbd keeps; without, the refusal slurmsweep learns from.
if [[ $SLURMSWEEP_ACCOUNTING == slurmdbd ]]; then
  for i in $(seq 50); do
    [[ $(sacct -X -n -P -j "$ids" -o JobID | wc -l) -ge 5 ]] && break
    sleep 0.2
  done
  sacct -X -n -P -j "$ids" -o "$SACCT_FIELDS" | save "sacct_${VERSION}_accounting.txt"
else
  refusal sacct -X -n -P -j "$ids" -o "$SACCT_FIELDS" | save "sacct_${VERSION}_disabled.txt"
fi

# A throttled array: one task runs, the others wait for the limit.
arr=$(sub -J arr --array=0-3%1 --wrap 'sleep 5')
wait_state "${arr}_0" RUNNING
squeue_of "$arr" | save "squeue_${VERSION}_array.txt"
scancel "$arr"

# A job Slurm runs again under the same id (restart count 1).
rq=$(sub -J wrap --comment=slurmsweep:study=rec:trial=t-rq:attempt=1 --wrap 'sleep 300')
wait_state "$rq" RUNNING
scontrol requeue "$rq"
wait_state "$rq" PENDING
squeue_of "$rq" | save "squeue_${VERSION}_restarts.txt"
scancel "$rq"

# sbatch refusals: a partition that does not exist; a request no node can meet.
refusal sbatch -p nosuch --wrap true | save "sbatch_${VERSION}_invalid_partition.txt"
refusal sbatch --gpus-per-node=9 --wrap true | save "sbatch_${VERSION}_node_config.txt"

# The controller down: what squeue, sbatch and scancel say (MessageTimeout=5: each waits a few seconds).
pid=$(cat "$LAB/run/slurmctld.pid")
kill "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
refusal squeue -h -r -t all -j 1 -O "$SQUEUE_FORMAT" | save "squeue_${VERSION}_controller_down.txt"
refusal sbatch --wrap true | save "sbatch_${VERSION}_controller_down.txt"
refusal scancel 1 | save "scancel_${VERSION}_controller_down.txt"
"$LAB/bin/start-slurmctld"
for i in $(seq 100); do sinfo -h >/dev/null 2>&1 && break; sleep 0.2; done
log "done; slurmctld restarted"
