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
new loader (cold: processes start) and of a later epoch (persistent
workers: no process starts), and the memory of the whole process
tree: each loader runs
one epoch alone in a fresh interpreter, which samples the sum of the
proportional set sizes (PSS) of itself and its workers at every batch; the
largest sample is printed. It is measured twice: with a loop that does not
look at the batches, and with one that reads every byte of every batch, as
training does. The difference matters for torch: its workers hand batches
over in shared memory, and pages the training process never touches are
mapped by no process, so PSS does not count them although they occupy
memory; reading the batch maps them into the training process.

A second memory measure does not have that bias: each of those fresh
interpreters runs in its own new memory cgroup (cgroup v1 at
/sys/fs/cgroup/memory, or v2's memory.peak; root needed), which it enters
before it imports anything, and its workers inherit it. The group's peak
usage (memory.max_usage_in_bytes) counts every page charged to the group:
anonymous memory, shared memory (memfd, /dev/shm files: torch's batches
that no process maps yet included), page cache the processes bring in, and
kernel memory (page tables, slab). Each page is counted once, however many
processes map it. Page cache already charged elsewhere is not charged again,
so the JPEGs are read once before the runs, outside the groups, and neither
loader is charged for them. Where no such group can be made, that measure
is skipped and the bench says why.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_workers_vs_torch.py [--rounds 5]
       [--pss-runs 3] [--memory-only] [--loaders REGEX]
"""
import argparse
import datetime
import os
import random
import re
import shlex
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
from machine import cpu_model, process_tree_cpu, process_tree_pss  # noqa: E402  (bench/machine.py)

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


def epoch_rate(loader, cpu=None, first=None):
    """Samples/s of one epoch; appends the CPU time the process tree spent
    per sample (microseconds) to `cpu`, a figure that other work on the
    machine disturbs less than the rate, and the seconds from the start of
    the epoch to its first batch to `first` (persistent workers: no process
    starts)."""
    cpu_start = process_tree_cpu()
    start = time.perf_counter()
    samples = 0
    for batch in loader:
        if samples == 0 and first is not None:
            first.append(time.perf_counter() - start)
        samples += len(batch[1])
    seconds = time.perf_counter() - start
    if cpu is not None:
        cpu.append((process_tree_cpu() - cpu_start) / samples * 1e6)
    return samples / seconds


def read_every_byte(batch):
    """What training does with a batch: every array is read (summed)."""
    values = batch.values() if isinstance(batch, dict) else batch
    return sum(float(np.asarray(v).sum()) for v in values)


def epoch_peak_pss(make, read, own_cgroup):
    """Peak PSS of the process tree over one epoch, and, where the run has
    a cgroup of its own, its memory.stat fields at the end (workers still
    alive)."""
    loader = make()
    peak = process_tree_pss()
    for batch in loader:
        if read:
            read_every_byte(batch)
        peak = max(peak, process_tree_pss())
    stat = own_cgroup_stat() if own_cgroup else {}
    if hasattr(loader, "close"):
        loader.close()
    return peak, stat


class MemoryCgroup:
    """A fresh memory cgroup for one measured run: v1 (memory.max_usage_in_bytes)
    or v2 (memory.peak). MemoryCgroup.unavailable() says why none can be made,
    or None."""

    V1 = "/sys/fs/cgroup/memory"
    V2 = "/sys/fs/cgroup"
    count = 0

    @classmethod
    def unavailable(cls):
        if os.geteuid() != 0:
            return "not root"
        if os.path.exists(os.path.join(cls.V1, "memory.max_usage_in_bytes")) or \
                os.path.exists(os.path.join(cls.V1, "memory.usage_in_bytes")):
            return None
        try:
            with open(os.path.join(cls.V2, "cgroup.controllers")) as f:
                if "memory" in f.read().split():
                    return None
        except OSError:
            pass
        return "no cgroup v1 memory controller and no cgroup v2 with the memory controller"

    def __init__(self):
        MemoryCgroup.count += 1
        self.v1 = os.path.exists(os.path.join(self.V1, "memory.usage_in_bytes"))
        root = self.V1 if self.v1 else self.V2
        self.path = os.path.join(root, f"feedline-bench-{os.getpid()}-{MemoryCgroup.count}")
        os.mkdir(self.path)
        if not self.v1 and not os.path.exists(os.path.join(self.path, "memory.peak")):
            os.rmdir(self.path)
            raise OSError("cgroup v2 without memory.peak (kernel before 5.19, or the "
                          "memory controller not enabled in cgroup.subtree_control)")

    def wrap(self, command):
        """`command` run so that it enters the group before it execs: its pid
        (the shell's, kept by exec) is written into cgroup.procs first."""
        procs = shlex.quote(os.path.join(self.path, "cgroup.procs"))
        return ["/bin/sh", "-c", f"echo $$ > {procs} && exec {shlex.join(command)}"]

    def peak_bytes(self):
        name = "memory.max_usage_in_bytes" if self.v1 else "memory.peak"
        with open(os.path.join(self.path, name)) as f:
            return int(f.read())

    def remove(self):
        """rmdir once the processes have exited (workers may outlive the
        interpreter by a moment)."""
        deadline = time.monotonic() + 10
        while True:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                left = f.read().split()
            if not left:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"processes {left} still in {self.path} 10 s after the run")
            time.sleep(0.05)
        os.rmdir(self.path)


def own_cgroup_stat():
    """memory.stat's total_rss, total_shmem and total_cache of the cgroup v1
    this process is in (read by the measured run before its loader closes),
    or {} where there is none."""
    try:
        with open("/proc/self/cgroup") as f:
            group = next(line.split(":", 2)[2].strip() for line in f
                         if line.split(":")[1] == "memory")
        with open(os.path.join(MemoryCgroup.V1, group.lstrip("/"), "memory.stat")) as f:
            fields = dict(line.split() for line in f)
        return {k: int(fields[k]) for k in ("total_rss", "total_shmem", "total_cache")}
    except (OSError, StopIteration, KeyError, IndexError, ValueError):
        return {}


def peak_pss_alone(job, label, args, image_dir, read):
    """epoch_peak_pss of one loader in a fresh interpreter, so that no other
    loader's memory counts; the same run inside its own memory cgroup where
    one can be made. Returns (peak PSS, cgroup peak or None, memory.stat
    fields at the end of the epoch)."""
    command = [sys.executable, os.path.abspath(__file__), "--pss-of", label, "--jobs", job,
               "--texts", str(args.texts), "--workers", str(args.workers)]
    if read:
        command.append("--pss-read")
    if image_dir:
        command += ["--image-dir", image_dir]
    group = None
    if args.cgroup_skipped is None:
        try:
            group = MemoryCgroup()
        except OSError as error:
            args.cgroup_skipped = f"could not create a memory cgroup: {error}"
            print(f"cgroup peak skipped: {args.cgroup_skipped}", flush=True)
    if group:
        command.append("--own-cgroup")
    try:
        run = subprocess.run(group.wrap(command) if group else command,
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"measuring the memory of {label} failed:\n{run.stderr}")
        peak = group.peak_bytes() if group else None
    finally:
        if group:
            group.remove()
    words = run.stdout.split()
    stat = {k: int(v) for k, v in (w.split("=") for w in words[1:])}
    return int(words[0]), peak, stat


def first_batch_seconds(make):
    start = time.perf_counter()
    loader = make()
    next(iter(loader))
    seconds = time.perf_counter() - start
    if hasattr(loader, "close"):
        loader.close()
    del loader
    return seconds


def load_and_time():
    """`uptime`'s load averages and the UTC time, for the record."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"{now}, load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def measure_memory(labels, pss_of, pss_runs):
    """Each loader alone in fresh interpreters, `pss_runs` rounds that
    alternate between the loaders (the order rotates each round), with and
    without reading the batches. Returns {(label, read): [(pss, cgroup peak,
    stat), ...]}."""
    runs = {(label, read): [] for label in labels for read in (False, True)}
    for r in range(pss_runs):
        order = labels[r % len(labels):] + labels[:r % len(labels)]
        for read in (False, True):
            for label in order:
                runs[(label, read)].append(pss_of(label, read))
    return runs


def print_memory_table(labels, runs, skipped):
    def median(label, read, pick):
        values = [pick(run) for run in runs[(label, read)]]
        if not values or any(v is None for v in values):
            return None
        return statistics.median(values)

    def mib(value):
        return "skipped" if value is None else f"{value / 2**20:,.0f} MiB"

    def spread(label, read):
        """The cgroup peak's median and min-max over the rounds."""
        values = [run[1] for run in runs[(label, read)]]
        if not values or None in values:
            return "skipped"
        return (f"{mib(statistics.median(values))} "
                f"({min(values) / 2**20:,.0f}-{max(values) / 2**20:,.0f})")

    rounds = len(runs[(labels[0], False)])
    print(f"\nMemory, each loader alone in a fresh interpreter, {rounds} alternating rounds, "
          "medians. PSS: peak sum over the process tree (pages mapped by no process, such "
          "as torch's batches waiting in /dev/shm, are not counted). cgroup: peak usage of "
          "the run's own memory cgroup (anonymous + shared memory + page cache charged to it "
          "+ kernel memory, each page once)"
          + (f"; cgroup measure skipped: {skipped}" if skipped else "")
          + ". At end: the group's memory.stat at the end of the epoch, batches read "
          "(v1's cache includes shmem).\n")
    print("| loader | PSS, peak | PSS, peak, batches read | cgroup, peak (min-max) "
          "| cgroup, peak, batches read (min-max) | at end: rss / shmem / cache |")
    print("|---|---:|---:|---:|---:|---:|")
    for label in labels:
        end = [median(label, True, lambda run, k=k: run[2].get(k)) for k in
               ("total_rss", "total_shmem", "total_cache")]
        end_text = "n/a" if None in end else " / ".join(f"{v / 2**20:,.0f}" for v in end) + " MiB"
        print(f"| {label} | {mib(median(label, False, lambda run: run[0]))} "
              f"| {mib(median(label, True, lambda run: run[0]))} "
              f"| {spread(label, False)} | {spread(label, True)} | {end_text} |")


def run_job(name, dataset, workers, rounds, pss_of=None, pss_runs=1, only=None,
            memory_only=False, skipped=None):
    makers = make_loaders(dataset, workers)
    if only:
        makers = {label: make for label, make in makers.items() if re.search(only, label)}
    labels = list(makers)
    print(f"\n### {name}: {len(dataset)} samples, batch {BATCH}, {workers} workers, "
          f"{rounds} rounds\n\nstart: {load_and_time()}")
    if not memory_only:
        print_rates(makers, workers, rounds)
    if pss_runs >= 1:
        runs = measure_memory(labels, pss_of, pss_runs)
        print_memory_table(labels, runs, skipped())
    print(f"\nend: {load_and_time()}")
    sys.stdout.flush()


def print_rates(makers, workers, rounds):
    loaders = {label: make() for label, make in makers.items()}
    for loader in loaders.values():  # warm-up: workers start, pages fault in
        epoch_rate(loader)
    rates = {label: [] for label in loaders}
    cpu = {label: [] for label in loaders}
    firsts = {label: [] for label in loaders}
    warm_firsts = {label: [] for label in loaders}
    labels = list(loaders)
    for r in range(rounds):
        order = labels[r % len(labels):] + labels[:r % len(labels)]
        for label in order:
            rates[label].append(epoch_rate(loaders[label], cpu[label], warm_firsts[label]))
    for loader in loaders.values():
        if hasattr(loader, "close"):
            loader.close()
    loaders.clear()
    for r in range(max(3, rounds // 2)):
        for label in labels:
            firsts[label].append(first_batch_seconds(makers[label]))
    median = {label: statistics.median(v) for label, v in rates.items()}
    torch_rate = median.get("torch processes", float("nan"))
    zero_rate = median.get("feedline 0 workers", float("nan"))
    print("\n| loader | samples/s (median) | min-max | vs torch | vs feedline 0 workers "
          "| CPU us/sample (median) | first batch, cold (median) "
          "| first batch, next epoch (median) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label in labels:
        v = rates[label]
        print(f"| {label} | {median[label]:,.0f} | {min(v):,.0f}-{max(v):,.0f} "
              f"| {median[label] / torch_rate:.2f}x "
              f"| {median[label] / zero_rate:.2f}x "
              f"| {statistics.median(cpu[label]):,.0f} "
              f"| {statistics.median(firsts[label]) * 1000:.0f} ms "
              f"| {statistics.median(warm_firsts[label]) * 1000:.1f} ms |")
    sys.stdout.flush()


def read_files_once(paths):
    """Bring the files into the page cache from this process, outside the
    measured cgroups, so that no measured run is charged for them."""
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass


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
    parser.add_argument("--own-cgroup", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--memory-only", action="store_true",
                        help="only the memory table (no rates, no first-batch times)")
    parser.add_argument("--loaders", help="only the loaders whose label matches this regex")
    args = parser.parse_args()
    args.cgroup_skipped = MemoryCgroup.unavailable()
    if args.pss_of:
        if args.jobs == "text":
            dataset = TextDataset(args.texts)
        else:
            dataset = ImageDataset(sorted(
                os.path.join(args.image_dir, f) for f in os.listdir(args.image_dir)))
        peak, stat = epoch_peak_pss(make_loaders(dataset, args.workers)[args.pss_of],
                                    args.pss_read, args.own_cgroup)
        print(peak, *(f"{k}={v}" for k, v in stat.items()))
        return
    print(f"{datetime.date.today()}, {cpu_model()}, {os.cpu_count()} cores, "
          f"Python {sys.version.split()[0]}, torch {torch.__version__}, numpy {np.__version__}")
    if args.cgroup_skipped and args.pss_runs >= 1:
        print(f"cgroup peak skipped: {args.cgroup_skipped}")
    jobs = args.jobs.split(",")
    common = dict(pss_runs=args.pss_runs, only=args.loaders, memory_only=args.memory_only,
                  skipped=lambda: args.cgroup_skipped)
    if "text" in jobs:
        run_job("text, tokenized in Python into int64[256]", TextDataset(args.texts),
                args.workers, args.rounds,
                lambda label, read: peak_pss_alone("text", label, args, None, read), **common)
    if "image" in jobs:
        with tempfile.TemporaryDirectory(prefix="feedline_bench_jpeg_") as directory:
            paths = write_jpegs(directory, args.images)
            read_files_once(paths)
            run_job("image, PIL open + convert + resize 224 + float32 CHW",
                    ImageDataset(paths), args.workers, args.rounds,
                    lambda label, read: peak_pss_alone("image", label, args, directory, read),
                    **common)


if __name__ == "__main__":
    main()
