#!/usr/bin/python3
"""A user's collate_fn over a Python map-style dataset in 2 worker processes.

Two jobs, each a Python dataset class handed unchanged to every loader:

  detection  sample i: a 3xSxS uint8 image and a variable number (1..K) of
             float32 boxes [n, 4]; the collate stacks the images into one
             array and keeps the boxes as a Python list of arrays (what
             detection models take)
  padding    sample i: an int64 array of token ids of variable length; the
             collate pads them to the batch's longest into int64 [B, L]
             and returns the lengths

Loaders, all with 2 worker processes, persistent workers, batch 64 (or
--batch):

  feedline   feedline.torch.DataLoader from this checkout (--pythonpath,
             default: build/python beside this script)
  main       the same from another build (--baseline-pythonpath, e.g.
             /work/main/build/python); left out when not given
  torch      torch.utils.data.DataLoader

Each loader runs in its own interpreter (the two feedline builds cannot
share one), which builds the dataset, makes its loader, runs a warm-up epoch
and then one timed epoch per round when the driver asks for it; rounds
alternate between the loaders (the order turns each round) so that every
loader sees the same machine state. Printed per job: the median samples/s
over the rounds, the range, and ratios against torch and against main.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/collate_in_worker.py
       [--rounds 7] [--samples 4096] [--image-size 224] [--batch 64]
       [--baseline-pythonpath /work/main/build/python] [--jobs detection,padding]
Tiny check: --rounds 2 --samples 256 --image-size 32
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS = 2


class DetectionDataset:
    """Sample i: (image uint8 [3, S, S], boxes float32 [n, 4]), n in 1..16."""

    def __init__(self, n, size):
        self.n = n
        self.size = size

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        rng = np.random.default_rng(index)
        image = rng.integers(0, 256, (3, self.size, self.size), dtype=np.uint8)
        boxes = rng.random((int(rng.integers(1, 17)), 4), dtype=np.float32) * self.size
        return image, boxes


def detection_collate(samples):
    images = np.stack([image for image, _ in samples])
    boxes = [b for _, b in samples]
    return images, boxes


class TokenDataset:
    """Sample i: 16..512 token ids, int64 (a tokenizer's output as an array:
    a plain Python list of ints would be a tuple of that many fields to
    feedline, and lists of different lengths do not make one structure)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        rng = np.random.default_rng(index)
        return rng.integers(2, 30000, int(rng.integers(16, 513)), dtype=np.int64)


def padding_collate(samples):
    longest = max(len(s) for s in samples)
    out = np.zeros((len(samples), longest), dtype=np.int64)
    for row, tokens in enumerate(samples):
        out[row, :len(tokens)] = tokens
    return out, np.array([len(s) for s in samples], dtype=np.int64)


JOBS = {
    "detection": lambda args: (DetectionDataset(args.samples, args.image_size), detection_collate),
    "padding": lambda args: (TokenDataset(args.samples), padding_collate),
}


def batch_rows(batch):
    first = batch[0]
    return len(first)


def serve(args):
    """One loader in this interpreter: a warm-up epoch, then one timed epoch
    per line 'epoch' on stdin; each answer is a JSON line on stdout."""
    if args.loader == "torch":
        import torch.utils.data as tud
        make = tud.DataLoader
    else:
        import feedline.torch
        make = feedline.torch.DataLoader
    dataset, collate = JOBS[args.job](args)
    loader = make(dataset, batch_size=args.batch, num_workers=WORKERS, collate_fn=collate,
                  persistent_workers=True)

    def epoch():
        start = time.perf_counter()
        samples = 0
        for batch in loader:
            samples += batch_rows(batch)
        return samples, time.perf_counter() - start

    samples, _ = epoch()  # warm-up: the workers start
    if samples != len(dataset):
        raise SystemExit(f"{args.loader}: the warm-up epoch gave {samples} samples of "
                         f"{len(dataset)}")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip() != "epoch":
            break
        samples, seconds = epoch()
        print(json.dumps({"samples": samples, "seconds": seconds}), flush=True)


def start_loader(name, pythonpath, job, args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, os.path.abspath(__file__), "--serve", "--loader", name, "--job", job,
           "--samples", str(args.samples), "--image-size", str(args.image_size),
           "--batch", str(args.batch)]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    answer = proc.stdout.readline()
    if not answer:
        raise SystemExit(f"the {name} loader ({job}) exited before its warm-up epoch ended "
                         f"(PYTHONPATH={pythonpath!r})")
    return proc


def timed_epoch(proc):
    proc.stdin.write("epoch\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    return answer["samples"] / answer["seconds"]


def run_job(job, loaders, args):
    procs = {name: start_loader(name, path, job, args) for name, path in loaders.items()}
    rates = {name: [] for name in loaders}
    names = list(loaders)
    try:
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                rates[name].append(timed_epoch(procs[name]))
    finally:
        for proc in procs.values():
            proc.stdin.close()
            proc.wait()
    medians = {name: statistics.median(v) for name, v in rates.items()}
    print(f"\n{job}: {args.samples} samples, batch {args.batch}, {WORKERS} worker processes, "
          f"{args.rounds} alternating rounds" +
          (f", images 3x{args.image_size}x{args.image_size} uint8" if job == "detection" else ""))
    for name in names:
        line = (f"  {name:9s} median {medians[name]:10.0f} samples/s "
                f"(range {min(rates[name]):.0f}-{max(rates[name]):.0f})")
        if name != "torch" and "torch" in medians:
            line += f"  {medians[name] / medians['torch']:.2f}x torch"
        if name == "feedline" and "main" in medians:
            line += f"  {medians[name] / medians['main']:.2f}x main"
        print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--pythonpath", default=os.path.join(HERE, os.pardir, "build", "python"),
                        help="where this checkout's feedline is built (default: build/python)")
    parser.add_argument("--baseline-pythonpath", default=None,
                        help="another feedline build to compare with (e.g. main's build/python)")
    parser.add_argument("--jobs", default="detection,padding")
    parser.add_argument("--no-torch", action="store_true", help="leave torch's DataLoader out")
    # Internal: one loader served to the driver.
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--loader", help=argparse.SUPPRESS)
    parser.add_argument("--job", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args)
        return
    jobs = [j for j in args.jobs.split(",") if j]
    unknown = [j for j in jobs if j not in JOBS]
    if unknown:
        parser.error(f"--jobs: unknown job {unknown[0]!r} (known: {', '.join(JOBS)})")
    if args.rounds < 1 or args.samples < args.batch:
        parser.error("--rounds must be >= 1 and --samples >= --batch")
    loaders = {"feedline": os.path.abspath(args.pythonpath)}
    if args.baseline_pythonpath:
        if not os.path.isdir(os.path.join(args.baseline_pythonpath, "feedline")):
            parser.error(f"--baseline-pythonpath {args.baseline_pythonpath}: no feedline "
                         "package there (give a build's python folder)")
        loaders["main"] = os.path.abspath(args.baseline_pythonpath)
    if not args.no_torch:
        loaders["torch"] = ""
    for job in jobs:
        run_job(job, loaders, args)


if __name__ == "__main__":
    main()
