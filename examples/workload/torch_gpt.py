#!/usr/bin/python3
"""A small GPT trained from scratch with PyTorch on the CPU, data-parallel across processes and
nodes (torchrun, gloo): the real-framework workload of slurmsweep's examples and tests.

The corpus is generated, seeded: text from a fixed random Markov source over 32 symbols (3
successors each), so the loss has a known floor (ln 3, the source's entropy) and a run is reproducible. The knobs mirror
an LLM tuning study where a CPU allows: micro-batch size with gradient accumulation at a fixed
global batch, data-parallel size (torchrun's world size), bf16 autocast or fp32, activation
checkpointing (none or full: every block recomputed in the backward pass), Adam or SGD.

Output, from global rank 0, one JSON object per logged step (slurmsweep's metric_format "jsonl"):
  {"step": 20, "lm_loss": 2.91, "iter_time_ms": 41.2, "learning_rate": 0.001, "grad_norm": 0.8,
   "tokens_per_s": 24800.0, "max_rss_mb": 180.5}
and {"step": N, "val_lm_loss": ...} every --eval-interval steps.

Chaining: when the file given by --stop-file appears (the sbatch template creates it on Slurm's
USR1 warning), every rank stops after the current step, rank 0 saves --checkpoint and prints
"saved checkpoint PATH at step N"; a run started with an existing --checkpoint resumes from it.

Exit codes: 0 done or stopped with a checkpoint, 2 bad arguments, 4 diverged (loss not finite).
"""

import argparse
import json
import math
import os
import resource
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint as recompute

VOCAB = 32


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--micro-batch-size", type=int, default=8)
    p.add_argument("--global-batch-size", type=int, default=16)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--recompute", choices=["none", "full"], default="none")
    p.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--train-iters", type=int, default=100)
    p.add_argument("--log-interval", type=int, default=5)
    p.add_argument("--eval-interval", type=int, default=25)
    p.add_argument("--seq-length", type=int, default=32)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--checkpoint", default="", help="resume from it if it exists; save to it when stopped")
    p.add_argument("--stop-file", default="", help="stop with a checkpoint once this file exists")
    p.add_argument("--sleep-ms", type=float, default=0, help="added to each step (tests: a longer run)")
    args = p.parse_args(argv)
    if args.micro_batch_size < 1 or args.global_batch_size < 1 or args.train_iters < 1:
        p.error("batch sizes and --train-iters must be positive")
    if args.hidden % args.heads != 0:
        p.error(f"--hidden {args.hidden} is not divisible by --heads {args.heads}")
    return args


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, t, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
        shape = (b, t, self.heads, h // self.heads)
        q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(h // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, h)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, args.hidden)
        self.pos = nn.Embedding(args.seq_length, args.hidden)
        self.blocks = nn.ModuleList(Block(args.hidden, args.heads) for _ in range(args.layers))
        self.ln = nn.LayerNorm(args.hidden)
        self.head = nn.Linear(args.hidden, VOCAB, bias=False)
        self.recompute = args.recompute == "full"

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            # Full recompute: the block's activations are dropped and rebuilt in the backward pass.
            x = recompute(block, x, use_reentrant=False) if self.recompute and self.training else block(x)
        return self.head(self.ln(x))


def corpus(seed, tokens):
    """Text from a seeded Markov source: each symbol is followed by one of 3 successors, so the
    loss falls from ln 32 (3.47) towards ln 3 (1.10) as the model learns them."""
    g = torch.Generator().manual_seed(seed)
    successors = torch.randint(0, VOCAB, (VOCAB, 3), generator=g).tolist()
    choice = torch.randint(0, 3, (tokens,), generator=g).tolist()
    out = [0] * tokens
    a = 0
    for i in range(tokens):
        a = successors[a][choice[i]]
        out[i] = a
    return torch.tensor(out, dtype=torch.long)


def batch(data, size, seq, g):
    starts = torch.randint(0, data.numel() - seq - 1, (size,), generator=g)
    x = torch.stack([data[s : s + seq] for s in starts.tolist()])
    y = torch.stack([data[s + 1 : s + seq + 1] for s in starts.tolist()])
    return x, y


def emit(record):
    print(json.dumps(record), flush=True)


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(1)  # one core per process: data parallelism is what the study varies
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    per_step = args.micro_batch_size * world
    if args.global_batch_size % per_step != 0:
        if rank == 0:
            print(
                f"torch_gpt: global batch {args.global_batch_size} is not a multiple of micro-batch "
                f"{args.micro_batch_size} x data-parallel size {world}",
                file=sys.stderr,
            )
        return 2
    accumulation = args.global_batch_size // per_step

    torch.manual_seed(args.seed)  # same initial weights on every rank
    model = GPT(args)
    ddp = nn.parallel.DistributedDataParallel(model) if distributed else model
    if args.optimizer == "adam":
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=args.lr * 10, momentum=0.9)
    data = corpus(args.seed, 60000)
    train, val = data[:50000], data[50000:]

    start = 0
    if args.checkpoint and os.path.exists(args.checkpoint):
        state = torch.load(args.checkpoint)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["step"]
        if rank == 0:
            print(f"resumed from checkpoint {args.checkpoint} at step {start}", flush=True)
    if rank == 0:
        params = sum(p.numel() for p in model.parameters())
        print(
            f"torch_gpt: {params} parameters, data-parallel {world}, micro-batch {args.micro_batch_size} x "
            f"{accumulation} accumulation steps = global batch {args.global_batch_size}, {args.precision}, "
            f"recompute {args.recompute}, {args.optimizer}",
            flush=True,
        )

    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16")
    tokens_per_step = args.global_batch_size * args.seq_length
    last_log, last_log_time = start, time.perf_counter()
    for step in range(start + 1, args.train_iters + 1):
        # Each rank draws its own micro-batches, reproducibly from (seed, step, rank).
        g = torch.Generator().manual_seed(args.seed * 1_000_003 + step * 1009 + rank)
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for micro in range(accumulation):
            x, y = batch(train, args.micro_batch_size, args.seq_length, g)
            last = micro == accumulation - 1
            # Gradients are all-reduced once per step, on the last micro-batch.
            sync = ddp.no_sync() if distributed and not last else _Null()
            with sync:
                with autocast:
                    logits = ddp(x)
                loss = F.cross_entropy(logits.float().view(-1, VOCAB), y.view(-1)) / accumulation
                loss.backward()
            total += loss.item()
        grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        opt.step()
        if args.sleep_ms > 0:
            time.sleep(args.sleep_ms / 1000)
        loss_t = torch.tensor([total / world * 1.0])
        if distributed:
            dist.all_reduce(loss_t)  # mean over ranks (each term already divided by world)
        loss_value = float(loss_t[0]) if distributed else total
        if not math.isfinite(loss_value):
            if rank == 0:
                emit({"step": step, "lm_loss": loss_value})
                print(f"torch_gpt: loss diverged at step {step}", file=sys.stderr, flush=True)
            return 4
        if rank == 0 and (step % args.log_interval == 0 or step == args.train_iters):
            now = time.perf_counter()
            ms = (now - last_log_time) * 1000 / (step - last_log)
            rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            emit(
                {
                    "step": step,
                    "lm_loss": round(loss_value, 6),
                    "iter_time_ms": round(ms, 3),
                    "learning_rate": opt.param_groups[0]["lr"],
                    "grad_norm": round(grad_norm, 6),
                    "tokens_per_s": round(tokens_per_step * 1000 / ms, 1),
                    "max_rss_mb": round(rss_mb, 1),
                }
            )
            last_log, last_log_time = step, now
        if args.eval_interval > 0 and step % args.eval_interval == 0:
            model.eval()
            with torch.no_grad(), autocast:
                vx, vy = batch(val, 16, args.seq_length, torch.Generator().manual_seed(7))
                vloss = F.cross_entropy(model(vx).float().view(-1, VOCAB), vy.view(-1)).item()
            model.train()
            if rank == 0:
                emit({"step": step, "val_lm_loss": round(vloss, 6)})
        # Stop requested (Slurm's warning before the time limit): all ranks agree, rank 0 saves.
        stop = torch.tensor([1.0 if args.stop_file and os.path.exists(args.stop_file) else 0.0])
        if distributed:
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop[0] > 0 and step < args.train_iters:
            if rank == 0 and args.checkpoint:
                tmp = args.checkpoint + ".tmp"
                torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}, tmp)
                os.replace(tmp, args.checkpoint)  # a kill during the save keeps the previous one
                print(f"saved checkpoint {args.checkpoint} at step {step}", flush=True)
            if distributed:
                dist.barrier()
            return 0
    if distributed:
        dist.destroy_process_group()
    return 0


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
