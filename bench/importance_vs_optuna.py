#!/usr/bin/python3
# Parameter importance, slurmsweep's against Optuna's, on the same trials. Reads a study's
# `slurmsweep report --csv DIR` output: DIR/trials.csv (columns version 2: every parameter, state,
# final_objective) and DIR/importance.csv (slurmsweep's importances). Builds an Optuna study of the
# completed trials (Debian's python3-optuna; its default evaluator, fANOVA, needs python3-sklearn)
# with each parameter's distribution (numbers: a float range, log where importance.csv says the
# study sampled it so; text: categorical) and their final values, runs
# optuna.importance.get_param_importances, prints both side by side and exits 1 when the top
# parameter differs (0 when it agrees, 2 on bad input). Without python3-sklearn (Debian 12 cannot
# install it beside libboost1.81-dev) Optuna's fANOVA fits its random forest with forest_shim/.
#   bench/importance_vs_optuna.py DIR [--evaluator fanova|mdi] [--seed N]
import argparse
import csv
import os
import sys

try:
    import sklearn  # noqa: F401  (Optuna's fANOVA fits its forest with it)
    FOREST = "scikit-learn"
except ImportError:
    # Debian 12's python3-sklearn conflicts with the libboost1.81-dev slurmsweep builds with
    # (python3-scipy -> python3-pythran -> libboost1.74-dev): fit the forest with the numpy
    # stand-in in forest_shim/; Optuna's own code still does the importance decomposition.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "forest_shim"))
    FOREST = "bench/forest_shim (numpy CART forest; scikit-learn not installed)"

import optuna


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv_dir")
    ap.add_argument("--evaluator", choices=["fanova", "mdi"], default="fanova")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    try:
        with open(os.path.join(args.csv_dir, "importance.csv"), newline="") as f:
            ours = list(csv.DictReader(f))
        with open(os.path.join(args.csv_dir, "trials.csv"), newline="") as f:
            trials = list(csv.DictReader(f))
    except OSError as e:
        print(f"importance_vs_optuna: {e}", file=sys.stderr)
        return 2
    if not ours:
        print("importance_vs_optuna: importance.csv has no rows: too few completed trials", file=sys.stderr)
        return 2
    params = [r["param"] for r in ours]
    log = {r["param"]: r["log"] == "true" for r in ours}
    done = [t for t in trials if t["state"] == "completed" and t["final_objective"] not in ("", "nan")]

    def number(v):
        try:
            return float(v)
        except ValueError:
            return None

    dists = {}
    for p in params:
        values = [t[p] for t in done]
        nums = [number(v) for v in values]
        if all(n is not None for n in nums):
            lo, hi = min(nums), max(nums)
            if lo == hi:
                continue  # one value: no importance either way
            dists[p] = optuna.distributions.FloatDistribution(lo, hi, log=log[p] and lo > 0)
        else:
            dists[p] = optuna.distributions.CategoricalDistribution(sorted(set(values)))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    for t in done:
        ps = {p: (float(t[p]) if isinstance(d, optuna.distributions.FloatDistribution) else t[p])
              for p, d in dists.items()}
        study.add_trial(optuna.trial.create_trial(params=ps, distributions=dists, value=float(t["final_objective"])))
    if args.evaluator == "fanova":
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=args.seed)
    else:
        evaluator = optuna.importance.MeanDecreaseImpurityImportanceEvaluator(seed=args.seed)
    theirs = optuna.importance.get_param_importances(study, evaluator=evaluator)

    print(f"{len(done)} completed trials; importance (share of the total); forest: {FOREST}")
    print(f"{'parameter':<24} {'slurmsweep':>11} {'optuna ' + args.evaluator:>14}")
    for p in params:
        share = next(r['share'] for r in ours if r['param'] == p)  # empty: not estimable
        print(f"{p:<24} {float(share) if share else float('nan'):>11.3f} {theirs.get(p, 0.0):>14.3f}")
    top_ours = params[0]
    top_theirs = next(iter(theirs)) if theirs else None
    same = top_ours == top_theirs
    print(f"top parameter: slurmsweep {top_ours}, optuna {top_theirs}: {'same' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
