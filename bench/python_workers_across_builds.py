#!/usr/bin/python3
"""One Python dataset in worker processes, across feedline builds (and torch),
in alternating rounds: is a change to the process path faster or slower than
an earlier commit?

The dataset is bench/python_workers_vs_torch.py's TextDataset (a line
tokenized in pure Python into int64[256], holding the GIL), 20,000 samples,
batch 64, 2 workers and otherwise default arguments (feedline picks worker
processes for a Python dataset; no persistent workers, so each epoch starts
its processes). Each arm runs in a fresh interpreter per round: 3 epochs,
each with a new loader, the best of epochs 2 and 3 counted (the first warms
the page cache and the imports). The order of the arms reverses every
round. Printed: each arm's median samples/s and range, the median of the
per-round ratios of the first arm to each other one and how many rounds the
first arm won, and the CPU time per sample of the process tree (the
process's own and its reaped children's; an arm whose workers are not
reaped by the end of the epoch shows less than it spent).

Each feedline arm is LABEL=DIR, DIR a build's python/ folder (build/python);
the folder's libfeedline.so.0, if one was copied there, is loaded instead of
the one the module's RUNPATH names, so a copy of an earlier build can be
compared with the current one. "torch" adds torch.utils.data.DataLoader
(the interpreter's torch).

Usage: /usr/bin/python3 bench/python_workers_across_builds.py [--rounds 9]
           new=build/python old=/path/to/old/build/python [torch]
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r'''
import gc, json, os, sys, time
sys.path.insert(0, sys.argv[2])
import python_workers_vs_torch as bench
dataset = bench.TextDataset(20000)
if sys.argv[1] == "torch":
    import torch
    make = lambda: torch.utils.data.DataLoader(dataset, batch_size=64, num_workers=2)
else:
    import feedline
    make = lambda: feedline.DataLoader(dataset, batch_size=64, num_workers=2)
rates, cpus = [], []
for epoch in range(3):
    before = os.times()
    loader = make()
    start = time.perf_counter()
    samples = 0
    for batch in loader:
        samples += len(batch[1])
    rates.append(samples / (time.perf_counter() - start))
    del loader
    gc.collect()
    after = os.times()
    spent = sum(getattr(after, f) - getattr(before, f)
                for f in ("user", "system", "children_user", "children_system"))
    cpus.append(spent / samples * 1e6)
print(json.dumps([max(rates[1:]), min(cpus[1:])]))
'''


def run(kind, path, module_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = path or module_path
    if path and os.path.exists(os.path.join(path, "libfeedline.so.0")):
        env["LD_LIBRARY_PATH"] = path
    done = subprocess.run([sys.executable, "-c", CHILD, kind, HERE], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{kind} {path}: exit {done.returncode}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("arms", nargs="+", help="LABEL=PYTHON_DIR, or torch")
    args = parser.parse_args()
    arms = []
    for arm in args.arms:
        if arm == "torch":
            arms.append(("torch", "torch", ""))
        else:
            label, _, path = arm.partition("=")
            if not path:
                parser.error(f"an arm is LABEL=DIR or torch, got {arm!r}")
            arms.append((label, "feedline", os.path.abspath(path)))
    # torch's arm imports the bench file, which imports feedline: the first build's.
    module_path = next((path for _, kind, path in arms if kind == "feedline"), "")
    rates, cpus = collections.defaultdict(list), collections.defaultdict(list)
    for r in range(args.rounds):
        for label, kind, path in (arms if r % 2 == 0 else arms[::-1]):
            rate, cpu = run(kind, path, module_path)
            rates[label].append(rate)
            cpus[label].append(cpu)
        print(f"round {r + 1}: " + ", ".join(f"{label} {rates[label][-1]:,.0f}"
                                             for label, _, _ in arms), flush=True)
    first = arms[0][0]
    for label, _, _ in arms:
        v = rates[label]
        print(f"{label}: median {statistics.median(v):,.0f} samples/s ({min(v):,.0f}-{max(v):,.0f}),"
              f" CPU {statistics.median(cpus[label]):.1f} us/sample")
    for label, _, _ in arms[1:]:
        ratios = [a / b for a, b in zip(rates[first], rates[label])]
        wins = sum(ratio > 1 for ratio in ratios)
        print(f"{first} / {label}: median of the rounds' ratios {statistics.median(ratios):.3f},"
              f" {first} faster in {wins} of {len(ratios)}")


if __name__ == "__main__":
    main()
