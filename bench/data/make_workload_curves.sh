#!/bin/bash
# Records bench/data/workload_curves.csv: our example workload's loss curves (examples/workload/
# mlp_train.cc) over an optimizer x learning rate x width x batch grid, for stopping_bench's
# hyperparameter study. Usage: bench/data/make_workload_curves.sh [MLP_TRAIN] (default build/bin/mlp_train)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../../build/bin/mlp_train}
out=$here/workload_curves.csv
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
echo "case,variant,step,lm_loss,iteration_time_s,mem_allocated_bytes" >"$tmp"
for optimizer in sgd momentum adam; do
  for lr in 0.003 0.01 0.03 0.1; do
    for shape in "32 16" "128 16" "32 64"; do
      read -r hidden mbs <<<"$shape"
      name="mlp_${optimizer}_lr${lr}_h${hidden}_mbs${mbs}"
      echo "make_workload_curves: $name" >&2
      # Megatron-style lines: iteration N/ M | ... | elapsed time per iteration (ms): X | ... | lm loss: Y |
      "$bin" --optimizer "$optimizer" --lr "$lr" --hidden "$hidden" --micro-batch-size "$mbs" \
        --train-iters 400 --log-interval 5 --seed 7 |
        sed -n 's/.* iteration *\([0-9]*\)\/.*elapsed time per iteration (ms): *\([0-9.]*\).*lm loss: *\([0-9.Ee+-]*\).*/\1 \2 \3/p' |
        awk -v name="$name" '{ printf "%s,mlp_train,%d,%s,%.6f,\n", name, $1, $3, $2 / 1000 }' >>"$tmp"
    done
  done
done
mv "$tmp" "$out"
trap - EXIT
echo "make_workload_curves: wrote $out" >&2
