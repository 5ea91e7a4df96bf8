#!/usr/bin/env python3
"""A stand-in for your own trainer (README: "Your own trainer"): one JSON object per step on stdout.

Keys slurmsweep reads from JSON lines: a step (`step`), seconds since the start (`time`), the total number of
steps (`total_steps`, for the ETA) and any metric (`loss` here, the study's objective).
"""
import argparse
import json
import random
import time

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, required=True)
parser.add_argument("--batch", type=int, required=True)
parser.add_argument("--steps", type=int, default=40)
args = parser.parse_args()

random.seed(args.batch)
start = time.time()
for step in range(1, args.steps + 1):
    time.sleep(0.01 * args.batch / 8)
    loss = 2.0 + 3.0 / (1.0 + args.lr * 40 * step) + 0.02 * random.random()
    print(json.dumps({"step": step, "total_steps": args.steps, "loss": loss, "time": time.time() - start}), flush=True)
