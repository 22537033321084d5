#!/usr/bin/python3
"""Image loading throughput, side by side with torch DataLoader + torchvision.

The job: a folder of JPEGs written by `feedline synth` (photo-like content,
about 40 KiB each, short side 300-500 pixels, mixed quality, chroma
subsampling and progressive coding), loaded in batches of 64 by 2 workers.

  train   RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize
  val     Resize(256) + CenterCrop(224) + ToTensor + Normalize
  decode  full decode to RGB only (libjpeg-turbo in both: Pillow's and ours)

torch runs torch.utils.data.DataLoader over torchvision.datasets.ImageFolder
(PIL); feedline runs `feedline bench --json` with the same pipeline. Each
figure is one epoch over the folder, from the first request to the last
batch (worker start-up included on both sides); the page cache is warmed
first, the two alternate, and the median of --rounds runs is printed as a
markdown table, followed by feedline's train rate over its own full-decode
rate (the fused path's goal is at least 1.0x).

Usage: bench/compare_torch_images.py [--build build] [--images 2000]
           [--data DIR] [--rounds 1] [--workers 2] [--batch 64]
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torchvision
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

from machine import cpu_model  # bench/machine.py

PIPELINES = {
    "train": "RandomResizedCrop(224) + flip + normalize",
    "val": "Resize(256) + CenterCrop(224) + normalize",
    "decode": "full decode only",
}
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def image_size(image):
    """The decode-only transform: the image is decoded (convert("RGB") in the
    loader), and only its size travels back to the main process."""
    return torch.tensor(image.size)


def torch_transform(pipeline):
    if pipeline == "train":
        return transforms.Compose([
            transforms.RandomResizedCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ])
    if pipeline == "val":
        return transforms.Compose([
            transforms.Resize(256),
            transforms.CenterCrop(224),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ])
    return image_size


def torch_rate(data, pipeline, batch, workers):
    dataset = datasets.ImageFolder(data, transform=torch_transform(pipeline))
    loader = DataLoader(dataset, batch_size=batch, shuffle=pipeline == "train", num_workers=workers)
    start = time.perf_counter()
    images = 0
    for inputs, _ in loader:
        images += len(inputs)
    return images / (time.perf_counter() - start)


def feedline_rate(binary, data, pipeline, batch, workers):
    out = subprocess.run(
        [binary, "bench", data, "--pipeline", pipeline, "--batch", str(batch), "--workers", str(workers),
         "--json", "--quiet"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["images_per_s"]


def ensure_dataset(binary, data, images):
    """Writes the folder with `feedline synth` unless it already holds the
    same number of images from an earlier run."""
    marker = os.path.join(data, "feedline_synth.json")
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f).get("images") == images:
                return
        shutil.rmtree(data)
    if os.path.exists(data) and os.listdir(data):
        sys.exit(f"{data} exists and holds other files; pass another --data")
    classes = max(1, min(100, images // 20))
    out = subprocess.run(
        [binary, "synth", data, "--images", str(images), "--classes", str(classes), "--seed", "1", "--json"],
        check=True, capture_output=True, text=True).stdout
    with open(marker, "w") as f:
        f.write(out.strip().splitlines()[-1])


def folder_stats(data):
    sizes = []
    for root, _, files in os.walk(data):
        for name in files:
            if name.lower().endswith((".jpg", ".jpeg", ".png", ".webp")):
                sizes.append(os.path.getsize(os.path.join(root, name)))
    return len(sizes), (sum(sizes) / len(sizes) / 1024 if sizes else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build", help="build folder holding tools/feedline")
    parser.add_argument("--feedline", help="the feedline binary (default: BUILD/tools/feedline)")
    parser.add_argument("--images", type=int, default=2000, help="images in the synthetic folder")
    parser.add_argument("--data", help="folder for the images (default: under the temporary folder)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each figure; the median is shown")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--pipelines", default="train,val,decode",
                        help="comma-separated subset of train, val, decode")
    args = parser.parse_args()

    binary = args.feedline or os.path.join(args.build, "tools", "feedline")
    if not os.access(binary, os.X_OK):
        sys.exit(f"no feedline binary at {binary}: build it (target feedline_cli) or pass --feedline")
    pipelines = [p for p in args.pipelines.split(",") if p]
    for p in pipelines:
        if p not in PIPELINES:
            sys.exit(f"--pipelines: unknown pipeline '{p}' (allowed: {', '.join(PIPELINES)})")
    data = args.data or os.path.join(tempfile.gettempdir(), f"feedline_compare_{args.images}")

    ensure_dataset(binary, data, args.images)
    count, avg_kib = folder_stats(data)
    # Both read from the page cache: one pass over every file first.
    feedline_rate(binary, data, "decode", args.batch, args.workers)

    rates = {p: {"torch": [], "feedline": []} for p in pipelines}
    for _ in range(args.rounds):
        for p in pipelines:
            rates[p]["torch"].append(torch_rate(data, p, args.batch, args.workers))
            rates[p]["feedline"].append(feedline_rate(binary, data, p, args.batch, args.workers))

    print(f"Image loading, {count} synthetic JPEGs (avg {avg_kib:.1f} KiB, short side 300-500), "
          f"batch {args.batch}, {args.workers} workers; {datetime.date.today()}, "
          f"{os.cpu_count()} cores ({cpu_model()}), torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}, median of {args.rounds} round(s)")
    print()
    print("| pipeline | torch + PIL images/s | feedline images/s | feedline / torch |")
    print("|---|---:|---:|---:|")
    for p in pipelines:
        t = statistics.median(rates[p]["torch"])
        f = statistics.median(rates[p]["feedline"])
        print(f"| {p}: {PIPELINES[p]} | {t:.0f} | {f:.0f} | {f / t:.2f}x |")
    if "train" in pipelines and "decode" in pipelines:
        # The fused path's goal: the whole train recipe at least as fast as
        # merely decoding every full image, on the same cores. Ratios are
        # taken within each round (the two ran seconds apart), then the median.
        ratios = [t / d for t, d in zip(rates["train"]["feedline"], rates["decode"]["feedline"])]
        print()
        print(f"feedline train / feedline full decode: {statistics.median(ratios):.2f}x "
              f"(per round: {', '.join(f'{r:.2f}' for r in ratios)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
