#!/bin/bash
# Scale benchmarks of issue 7 on the real test cluster (start it first: tests/cluster/start.sh).
#
#   bench/scale_bench.sh [load|submit|rss|all|stopping|e2e]   (default: all; stopping and e2e are not in all)
#
# load:   Slurm commands and cluster calls (SSH round trips) per tick with 10, 100 and 1000 active
#         trials, over SSH; the limit is 2 Slurm commands per tick.
# submit: wall time to submit 1000 held trials as job arrays vs one sbatch each (local transport,
#         as on a login node; over SSH one-by-one costs a round trip more per trial).
# rss:    peak RSS of `slurmsweep run` tracking 10,000 trials (held array tasks), against 64 MB.
# stopping: a restarted `slurmsweep run` on 1000 running trials of 10k stored points each and every
#         stopping rule on (issues 20, 42): the time from its start to the end of its first tick (issue 42:
#         1 s; the stand-in squeue's own time apart), the tick at which early stopping, having read every
#         stored curve, has decided once (the run is stopped by SIGINT after that tick, and not before
#         tick 3, nor before the curves pass 1,024 points), and its peak RSS against 256 MB, the report
#         refreshed beside the loop every 6 s. Needs no cluster: the database is
#         written by build/bin/stopping_tick_bench --write-study, and a stand-in squeue first on PATH
#         reports every job running and logs one more iteration in each trial's log per call (a
#         tick's new points); scancel is a no-op. SLURMSWEEP_BIN_BEFORE=/path/to/an/older/slurmsweep
#         measures that binary on a copy of the same database too; when its schema is older, give its
#         stopping_tick_bench as SLURMSWEEP_TICK_BENCH_BEFORE and it writes the same study for it
#         (an older slurmsweep refuses a newer database). SLURMSWEEP_STOP_TRIALS and
#         SLURMSWEEP_STOP_STORED change the study's size (issue 42: 10000 and 1000; limit then 512 MB).
# e2e:    issue 42: a study of SLURMSWEEP_E2E_TRIALS (default 10,000) trivial trials run to its end on the
#         lab, every trial queued at once (max_concurrent = trials; arrays split by the site's MaxArraySize,
#         e.g. a lab started with SLURMSWEEP_MAX_ARRAY_SIZE=1000): wall time, sbatch calls, Slurm commands per
#         tick (limit 2: one squeue, and sacct when a job left the queue), and whether every trial ran once
#         (one start of mlp_train in each log).
#
# Every job is submitted held or cancelled at the end: the cluster is left as it was found.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${SLURMSWEEP_BIN:-$ROOT/build/bin/slurmsweep}
LAB=${SLURMSWEEP_LAB:-/tmp/slurmsweep-lab}
what=${1:-all}
[[ -x $BIN ]] || { echo "scale_bench: build first (scripts/build.sh): $BIN" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/slurmsweep-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

if [[ $what == stopping ]]; then
  TRIALS=${SLURMSWEEP_STOP_TRIALS:-1000} STORED=${SLURMSWEEP_STOP_STORED:-10000}
  LIMIT_MB=$(( TRIALS > 1000 ? 512 : 256 ))
  echo "== a restarted run: $TRIALS running trials x $STORED stored points, every stopping rule on (no cluster) =="
  TICK_BENCH=${SLURMSWEEP_TICK_BENCH:-$ROOT/build/bin/stopping_tick_bench}
  [[ -x $TICK_BENCH ]] || { echo "scale_bench: build stopping_tick_bench first: $TICK_BENCH" >&2; exit 1; }
  "$TICK_BENCH" --write-study "$WORK/study" --trials "$TRIALS" --stored "$STORED"
  # The report refreshed in the background every 6 s (the least refresh_minutes), so that its memory
  # counts beside the loop's at every stage, not only in tick 1.
  printf '\n[report]\nrefresh_minutes = 0.1\n' >>"$WORK/study/study.toml"
  # Enough ticks for the curves to pass 1,024 points (one point a tick), where each series leaves its
  # exact phase (stopping/series.h): the memory of a run that goes on, not only of a restart.
  MIN_TICKS=$(( STORED < 1025 ? 1025 - STORED + 2 : 3 ))
  export MIN_TICKS
  cp -a "$WORK/study" "$WORK/pristine"
  if [[ -n ${SLURMSWEEP_TICK_BENCH_BEFORE:-} ]]; then
    rm -rf "$WORK/study"
    "$SLURMSWEEP_TICK_BENCH_BEFORE" --write-study "$WORK/study" --trials "$TRIALS" --stored "$STORED"
    printf '\n[report]\nrefresh_minutes = 0.1\n' >>"$WORK/study/study.toml"
    mv "$WORK/study" "$WORK/pristine-before"
  fi
  mkdir -p "$WORK/stub"
  cat >"$WORK/stub/squeue" <<'STUB'
#!/bin/bash
# Every job of jobs.txt is running; each call logs the next iteration (10 steps on) in every log
# (awk: a bash loop over 10,000 logs took a second of the tick) and records how long it took.
dir=$(dirname "$(dirname "$0")")/study
start=$(date +%s.%N)
n=$(( $(cat "$dir/ticks" 2>/dev/null || echo 0) + 1 ))
echo "$n" >"$dir/ticks"
awk -F'|' -v it=$(( 100000 + 10 * n )) '{
  printf " [2026-12-03 10:00:00] iteration %8d/%8d | consumed samples: %8d | elapsed time per iteration (ms): 400.0 | lm loss: %.6E | number of nan iterations:   0 |\n", it, 1000000, it * 8, 2.1 >>$4
  close($4)
  print $1 "|RUNNING|None|0|" $3 "|2026-12-03T10:00:00|N/A|" $2 "|0"
}' "$dir/jobs.txt"
echo "$(date +%s.%N) - $start" | bc -l >>"$dir/squeue.s"
STUB
  printf '#!/bin/bash\nexit 0\n' >"$WORK/stub/scancel"
  chmod +x "$WORK/stub/squeue" "$WORK/stub/scancel"
  # Runs `slurmsweep run`, timing each line of its output from the start, until the tick in which early
  # stopping has every stored curve and has decided once (a binary that reads them all in its first tick:
  # tick 1), and at least 3 ticks; then SIGINT ends it after that tick. Prints the figures as shell words.
  cat >"$WORK/timed.py" <<'PY'
import os, re, resource, signal, subprocess, sys, time
log, argv = sys.argv[1], sys.argv[2:]
start = time.monotonic()
p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
first = resumed_at = resumed_tick = None
waited = stopped = False
ticks = 0
at = []  # when each tick line came
with open(log, "w") as out:
    for line in p.stdout:
        t = time.monotonic() - start
        out.write(f"{t:9.3f} {line}")
        if "early stopping resumes once" in line:
            waited = True
        m = re.search(r" tick (\d+): ", line)
        if not m:
            continue
        ticks = int(m.group(1))
        at.append(t)
        if first is None:
            first = t
        if resumed_tick is None and "early stopping waits" not in line:
            resumed_tick, resumed_at = ticks, t
        if resumed_tick is not None and ticks >= max(3, int(os.environ.get("MIN_TICKS", "3"))) and not stopped:
            stopped = True
            p.send_signal(signal.SIGINT)
rc = p.wait()
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"first={first or 0:.3f} resumed_tick={resumed_tick or 0} resumed={resumed_at or 0:.3f} ticks={ticks} "
      f"waited={int(waited)} kb={ru.ru_maxrss} cpu={ru.ru_utime + ru.ru_stime:.2f} wall={time.monotonic() - start:.2f} rc={rc} "
      f"at={','.join(f'{x:.3f}' for x in at)}")
PY
  # measure LABEL BINARY [PRISTINE]: the study as written, afresh for each binary (a run records its stop requests).
  measure() {
    rm -rf "$WORK/study"
    cp -a "$WORK/${3:-pristine}" "$WORK/study"
    local first resumed_tick resumed ticks waited kb cpu wall rc at
    eval "$(PATH="$WORK/stub:$PATH" python3 "$WORK/timed.py" "$WORK/$1.log" "$2" run --max-ticks 1000 \
      "$WORK/study/study.toml")"
    squeue1=$(head -n 1 "$WORK/study/squeue.s" 2>/dev/null || echo 0)
    pruned=$(grep -o 'trial [0-9]*: pruned by the' "$WORK/$1.log" | sort -u | wc -l)
    printf '%-8s restart: first tick ends %.2f s after start (%.2f s without the stand-in squeue; limit 1 s: ratio %.2f)\n' \
      "$1" "$first" "$(echo "$first - $squeue1" | bc -l)" "$(echo "($first - $squeue1) / 1" | bc -l)"
    printf '%-8s early stopping decided on every curve at tick %s (%.1f s)%s; %s ticks, %.1f s CPU, %s trials pruned\n' \
      "$1" "$resumed_tick" "$resumed" "$([[ $waited == 1 ]] && echo ', waiting for the stored curves before' || echo '')" \
      "$ticks" "$cpu" "$pruned"
    printf '%-8s peak RSS %7.1f MB (limit %s MB: ratio %.2f)\n' \
      "$1" "$(echo "$kb / 1024" | bc -l)" "$LIMIT_MB" "$(echo "$kb / 1024 / $LIMIT_MB" | bc -l)"
    # Ticks 2+ (issue 42: a steady tick, mostly ingesting each log's new line): the time from one tick line
    # to the next, less the poll interval's 1 s (jittered +-0.1 s) and the stand-in squeue's own time.
    printf '%-8s ticks 2+ (tick line to tick line, less 1 s poll and the squeue stand-in):' "$1"
    paste -d' ' <(tr ',' '\n' <<<"$at") <(cat "$WORK/study/squeue.s") |
      awk 'NR > 1 && $1 != "" { printf " %.2f", $1 - prev - 1 - $2 } { prev = $1 } END { print " s" }'
  }
  measure this "$BIN"
  if [[ -n ${SLURMSWEEP_BIN_BEFORE:-} ]]; then
    measure before "$SLURMSWEEP_BIN_BEFORE" "$([[ -d $WORK/pristine-before ]] && echo pristine-before || echo pristine)"
  fi
  exit 0
fi

[[ -f $LAB/env ]] || { echo "scale_bench: no test cluster ($LAB/env); run tests/cluster/start.sh" >&2; exit 1; }
# shellcheck disable=SC1091
source "$LAB/env"

# write_study NAME TRIALS TRANSPORT ARRAYS MAX_CONCURRENT TEMPLATE_BODY
write_study() {
  local name=$1 n=$2 transport=$3 arrays=$4 maxc=$5 body=$6 dir=$WORK/$1
  mkdir -p "$dir"
  printf '#!/bin/bash\n%s\n' "$body" >"$dir/job.sbatch"
  local values
  values=$(seq -s, 1 "$n")
  local cluster
  if [[ $transport == ssh ]]; then
    cluster="transport = \"ssh\"
host = \"$SLURMSWEEP_SSH_HOST\"
port = $SLURMSWEEP_SSH_PORT
user = \"$SLURMSWEEP_SSH_USER\"
identity_file = \"$SLURMSWEEP_SSH_KEY\"
known_hosts = \"$SLURMSWEEP_SSH_KNOWN_HOSTS\""
  else
    cluster='transport = "local"'
  fi
  cat >"$dir/study.toml" <<EOF
[study]
name = "$name"

[cluster]
$cluster
partition = "$SLURMSWEEP_PARTITION"
workdir = "$dir/work"
max_concurrent = $maxc
poll_interval_s = 1
max_poll_interval_s = 1
arrays = $arrays

[job]
template = "job.sbatch"
cpus_per_task = 1
mem = "50M"
time_limit = "00:30:00"
stage = ["$ROOT/build/bin/mlp_train"]

[space]
i = [$values]
EOF
  echo "$dir/study.toml"
}

cancel() { "$BIN" cancel "$1" >/dev/null 2>&1 || true; }

# Mean of the per-tick numbers after the first (submitting) tick: "squeue/sacct" and "cluster".
tick_means() {
  awk '/ tick [0-9]+: / && !/ tick 1: / {
         for (i = 1; i <= NF; i++) { if ($i == "squeue/sacct") q += $(i-1); if ($i == "cluster") c += $(i-1) }
         n++ }
       END { if (n) printf "%d %.2f %.1f\n", n, q / n, c / n; else print "0 0 0" }' "$1"
}

if [[ $what == load || $what == all ]]; then
  echo "== scheduler load per tick (SSH, each trial logs every ~0.5 s while it runs) =="
  printf '%8s %8s %10s %14s %18s %16s\n' trials sbatch ticks "slurm cmds/tick" "cluster calls/tick" "ratio to limit 2"
  for n in 10 100 1000; do
    study=$(write_study "load$n" "$n" ssh true "$n" \
      'exec {{workdir}}/mlp_train --train-iters 100000 --log-interval 10 --sleep-ms 50 --seed {{i}}')
    log=$WORK/load$n.log
    SLURM_CONF=$SLURM_CONF "$BIN" run --max-ticks 8 "$study" >"$log" 2>&1 || true
    cancel "$study"
    read -r ticks q c < <(tick_means "$log")
    sbatch=$(sed -n 's/.*slurm commands: \([0-9]*\) sbatch.*/\1/p' "$log")
    printf '%8d %8s %10d %14.2f %18.1f %16.2f\n' "$n" "${sbatch:-?}" "$ticks" "$q" "$c" "$(echo "$q / 2" | bc -l)"
  done
  echo "(cluster calls = squeue + log reads: one remote command for up to 100 running trials' logs; at most 32 run at once here)"
fi

if [[ $what == submit || $what == all ]]; then
  echo "== submitting 1000 held trials (local transport) =="
  declare -A took
  for arrays in true false; do
    study=$(write_study "submit$arrays" 1000 local "$arrays" 1000 \
      $'#SBATCH --hold\nexec {{workdir}}/mlp_train --seed {{i}}')
    log=$WORK/submit$arrays.log
    start=$(date +%s.%N)
    SLURM_CONF=$SLURM_CONF "$BIN" run --max-ticks 1 "$study" >"$log" 2>&1 || true
    took[$arrays]=$(echo "$(date +%s.%N) - $start" | bc -l)
    sbatch=$(sed -n 's/.*slurm commands: \([0-9]*\) sbatch.*/\1/p' "$log")
    SLURM_CONF=$SLURM_CONF cancel "$study"
    printf '%-12s %6s sbatch calls %8.1f s\n' "$([[ $arrays == true ]] && echo arrays || echo one-by-one)" \
      "${sbatch:-?}" "${took[$arrays]}"
  done
  printf 'one-by-one / arrays: %.1fx\n' "$(echo "${took[false]} / ${took[true]}" | bc -l)"
fi

if [[ $what == rss || $what == all ]]; then
  echo "== peak RSS tracking 10,000 trials (10 held arrays of 1000, 3 ticks, local transport) =="
  study=$(write_study rss10k 10000 local true 10000 $'#SBATCH --hold\nexec {{workdir}}/mlp_train --seed {{i}}')
  log=$WORK/rss.log
  SLURM_CONF=$SLURM_CONF /usr/bin/time -f '%M' -o "$WORK/rss.kb" "$BIN" run --max-ticks 3 "$study" >"$log" 2>&1 || true
  SLURM_CONF=$SLURM_CONF cancel "$study"
  kb=$(tail -n 1 "$WORK/rss.kb")
  active=$(grep -o 'tick 3: [0-9]* active' "$log" | grep -o '[0-9]* active' || echo "? active")
  printf 'peak RSS %.1f MB with %s at tick 3; limit 64 MB; ratio %.2f\n' "$(echo "$kb / 1024" | bc -l)" "$active" \
    "$(echo "$kb / 1024 / 64" | bc -l)"
fi

if [[ $what == e2e ]]; then
  n=${SLURMSWEEP_E2E_TRIALS:-10000}
  max_array=$(SLURM_CONF=$SLURM_CONF scontrol show config | sed -n 's/^MaxArraySize *= *//p')
  echo "== a study of $n trivial trials to its end (local transport, all queued at once; MaxArraySize $max_array) =="
  study=$(write_study "e2e$n" "$n" local true "$n" 'exec {{workdir}}/mlp_train --train-iters 10 --log-interval 5 --seed {{i}}')
  log=$WORK/e2e.log
  start=$(date +%s.%N)
  rc=0
  SLURM_CONF=$SLURM_CONF /usr/bin/time -f '%M' -o "$WORK/e2e.kb" "$BIN" run "$study" >"$log" 2>&1 || rc=$?
  took=$(echo "$(date +%s.%N) - $start" | bc -l)
  SLURM_CONF=$SLURM_CONF cancel "$study"
  read -r ticks q c < <(tick_means "$log")
  sbatch=$(sed -n 's/.*slurm commands: \([0-9]*\) sbatch.*/\1/p' "$log" | tail -n 1)
  json=$(SLURM_CONF=$SLURM_CONF "$BIN" status --json "$study")
  completed=$(echo "$json" | python3 -c 'import json,sys; print(sum(t["state"] == "completed" for t in json.load(sys.stdin)["trials"]))')
  # Every trial once: each log holds exactly one start of the program (mlp_train prints its arguments once).
  once=0 twice=0 none=0
  while read -r k; do
    case $k in 1) once=$((once + 1)) ;; 0) none=$((none + 1)) ;; *) twice=$((twice + 1)) ;; esac
  done < <(echo "$json" | python3 -c 'import json,sys; [print(t["log_path"]) for t in json.load(sys.stdin)["trials"]]' |
           while read -r f; do grep -c '^  seed \.' "$f" 2>/dev/null || echo 0; done)
  printf 'exit %s, %.1f s wall, peak RSS %.1f MB; %s sbatch calls; %s ticks after the first: %.2f Slurm commands/tick (limit 2, ratio %.2f)\n' \
    "$rc" "$took" "$(echo "$(tail -n 1 "$WORK/e2e.kb") / 1024" | bc -l)" "${sbatch:-?}" "$ticks" "$q" "$(echo "$q / 2" | bc -l)"
  printf '%s of %s trials completed; logs with one run: %s, with none: %s, with more: %s\n' "$completed" "$n" "$once" "$none" "$twice"
fi
