#!/usr/bin/python3
"""The loader's own overhead, side by side with torch.utils.data.DataLoader.

The job: a trivial in-memory dataset whose sample i is its int64 index,
batch 256, num_workers 0 and 2. torch runs its DataLoader (Debian's
python3-torch); feedline runs bench/loader_overhead_benchmark. Both run in
this one invocation, several rounds each; the medians and their ratio are
printed as a markdown table.

Usage: bench/loader_overhead_vs_torch.py [--build build] [--rounds 3]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

from machine import cpu_model  # bench/machine.py


class IndexDataset(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def torch_rate(workers, samples):
    loader = DataLoader(IndexDataset(samples), batch_size=256, num_workers=workers,
                        persistent_workers=workers > 0)
    for _ in loader:  # warm-up epoch: starts the workers
        break
    start = time.perf_counter()
    seen = 0
    for batch in loader:
        seen += len(batch)
    return seen / (time.perf_counter() - start)


def feedline_rates(build):
    binary = os.path.join(build, "bench", "loader_overhead_benchmark")
    out = subprocess.run([binary, "--benchmark_format=json", "--benchmark_filter=shuffle:0"],
                         check=True, capture_output=True, text=True).stdout
    rates = {}
    for b in json.loads(out)["benchmarks"]:
        workers = int(b["name"].split("workers:")[1].split("/")[0])
        rates[workers] = b["items_per_second"]
    return rates


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--torch-samples", type=int, default=1 << 19)
    args = parser.parse_args()
    torch.set_num_threads(1)

    # Other work on the machine moves these figures: the load is printed with them.
    load_before = os.getloadavg()[0]
    results = {0: {"torch": [], "feedline": []}, 2: {"torch": [], "feedline": []}}
    for _ in range(args.rounds):
        for workers in (0, 2):
            results[workers]["torch"].append(torch_rate(workers, args.torch_samples))
        for workers, rate in feedline_rates(args.build).items():
            if workers in results:
                results[workers]["feedline"].append(rate)

    print(f"Loader overhead, batch 256, trivial dataset; {datetime.date.today()}, "
          f"{os.cpu_count()} cores ({cpu_model()}), torch {torch.__version__}, "
          f"median of {args.rounds} rounds; load average {load_before:.2f} before, "
          f"{os.getloadavg()[0]:.2f} after")
    print()
    print("| num_workers | torch samples/s | feedline samples/s | feedline / torch |")
    print("|---:|---:|---:|---:|")
    for workers in (0, 2):
        t = statistics.median(results[workers]["torch"])
        f = statistics.median(results[workers]["feedline"])
        print(f"| {workers} | {t / 1e6:.2f} M | {f / 1e6:.2f} M | {f / t:.0f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
