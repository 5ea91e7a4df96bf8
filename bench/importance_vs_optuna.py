#!/usr/bin/python3
# Parameter importance, slurmsweep's against Optuna's, on the same trials. Reads a study's
# `slurmsweep report --csv DIR` output (or bench/importance_bench's): DIR/trials.csv (columns
# version 2: every parameter, state, final_objective), DIR/importance.csv (slurmsweep's
# importances; version 2's step column) and, when importance.csv has a step, DIR/metrics.csv.
# Builds an Optuna study of the same trials with the same values (numbers: a float range, log
# where importance.csv says the study sampled it so; text: categorical): without a step, the
# completed trials' final values; with one (trials stopped early were compared at equal step),
# every completed, pruned or cancelled trial that reached the step, at its smoothed objective
# there (the mean of its last 10 points up to the step, as base/final_objective.h smooths). Runs
# optuna.importance.get_param_importances (fANOVA by default), prints both side by side, the
# order of each, and their rank agreement (Spearman's rho of the two importances over the
# parameters). Several DIRs: a summary line at the end. Exits 1 when a study's top parameter
# differs (0 when every one agrees, 2 on bad input). Without python3-sklearn (Debian 12 cannot
# install it beside libboost1.81-dev) Optuna's fANOVA fits its random forest with forest_shim/.
#   bench/importance_vs_optuna.py DIR [DIR ...] [--evaluator fanova|mdi] [--seed N] [--objective NAME]
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

WINDOW = 10  # base/final_objective.h: kFinalWindow


class BadInput(Exception):
    pass


def ranks(xs):
    """Ranks 1..n, ties the mean of their ranks."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va > 0 and vb > 0 else float("nan")


def number(v):
    try:
        return float(v)
    except ValueError:
        return None


def values_at_step(csv_dir, trials, step, objective):
    """Each trial's smoothed objective at `step`, for the trials whose last point reached it."""
    points = {}
    with open(os.path.join(csv_dir, "metrics.csv"), newline="") as f:
        for row in csv.DictReader(f):
            if row["name"] == objective:
                points.setdefault(row["trial_id"], []).append((int(row["step"]), float(row["value"])))
    out = []
    for t in trials:
        if t["state"] not in ("completed", "pruned", "cancelled"):
            continue
        p = sorted(points.get(t["trial_id"], []))
        if not p or p[-1][0] < step:
            continue
        upto = [v for s, v in p if s <= step][-WINDOW:]
        if upto:
            out.append((t, sum(upto) / len(upto)))
    return out


def compare(csv_dir, args):
    try:
        with open(os.path.join(csv_dir, "importance.csv"), newline="") as f:
            ours = list(csv.DictReader(f))
        with open(os.path.join(csv_dir, "trials.csv"), newline="") as f:
            trials = list(csv.DictReader(f))
    except OSError as e:
        raise BadInput(str(e))
    if not ours:
        raise BadInput(f"{csv_dir}/importance.csv has no rows: too few trials")
    params = [r["param"] for r in ours]
    log = {r["param"]: r["log"] == "true" for r in ours}
    step = int(ours[0]["step"]) if ours[0].get("step") else None
    if step is None:
        done = [(t, float(t["final_objective"])) for t in trials
                if t["state"] == "completed" and t["final_objective"] not in ("", "nan")]
        basis = f"{len(done)} completed trials' final values"
    else:
        done = values_at_step(csv_dir, trials, step, args.objective)
        stopped = sum(1 for t, _ in done if t["state"] != "completed")
        basis = f"{len(done)} trials at step {step} ({stopped} stopped early)"
    if len(done) != int(ours[0]["trials"]):
        raise BadInput(f"{csv_dir}: {len(done)} trials here, importance.csv compared {ours[0]['trials']}")

    dists = {}
    for p in params:
        values = [t[p] for t, _ in done]
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
    for t, value in done:
        ps = {p: (float(t[p]) if isinstance(d, optuna.distributions.FloatDistribution) else t[p])
              for p, d in dists.items()}
        study.add_trial(optuna.trial.create_trial(params=ps, distributions=dists, value=value))
    if args.evaluator == "fanova":
        evaluator = optuna.importance.FanovaImportanceEvaluator(seed=args.seed)
    else:
        evaluator = optuna.importance.MeanDecreaseImpurityImportanceEvaluator(seed=args.seed)
    theirs = optuna.importance.get_param_importances(study, evaluator=evaluator)

    share = {r["param"]: float(r["share"]) if r["share"] else 0.0 for r in ours}  # empty: not estimable
    print(f"{csv_dir}: {basis}; importance (share of the total)")
    print(f"{'parameter':<24} {'slurmsweep':>11} {'optuna ' + args.evaluator:>14}")
    for p in params:
        shown = f"{share[p]:.3f}" if ours[params.index(p)]["share"] else "n/e"
        print(f"{p:<24} {shown:>11} {theirs.get(p, 0.0):>14.3f}")
    rho = spearman([share[p] for p in params], [theirs.get(p, 0.0) for p in params])
    top_ours = params[0] if any(share.values()) else None  # every share 0: no top
    top_theirs = next(iter(theirs)) if theirs else None
    same = top_ours == top_theirs
    print(f"order: slurmsweep {' > '.join(params)}; optuna {' > '.join(theirs)}; Spearman rho {rho:.2f}")
    shown_top = top_ours or "none (every share 0)"
    print(f"top parameter: slurmsweep {shown_top}, optuna {top_theirs}: {'same' if same else 'DIFFERENT'}")
    return same, rho


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv_dirs", nargs="+")
    ap.add_argument("--evaluator", choices=["fanova", "mdi"], default="fanova")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--objective", default="lm_loss", help="the objective's metric name in metrics.csv")
    args = ap.parse_args()
    print(f"forest: {FOREST}")
    results = []
    for d in args.csv_dirs:
        try:
            results.append(compare(d, args))
        except BadInput as e:
            print(f"importance_vs_optuna: {e}", file=sys.stderr)
            return 2
    if len(results) > 1:
        agree = sum(1 for same, _ in results if same)
        rhos = [rho for _, rho in results if rho == rho]
        print(f"summary: top parameter the same in {agree} of {len(results)} studies; "
              f"Spearman rho mean {sum(rhos) / len(rhos):.2f}, min {min(rhos):.2f}")
    return 0 if all(same for same, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
