#!/usr/bin/python3
"""Storage layouts side by side: image folder vs packed shards on a cold page
cache, and HDF5 through feedline vs h5py under torch's DataLoader.

The job: --images synthetic JPEGs from `feedline synth` (photo-like, about
40 KiB each), the train pipeline (RandomResizedCrop(224) + flip + ToTensor +
Normalize), batch 64, 2 workers, shuffled.

  folder vs shards (feedline on both): before every run each file of the
      layout is evicted from the page cache with posix_fadvise(DONTNEED)
      (`fincore` confirms the eviction); shards are read in a random order
      and with ShardOrderSampler (window = records per shard). Beside them,
      torch's DataLoader with torchvision's ImageFolder (PIL) on the same
      folder, evicted the same way.
  HDF5, encoded JPEGs: one h5py file, the JPEG bytes as vlen uint8 plus int64
      labels. feedline.io.HDF5Dataset with the train transform under
      feedline's DataLoader, vs a torch Dataset that opens the file with h5py
      in each worker and decodes with PIL + torchvision's transforms, under
      torch's DataLoader. Warm page cache.
  HDF5, raw uint8: [N, 224, 224, 3] pixels (chunks of 16 rows, no
      compression) plus labels; feedline's rows go straight into the batch,
      torch's Dataset returns f["pixels"][i] as a tensor. Warm page cache.
  pack: `pack_shards` speed (images/s, warm cache) and sizes (JPEGs are
      rewritten with restart markers, progressive ones as baseline).

Each figure is one epoch, worker start-up included; the runs alternate and the
median of --rounds is printed as markdown tables.

Usage: bench/storage_vs_torch.py [--build build] [--images 1000] [--rounds 3]
           [--data DIR] [--workers 2] [--batch 64]
"""
import argparse
import datetime
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader
from torchvision import datasets as tvd
from torchvision import transforms as tvt

from machine import cpu_model  # bench/machine.py

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def evict(paths):
    """Drops the files' pages from the page cache (clean pages only)."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def resident_bytes(paths):
    """Bytes of the files in the page cache, by fincore (util-linux)."""
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", *paths],
                         capture_output=True, text=True, check=False).stdout
    return sum(int(line) for line in out.split() if line.strip().isdigit())


def files_under(root):
    return sorted(os.path.join(d, f) for d, _, files in os.walk(root) for f in files)


def epoch_rate(loader, images):
    start = time.perf_counter()
    seen = 0
    for batch in loader:
        seen += len(batch[1]) if isinstance(batch, (tuple, list)) else len(batch["label"])
    elapsed = time.perf_counter() - start
    assert seen == images, (seen, images)
    return images / elapsed


class TorchJpegH5(torch.utils.data.Dataset):
    """The torch way: h5py opened lazily in each worker, PIL decode."""

    def __init__(self, path, transform):
        self.path, self.transform, self.file = path, transform, None
        with h5py.File(path, "r") as f:
            self.n = len(f["labels"])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.file is None:
            self.file = h5py.File(self.path, "r")
        image = Image.open(io.BytesIO(self.file["jpeg"][i].tobytes())).convert("RGB")
        return self.transform(image), int(self.file["labels"][i])


class TorchRawH5(torch.utils.data.Dataset):
    def __init__(self, path):
        self.path, self.file = path, None
        with h5py.File(path, "r") as f:
            self.n = len(f["labels"])

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.file is None:
            self.file = h5py.File(self.path, "r")
        return torch.from_numpy(self.file["pixels"][i]), int(self.file["labels"][i])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.abspath(args.build), "python"))
    import feedline
    from feedline.vision import datasets, synth
    from feedline.vision import transforms as T

    scratch = None
    if args.data is None:
        scratch = tempfile.mkdtemp(prefix="feedline_storage_bench_")
        args.data = scratch
    folder = os.path.join(args.data, "images")
    if not os.path.isdir(folder):
        synth.write_image_folder(folder, args.images, classes=10, seed=1)
    image_folder = datasets.ImageFolder(folder)
    n = len(image_folder)

    # Pack, timed with the folder in the page cache (a second pack replaces it).
    shards = os.path.join(args.data, "shards")
    for path in files_under(folder):
        with open(path, "rb") as f:
            f.read()
    start = time.perf_counter()
    info = datasets.pack_shards(folder, shards, shard_bytes=8 << 20, restart=True)
    pack_seconds = time.perf_counter() - start
    folder_bytes = sum(os.path.getsize(p) for p in files_under(folder))
    shard_bytes = sum(os.path.getsize(p) for p in files_under(shards))

    # HDF5 files.
    jpeg_h5 = os.path.join(args.data, "jpeg.h5")
    raw_h5 = os.path.join(args.data, "raw.h5")
    labels = np.array(image_folder.targets, dtype=np.int64)
    if not os.path.exists(jpeg_h5):
        with h5py.File(jpeg_h5, "w") as f:
            data = f.create_dataset("jpeg", (n,), dtype=h5py.vlen_dtype(np.uint8), chunks=(64,))
            for i, (path, _) in enumerate(image_folder.samples):
                data[i] = np.frombuffer(open(path, "rb").read(), dtype=np.uint8)
            f.create_dataset("labels", data=labels)
    if not os.path.exists(raw_h5):
        rng = np.random.default_rng(0)
        with h5py.File(raw_h5, "w") as f:
            pixels = f.create_dataset("pixels", (n, 224, 224, 3), dtype=np.uint8,
                                      chunks=(16, 224, 224, 3))
            for begin in range(0, n, 64):
                end = min(n, begin + 64)
                pixels[begin:end] = rng.integers(0, 256, (end - begin, 224, 224, 3),
                                                 dtype=np.uint8)
            f.create_dataset("labels", data=labels)

    ours_transform = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                                T.Normalize(MEAN, STD)])
    torch_transform = tvt.Compose([tvt.RandomResizedCrop(224), tvt.RandomHorizontalFlip(),
                                   tvt.ToTensor(), tvt.Normalize(MEAN, STD)])
    shard_data = datasets.ShardDataset(shards, transform=ours_transform)
    window = max(1, n // len(shard_data.shards))
    w, b = args.workers, args.batch

    def cold(paths, make_loader):
        evict(paths)
        left = resident_bytes(paths)
        rate = epoch_rate(make_loader(), n)
        return rate, left

    runs = {
        "folder, random order": lambda: cold(files_under(folder), lambda: feedline.DataLoader(
            datasets.ImageFolder(folder, transform=ours_transform), batch_size=b, shuffle=True,
            num_workers=w)),
        "torch ImageFolder (PIL), random order": lambda: cold(files_under(folder), lambda: DataLoader(
            tvd.ImageFolder(folder, transform=torch_transform), batch_size=b, shuffle=True,
            num_workers=w)),
        "shards, random order": lambda: cold(files_under(shards), lambda: feedline.DataLoader(
            shard_data, batch_size=b, shuffle=True, num_workers=w)),
        "shards, ShardOrderSampler": lambda: cold(files_under(shards), lambda: feedline.DataLoader(
            shard_data, batch_size=b, num_workers=w,
            sampler=datasets.ShardOrderSampler(shard_data, window=window, seed=1))),
        "hdf5 jpeg, feedline": lambda: (epoch_rate(feedline.DataLoader(
            feedline.io.HDF5Dataset(jpeg_h5, {"image": "jpeg", "label": "labels"},
                                    transform=ours_transform),
            batch_size=b, shuffle=True, num_workers=w), n), 0),
        "hdf5 jpeg, torch + h5py": lambda: (epoch_rate(DataLoader(
            TorchJpegH5(jpeg_h5, torch_transform), batch_size=b, shuffle=True, num_workers=w), n),
            0),
        "hdf5 raw, feedline": lambda: (epoch_rate(feedline.DataLoader(
            feedline.io.HDF5Dataset(raw_h5, ["pixels", "labels"]), batch_size=b, shuffle=True,
            num_workers=w), n), 0),
        "hdf5 raw, torch + h5py": lambda: (epoch_rate(DataLoader(
            TorchRawH5(raw_h5), batch_size=b, shuffle=True, num_workers=w), n), 0),
    }
    rates = {name: [] for name in runs}
    left = {name: [] for name in runs}
    for path in (jpeg_h5, raw_h5):  # warm for the HDF5 runs
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass
    for _ in range(args.rounds):
        for name, run in runs.items():
            rate, resident = run()
            rates[name].append(rate)
            left[name].append(resident)
    median = {name: statistics.median(r) for name, r in rates.items()}

    print(f"{datetime.date.today()}, {cpu_model()}, {os.cpu_count()} CPUs, torch "
          f"{torch.__version__}, HDF5 threadsafe: {feedline.hdf5.library_threadsafe()}")
    print(f"{n} images, batch {b}, {w} workers, median of {args.rounds} rounds\n")
    print("| layout (cold page cache) | images/s | vs folder | bytes left in cache |")
    print("|---|---:|---:|---:|")
    for name in ("torch ImageFolder (PIL), random order", "folder, random order",
                 "shards, random order", "shards, ShardOrderSampler"):
        print(f"| {name} | {median[name]:,.0f} | {median[name] / median['folder, random order']:.2f}x"
              f" | {max(left[name]):,} |")
    print("\n| HDF5 (warm page cache) | torch + h5py images/s | feedline images/s | feedline / torch |")
    print("|---|---:|---:|---:|")
    for kind, label in (("jpeg", "encoded JPEG, train pipeline"), ("raw", "raw uint8 224x224x3")):
        ours, theirs = median[f"hdf5 {kind}, feedline"], median[f"hdf5 {kind}, torch + h5py"]
        print(f"| {label} | {theirs:,.0f} | {ours:,.0f} | {ours / theirs:.2f}x |")
    print(f"\npack: {n / pack_seconds:,.0f} images/s ({info['shards']} shards of 8 MiB); "
          f"folder {folder_bytes:,} bytes, shards {shard_bytes:,} bytes "
          f"(+{100 * (shard_bytes / folder_bytes - 1):.1f}%); {info['rewritten_jpegs']} JPEGs "
          f"rewritten with restart markers, {info['progressive_converted']} of them progressive "
          f"ones as baseline")
    print("all rates:", {k: [round(x) for x in v] for k, v in rates.items()})
    if scratch is not None:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
