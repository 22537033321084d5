#!/usr/bin/python3
"""The literal one-line swap against torch: the same
torchvision.datasets.ImageFolder(root, transform=T.Compose([...])), loaded
by torch.utils.data.DataLoader and by feedline.torch.DataLoader (which runs
the transforms natively, docs/python.md "Native transforms").

Two recipes:
  basic      RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize
  ta_wide    torchvision's references/classification ClassificationPresetTrain
             with --auto-augment ta_wide --random-erase 0.1:
             RandomResizedCrop(224) + RandomHorizontalFlip + TrivialAugmentWide +
             PILToTensor + ConvertImageDtype(float) + Normalize + RandomErasing(0.1)

For each recipe the loaders run one epoch each, alternating, --rounds times,
over a folder of `feedline synth` JPEGs (photo-like, short side 300-500):
  torch      torch.utils.data.DataLoader
  swap       feedline.torch.DataLoader, nothing else changed
  (with --opt-out also: swap with native_transforms=False, the transforms in Python)
batch 64, 2 workers, shuffle. Each figure is images/s from the loader's
construction to the last batch (worker start-up included); the median of the
rounds is printed as a markdown table with its ratio to torch's median.

Usage: bench/torchvision_swap_vs_torch.py [--build build] [--images 2000] [--rounds 3]
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

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def basic():
    return tv.Compose([tv.RandomResizedCrop(224), tv.RandomHorizontalFlip(), tv.ToTensor(),
                       tv.Normalize(MEAN, STD)])


def ta_wide():
    return tv.Compose([
        tv.RandomResizedCrop(224), tv.RandomHorizontalFlip(), tv.TrivialAugmentWide(),
        tv.PILToTensor(), tv.ConvertImageDtype(torch.float), tv.Normalize(MEAN, STD),
        tv.RandomErasing(p=0.1),
    ])


RECIPES = {"basic": basic, "ta_wide": ta_wide}


def epoch_rate(make):
    start = time.perf_counter()
    loader = make()
    images = 0
    for inputs, _ in loader:
        images += len(inputs)
    rate = images / (time.perf_counter() - start)
    if hasattr(loader, "close"):
        loader.close()
    return rate


def loaders(data, recipe, batch, workers, opt_out):
    import feedline.torch

    def dataset():
        return torchvision.datasets.ImageFolder(data, transform=recipe())

    made = {
        "torch": lambda: torch.utils.data.DataLoader(dataset(), batch_size=batch, shuffle=True,
                                                     num_workers=workers),
        "swap": lambda: feedline.torch.DataLoader(dataset(), batch_size=batch, shuffle=True,
                                                  num_workers=workers),
    }
    if opt_out:
        made["swap, native_transforms=False"] = lambda: feedline.torch.DataLoader(
            dataset(), batch_size=batch, shuffle=True, num_workers=workers,
            native_transforms=False)
    return made


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build", help="build folder holding tools/ and python/")
    parser.add_argument("--images", type=int, default=2000, help="images in the synthetic folder")
    parser.add_argument("--data",
                        help="folder for the images (default: under the temporary folder)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of each figure; the median is shown")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--recipes", default="basic,ta_wide",
                        help="comma-separated subset of " + ", ".join(RECIPES))
    parser.add_argument("--opt-out", action="store_true",
                        help="also run the swap with native_transforms=False")
    args = parser.parse_args()
    if args.rounds < 1:
        sys.exit(f"--rounds must be >= 1, got {args.rounds}")
    recipes = [r for r in args.recipes.split(",") if r]
    unknown = [r for r in recipes if r not in RECIPES]
    if unknown:
        sys.exit(f"--recipes: unknown {', '.join(unknown)}; choose from {', '.join(RECIPES)}")
    sys.path.insert(0, os.path.join(args.build, "python"))
    binary = os.path.join(args.build, "tools", "feedline")
    data = args.data or os.path.join(tempfile.gettempdir(), f"feedline-bench-{args.images}")
    ensure_dataset(binary, data, args.images)
    count, kib = folder_stats(data)
    print(f"{count} JPEGs, average {kib:.1f} KiB; batch {args.batch}, {args.workers} workers; "
          f"{os.cpu_count()} CPUs ({cpu_model()}); torch {torch.__version__}, torchvision "
          f"{torchvision.__version__}; {time.strftime('%Y-%m-%d %H:%M')}")

    import feedline.torch

    for recipe_name in recipes:
        recipe = RECIPES[recipe_name]
        made = loaders(data, recipe, args.batch, args.workers, args.opt_out)
        probe = feedline.torch.DataLoader(
            torchvision.datasets.ImageFolder(data, transform=recipe()), batch_size=args.batch)
        print(f"\n{recipe_name}: {probe.stats()['native_transforms']['text']}")
        probe.close()
        for make in made.values():  # warm the page cache and every import
            loader = make()
            for _ in zip(range(2), loader):
                pass
            if hasattr(loader, "close"):
                loader.close()
        rates = {name: [] for name in made}
        for _ in range(args.rounds):
            for name, make in made.items():
                rates[name].append(epoch_rate(make))
        torch_median = statistics.median(rates["torch"])
        print(f"| {recipe_name} | images/s (median) | rounds | / torch |")
        print("|---|---:|---|---:|")
        for name, values in rates.items():
            median = statistics.median(values)
            rounds = ", ".join(f"{v:.0f}" for v in values)
            print(f"| {name} | {median:.0f} | {rounds} | {median / torch_median:.2f}x |")


if __name__ == "__main__":
    main()
