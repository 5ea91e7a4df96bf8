#!/usr/bin/python3
# Runs Optuna 3.1's pruners (Debian python3-optuna) on the curves bench/stopping_bench replays, which
# scores them with its own rules' code. Reads its JSON (per study: each trial's loss at the end of
# each time bucket, the random orders); prints the bucket at which each trial was pruned.
import json
import sys

import optuna
from optuna.trial import TrialState

# Defaults as a user gets them, and settings matched to ours (first rung or grace at about the
# same fraction of the budget, eta 3) so a difference is not just a badly chosen parameter.
PRUNERS = {
    "MedianPruner()": lambda n: optuna.pruners.MedianPruner(),
    "MedianPruner(warmup=10%)": lambda n: optuna.pruners.MedianPruner(n_warmup_steps=n // 10),
    "SuccessiveHalvingPruner(r=n/27,eta=3)": lambda n: optuna.pruners.SuccessiveHalvingPruner(
        min_resource=max(1, round(n / 27)), reduction_factor=3),
}


def all_at_once(make, name, values, n):
    """Every trial starts together; at each bucket each live trial reports and asks to be pruned.
    values[i] runs to trial i's own end; its objective is its loss at bucket n (the budget)."""
    study = optuna.create_study(study_name=name, direction="minimize", pruner=make(n))
    trials = [study.ask() for _ in values]
    stop = [len(v) for v in values]
    live = [True] * len(values)
    for step in range(1, max(len(v) for v in values) + 1):
        for i, trial in enumerate(trials):
            if not live[i]:
                continue
            trial.report(values[i][step - 1], step)
            if step == len(values[i]):
                live[i] = False
                study.tell(trial, values[i][n - 1])
            elif trial.should_prune():
                live[i] = False
                stop[i] = step
                study.tell(trial, state=TrialState.PRUNED)
    return stop


def one_after_another(make, name, values, n, order):
    """The usual Optuna loop: one trial at a time, in `order`, each to its own end unless pruned."""
    study = optuna.create_study(study_name=name, direction="minimize", pruner=make(n))
    stop = [len(v) for v in values]
    for i in order:
        trial = study.ask()
        for step in range(1, len(values[i]) + 1):
            trial.report(values[i][step - 1], step)
            if step < len(values[i]) and trial.should_prune():
                stop[i] = step
                break
        if stop[i] < len(values[i]):
            study.tell(trial, state=TrialState.PRUNED)
        else:
            study.tell(trial, values[i][n - 1])
    return stop


def main():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with open(sys.argv[1]) as f:
        data = json.load(f)
    n = data["buckets"]
    out = {"optuna_version": optuna.__version__, "pruners": []}
    for label, make in PRUNERS.items():
        result = {"name": label, "all_at_once": {}, "sequential": {}}
        for study in data["studies"]:
            values = [t["values"] for t in study["trials"]]
            result["all_at_once"][study["name"]] = all_at_once(make, study["name"], values, n)
            result["sequential"][study["name"]] = [
                one_after_another(make, study["name"], values, n, order) for order in study["orders"]]
        out["pruners"].append(result)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
