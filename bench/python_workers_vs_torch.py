#!/usr/bin/python3
"""Python datasets in worker processes, side by side with torch.utils.data.

One Python dataset class per job, handed unchanged to feedline.DataLoader
and to torch.utils.data.DataLoader (Debian's python3-torch), batch 64:

  text   tokenizes a line in pure Python into int64[256] (holds the GIL)
  image  PIL open + convert("RGB") + resize to 224 + numpy float32 CHW
         (JPEGs synthesized with PIL into a temporary directory)

Loaders: feedline with worker processes (the "auto" choice for a Python
dataset), the same with prefetch_factor=1 (2 batch slots instead of 4: less
memory) and with use_shared_memory=False, feedline with worker
threads, feedline with 0 workers, and torch with worker processes. All use
persistent workers; after a warm-up epoch each, epochs alternate between the
loaders round by round so that all see the same machine state. Printed: the
median samples/s over the rounds, ratios against torch and against feedline's
0-worker rate, the median CPU time of the process tree per sample (on a
machine that other work keeps busy, the rate swings with that work; the
CPU spent per sample much less), the median time to the first batch of a
new loader (cold: processes start), and the memory of the whole process
tree: each loader runs
one epoch alone in a fresh interpreter, which samples the sum of the
proportional set sizes (PSS) of itself and its workers at every batch; the
largest sample is printed. It is measured twice: with a loop that does not
look at the batches, and with one that reads every byte of every batch, as
training does. The difference matters for torch: its workers hand batches
over in shared memory, and pages the training process never touches are
mapped by no process, so PSS does not count them although they occupy
memory; reading the batch maps them into the training process.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_workers_vs_torch.py [--rounds 5]
       [--pss-runs 3]
"""
import argparse
import datetime
import os
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.utils.data
from PIL import Image

import feedline

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from machine import cpu_model  # noqa: E402  (bench/machine.py)

BATCH = 64


class TextDataset:
    """Sample i: line i lower-cased, split, stripped of punctuation and mapped
    to ids through a vocabulary, padded or cut to 256 tokens."""

    def __init__(self, n, seed=0):
        rng = random.Random(seed)
        words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9)))
                 for _ in range(5000)]
        self.vocab = {w: i + 2 for i, w in enumerate(words)}
        self.lines = [
            " ".join(rng.choice(words).capitalize() + rng.choice(["", "", ",", "."])
                     for _ in range(rng.randint(150, 300)))
            for _ in range(n)
        ]

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, index):
        ids = [self.vocab.get(w.strip(".,!?;:"), 1) for w in self.lines[index].lower().split()]
        ids = ids[:256] + [0] * (256 - len(ids))
        return np.array(ids, dtype=np.int64), np.int64(len(ids))


class ImageDataset:
    """Sample i: JPEG i decoded by PIL, resized to 224x224, float32 CHW in [0, 1]."""

    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        with Image.open(self.paths[index]) as image:
            image = image.convert("RGB").resize((224, 224), Image.BILINEAR)
        array = np.asarray(image, dtype=np.float32) / 255.0
        return np.ascontiguousarray(array.transpose(2, 0, 1)), np.int64(index % 10)


def write_jpegs(directory, count, seed=0):
    """Photograph-sized JPEGs (short side 300-500) with smooth and noisy parts."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(count):
        h, w = int(rng.integers(300, 500)), int(rng.integers(400, 640))
        y, x = np.mgrid[0:h, 0:w]
        base = np.stack([(x * (c + 1) + y * (3 - c)) % 256 for c in range(3)], axis=-1)
        pixels = (base + rng.integers(0, 40, (h, w, 3))).astype(np.uint8)
        path = os.path.join(directory, f"img_{i:05d}.jpg")
        Image.fromarray(pixels).save(path, quality=90)
        paths.append(path)
    return paths


def make_loaders(dataset, workers):
    return {
        "feedline processes": lambda: feedline.DataLoader(
            dataset, batch_size=BATCH, num_workers=workers, persistent_workers=True,
            worker_mode="process", seed=0),
        "feedline processes, prefetch_factor=1": lambda: feedline.DataLoader(
            dataset, batch_size=BATCH, num_workers=workers, persistent_workers=True,
            worker_mode="process", prefetch_factor=1, seed=0),
        "feedline processes, no shm": lambda: feedline.DataLoader(
            dataset, batch_size=BATCH, num_workers=workers, persistent_workers=True,
            worker_mode="process", use_shared_memory=False, seed=0),
        "feedline threads": lambda: feedline.DataLoader(
            dataset, batch_size=BATCH, num_workers=workers, persistent_workers=True,
            worker_mode="thread", seed=0),
        "feedline 0 workers": lambda: feedline.DataLoader(
            dataset, batch_size=BATCH, num_workers=0, seed=0),
        "torch processes": lambda: torch.utils.data.DataLoader(
            dataset, batch_size=BATCH, num_workers=workers, persistent_workers=True),
    }


def epoch_rate(loader, cpu=None):
    """Samples/s of one epoch; appends the CPU time the process tree spent
    per sample (microseconds) to `cpu`, a figure that other work on the
    machine disturbs less than the rate."""
    cpu_start = tree_cpu_seconds()
    start = time.perf_counter()
    samples = 0
    for batch in loader:
        samples += len(batch[1])
    seconds = time.perf_counter() - start
    if cpu is not None:
        cpu.append((tree_cpu_seconds() - cpu_start) / samples * 1e6)
    return samples / seconds


def tree_pids():
    """This process and all its descendants."""
    pids, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
            except OSError:
                pass
    return pids


def tree_cpu_seconds():
    """User + system time of the live process tree (persistent workers, so
    none exits during an epoch)."""
    total = 0
    for pid in tree_pids():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")


def tree_pss_bytes():
    """PSS of this process and all its descendants (shared pages split)."""
    total = 0
    for pid in tree_pids():
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass  # a worker that exited meanwhile
    return total


def read_every_byte(batch):
    """What training does with a batch: every array is read (summed)."""
    values = batch.values() if isinstance(batch, dict) else batch
    return sum(float(np.asarray(v).sum()) for v in values)


def epoch_peak_pss(make, read):
    loader = make()
    peak = tree_pss_bytes()
    for batch in loader:
        if read:
            read_every_byte(batch)
        peak = max(peak, tree_pss_bytes())
    if hasattr(loader, "close"):
        loader.close()
    return peak


def peak_pss_alone(job, label, args, image_dir, read):
    """epoch_peak_pss of one loader in a fresh interpreter, so that no other
    loader's memory counts."""
    command = [sys.executable, os.path.abspath(__file__), "--pss-of", label, "--jobs", job,
               "--texts", str(args.texts), "--workers", str(args.workers)]
    if read:
        command.append("--pss-read")
    if image_dir:
        command += ["--image-dir", image_dir]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"measuring the PSS of {label} failed:\n{run.stderr}")
    return int(run.stdout.split()[-1])


def first_batch_seconds(make):
    start = time.perf_counter()
    loader = make()
    next(iter(loader))
    seconds = time.perf_counter() - start
    if hasattr(loader, "close"):
        loader.close()
    del loader
    return seconds


def run_job(name, dataset, workers, rounds, pss_of=None, pss_runs=1):
    makers = make_loaders(dataset, workers)
    loaders = {label: make() for label, make in makers.items()}
    for loader in loaders.values():  # warm-up: workers start, pages fault in
        epoch_rate(loader)
    rates = {label: [] for label in loaders}
    cpu = {label: [] for label in loaders}
    firsts = {label: [] for label in loaders}
    labels = list(loaders)
    for r in range(rounds):
        order = labels[r % len(labels):] + labels[:r % len(labels)]
        for label in order:
            rates[label].append(epoch_rate(loaders[label], cpu[label]))
    for loader in loaders.values():
        if hasattr(loader, "close"):
            loader.close()
    loaders.clear()
    for r in range(max(3, rounds // 2)):
        for label in labels:
            firsts[label].append(first_batch_seconds(makers[label]))
    # Each a median over `pss_runs` fresh interpreters (--pss-runs 0: not measured).
    def pss_median(label, read):
        if pss_runs < 1:
            return float("nan")
        return statistics.median(pss_of(label, read) for _ in range(pss_runs))
    pss = {label: pss_median(label, False) for label in labels}
    pss_read = {label: pss_median(label, True) for label in labels}
    median = {label: statistics.median(v) for label, v in rates.items()}
    print(f"\n### {name}: {len(dataset)} samples, batch {BATCH}, {workers} workers, "
          f"{rounds} rounds\n")
    print("| loader | samples/s (median) | min-max | vs torch | vs feedline 0 workers "
          "| CPU us/sample (median) | first batch, cold (median) | tree PSS, peak "
          "| tree PSS, peak, batches read |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label in labels:
        v = rates[label]
        print(f"| {label} | {median[label]:,.0f} | {min(v):,.0f}-{max(v):,.0f} "
              f"| {median[label] / median['torch processes']:.2f}x "
              f"| {median[label] / median['feedline 0 workers']:.2f}x "
              f"| {statistics.median(cpu[label]):,.0f} "
              f"| {statistics.median(firsts[label]) * 1000:.0f} ms "
              f"| {pss[label] / 2**20:,.0f} MiB | {pss_read[label] / 2**20:,.0f} MiB |")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--texts", type=int, default=8192)
    parser.add_argument("--images", type=int, default=320)
    parser.add_argument("--jobs", default="text,image")
    parser.add_argument("--pss-runs", type=int, default=1,
                        help="fresh interpreters per loader for its peak PSS (median)")
    parser.add_argument("--pss-of", help=argparse.SUPPRESS)  # one loader's peak PSS, then exit
    parser.add_argument("--image-dir", help=argparse.SUPPRESS)
    parser.add_argument("--pss-read", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pss_of:
        if args.jobs == "text":
            dataset = TextDataset(args.texts)
        else:
            dataset = ImageDataset(sorted(
                os.path.join(args.image_dir, f) for f in os.listdir(args.image_dir)))
        print(epoch_peak_pss(make_loaders(dataset, args.workers)[args.pss_of], args.pss_read))
        return
    print(f"{datetime.date.today()}, {cpu_model()}, {os.cpu_count()} cores, "
          f"Python {sys.version.split()[0]}, torch {torch.__version__}, numpy {np.__version__}")
    jobs = args.jobs.split(",")
    if "text" in jobs:
        run_job("text, tokenized in Python into int64[256]", TextDataset(args.texts),
                args.workers, args.rounds,
                lambda label, read: peak_pss_alone("text", label, args, None, read),
                args.pss_runs)
    if "image" in jobs:
        with tempfile.TemporaryDirectory(prefix="feedline_bench_jpeg_") as directory:
            paths = write_jpegs(directory, args.images)
            run_job("image, PIL open + convert + resize 224 + float32 CHW",
                    ImageDataset(paths), args.workers, args.rounds,
                    lambda label, read: peak_pss_alone("image", label, args, directory, read),
                    args.pss_runs)


if __name__ == "__main__":
    main()
