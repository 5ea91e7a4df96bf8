#!/usr/bin/python3
# Times Optuna 3.1's trial.report (Debian python3-optuna) on an RDB storage in SQLite, for
# bench/ingest_bench, which compares it with its own ingestion of the same points. Reads its JSON
# (storage URL, number of trials, the points as [trial index, step, value] in reporting order);
# prints how long the reports took. Study creation and study.ask() are set-up, not timed.
import json
import sys
import time

import optuna
import sqlalchemy


def main():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with open(sys.argv[1]) as f:
        data = json.load(f)
    study = optuna.create_study(study_name="ingest_bench", storage=data["storage"], direction="minimize")
    trials = [study.ask() for _ in range(data["trials"])]
    points = data["points"]
    start = time.perf_counter()
    for i, step, value in points:
        trials[i].report(value, step)
    seconds = time.perf_counter() - start
    json.dump({"optuna_version": optuna.__version__, "sqlalchemy_version": sqlalchemy.__version__,
               "points": len(points), "seconds": seconds}, sys.stdout)


if __name__ == "__main__":
    main()
