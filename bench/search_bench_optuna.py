#!/usr/bin/python3
# Optuna 3.1's TPESampler (Debian python3-optuna) for bench/search_bench, which evaluates every
# objective itself. One JSON object per line on stdin: {"space": [...], "variant": "default" |
# "multivariate", "seed": N} starts a study; {"ask": K} asks K trials at once (a batch: all asked
# before any is told) and prints their values as a JSON list of lists; {"tell": [v or null, ...]}
# tells them (null: the configuration cannot run, told as failed); {"end": true} ends the study;
# {"quit": true} exits.
import json
import sys
import warnings

import optuna
from optuna.trial import TrialState

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def make_sampler(variant, seed):
    if variant == "default":
        return optuna.samplers.TPESampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed, multivariate=True, constant_liar=True)


def suggest(trial, space):
    out = []
    for d in space:
        if d["kind"] == "float":
            out.append(trial.suggest_float(d["name"], d["lo"], d["hi"], log=d["log"]))
        elif d["kind"] == "int":
            out.append(trial.suggest_int(d["name"], int(d["lo"]), int(d["hi"]), log=d["log"]))
        else:
            out.append(trial.suggest_categorical(d["name"], list(range(d["choices"]))))
    return out


study, space, asked = None, None, []
for line in sys.stdin:
    msg = json.loads(line)
    if "quit" in msg:
        break
    if "space" in msg:
        space = msg["space"]
        study = optuna.create_study(direction="minimize", sampler=make_sampler(msg["variant"], msg["seed"]))
    elif "ask" in msg:
        asked = [study.ask() for _ in range(msg["ask"])]
        print(json.dumps([suggest(t, space) for t in asked]), flush=True)
    elif "tell" in msg:
        for t, v in zip(asked, msg["tell"]):
            if v is None:
                study.tell(t, state=TrialState.FAIL)
            else:
                study.tell(t, v)
    elif "end" in msg:
        study = None
