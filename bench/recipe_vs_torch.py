#!/usr/bin/python3
"""torchvision's train recipe with TrivialAugmentWide and RandomErasing,
side by side with torch DataLoader + torchvision, through the Python API.

The recipe (torchvision's references/classification ClassificationPresetTrain
with --auto-augment ta_wide --random-erase 0.1):
  RandomResizedCrop(224) + RandomHorizontalFlip + TrivialAugmentWide +
  PILToTensor + ConvertImageDtype(float) + Normalize + RandomErasing(0.1)

Three loaders over the same folder of `feedline synth` JPEGs (the images
benchmark's set), batch 64, 2 workers, one epoch each, alternating:
  torch        torch.utils.data.DataLoader + torchvision.datasets.ImageFolder
  swap         feedline.torch.DataLoader + feedline's ImageFolder given the
               same torchvision transform (the one-line swap; the transform
               runs in Python in worker processes)
  native       feedline.torch.DataLoader + feedline's ImageFolder given
               feedline.vision.transforms.from_torchvision(recipe)
Each figure is images/s from the first request to the last batch (worker
start-up included); the median of --rounds runs is printed as a markdown
table with each loader's ratio to torch.

A second table measures what moving ToTensor + Normalize to the device saves
on the loader's side: the native RandomResizedCrop(224) + flip with uint8
CHW output (PILToTensor; normalized later by feedline.torch.Normalize on the
device) against float32 output (ToTensor + Normalize in the loader), images/s
and bytes per batch.

Usage: bench/recipe_vs_torch.py [--build build] [--images 2000] [--rounds 3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import torch
import torchvision
from torchvision import transforms as tv

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_torch_images import ensure_dataset, folder_stats  # noqa: E402
from machine import cpu_model  # noqa: E402


def recipe():
    return tv.Compose([
        tv.RandomResizedCrop(224),
        tv.RandomHorizontalFlip(),
        tv.TrivialAugmentWide(),
        tv.PILToTensor(),
        tv.ConvertImageDtype(torch.float),
        tv.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)),
        tv.RandomErasing(p=0.1),
    ])


def epoch_rate(loader):
    start = time.perf_counter()
    images = 0
    for inputs, _ in loader:
        images += len(inputs)
    return images / (time.perf_counter() - start)


def torch_loader(data, batch, workers):
    dataset = torchvision.datasets.ImageFolder(data, transform=recipe())
    return torch.utils.data.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers)


def feedline_loader(data, batch, workers, native):
    import feedline.torch
    from feedline.vision import datasets
    from feedline.vision.transforms import from_torchvision
    transform = from_torchvision(recipe()) if native else recipe()
    dataset = datasets.ImageFolder(data, transform=transform)
    return feedline.torch.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers)


def output_dtype_loader(data, batch, workers, uint8):
    import feedline.torch
    from feedline.vision import datasets
    from feedline.vision import transforms as T
    steps = [T.RandomResizedCrop(224), T.RandomHorizontalFlip()]
    if uint8:
        steps.append(T.PILToTensor())
    else:
        steps += [T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]
    dataset = datasets.ImageFolder(data, transform=T.Compose(steps))
    return feedline.torch.DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=workers)


def batch_bytes(loader):
    images, _ = next(iter(loader))
    return images.element_size() * images.nelement()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build", help="build folder holding tools/ and python/")
    parser.add_argument("--images", type=int, default=2000, help="images in the synthetic folder")
    parser.add_argument("--data", help="folder for the images (default: under the temporary folder)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each figure; the median is shown")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    if args.rounds < 1:
        sys.exit(f"--rounds must be >= 1, got {args.rounds}")
    sys.path.insert(0, os.path.join(args.build, "python"))
    binary = os.path.join(args.build, "tools", "feedline")
    data = args.data or os.path.join(tempfile.gettempdir(), f"feedline-bench-{args.images}")
    ensure_dataset(binary, data, args.images)
    count, kib = folder_stats(data)
    print(f"{count} JPEGs, average {kib:.1f} KiB; batch {args.batch}, {args.workers} workers; "
          f"{os.cpu_count()} CPUs ({cpu_model()}); {time.strftime('%Y-%m-%d %H:%M')}")

    loaders = {
        "torch": lambda: torch_loader(data, args.batch, args.workers),
        "swap": lambda: feedline_loader(data, args.batch, args.workers, native=False),
        "native": lambda: feedline_loader(data, args.batch, args.workers, native=True),
    }
    for make in loaders.values():  # warm the page cache and every import
        for _ in zip(range(2), make()):
            pass
    rates = {name: [] for name in loaders}
    for _ in range(args.rounds):
        for name, make in loaders.items():
            rates[name].append(epoch_rate(make()))
    torch_median = statistics.median(rates["torch"])
    print("| loader | images/s (median) | rounds | / torch |")
    print("|---|---:|---|---:|")
    for name, values in rates.items():
        median = statistics.median(values)
        rounds = ", ".join(f"{v:.0f}" for v in values)
        print(f"| {name} | {median:.0f} | {rounds} | {median / torch_median:.2f}x |")

    outputs = {
        "float32 (ToTensor + Normalize in the loader)": False,
        "uint8 (PILToTensor; Normalize on the device)": True,
    }
    dtype_rates = {name: [] for name in outputs}
    for _ in range(args.rounds):
        for name, uint8 in outputs.items():
            dtype_rates[name].append(
                epoch_rate(output_dtype_loader(data, args.batch, args.workers, uint8)))
    print()
    print("| native RandomResizedCrop + flip, output | images/s (median) | rounds | MB per batch |")
    print("|---|---:|---|---:|")
    for name, uint8 in outputs.items():
        values = dtype_rates[name]
        size = batch_bytes(output_dtype_loader(data, args.batch, args.workers, uint8)) / 1e6
        rounds = ", ".join(f"{v:.0f}" for v in values)
        print(f"| {name} | {statistics.median(values):.0f} | {rounds} | {size:.1f} |")


if __name__ == "__main__":
    main()
