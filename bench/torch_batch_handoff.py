#!/usr/bin/python3
"""How a batch's fields reach torch: through the loader's own DLPack capsules
(BatchArray, what feedline.torch does) against numpy arrays over the batch
and torch.from_numpy (what it did before), in one build.

The job makes the hand-off a large share of each step: a Python dataset of
small samples (float32 [3, 32, 32] and an int label, the same array every
time), batch 16, 2 worker processes, persistent workers. Both loaders are
feedline.torch.DataLoader; the second has its front-end policy's
imports_through_dlpack turned off (a private switch, for this comparison
only). Rounds alternate the order; printed: each arm's median samples/s and
range, and the median of the rounds' ratios.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/torch_batch_handoff.py [--rounds 9]
"""
import argparse
import dataclasses
import statistics
import time

import numpy as np

import feedline.torch


class Small:
    def __init__(self, n):
        self.n = n
        self.x = np.ones((3, 32, 32), np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.x, i


def make(dlpack, samples):
    loader = feedline.torch.DataLoader(Small(samples), batch_size=16, num_workers=2,
                                       persistent_workers=True)
    loader._frontend = dataclasses.replace(loader._frontend, imports_through_dlpack=dlpack)
    return loader


def epoch(loader):
    start = time.perf_counter()
    n = 0
    for x, _ in loader:
        n += x.shape[0]
    return n / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--samples", type=int, default=8192)
    args = parser.parse_args()
    loaders = {"dlpack": make(True, args.samples), "numpy": make(False, args.samples)}
    for loader in loaders.values():
        epoch(loader)  # the workers start
    rates = {name: [] for name in loaders}
    for r in range(args.rounds):
        for name in (list(loaders) if r % 2 == 0 else list(loaders)[::-1]):
            rates[name].append(epoch(loaders[name]))
    for name, values in rates.items():
        print(f"{name:7s} median {statistics.median(values):9.0f} samples/s "
              f"(range {min(values):.0f}-{max(values):.0f})")
    ratio = statistics.median(a / b for a, b in zip(rates["dlpack"], rates["numpy"]))
    wins = sum(a > b for a, b in zip(rates["dlpack"], rates["numpy"]))
    print(f"dlpack / numpy: median of the rounds' ratios {ratio:.3f}, faster in {wins} of "
          f"{args.rounds}")


if __name__ == "__main__":
    main()
