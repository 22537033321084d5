#!/usr/bin/python3
"""Detection written with torchvision 0.29's transforms.v2 and tv_tensors,
through torch's DataLoader and through feedline.torch.DataLoader (the
one-line swap, which lowers it: detection_v2_lowering.py), 2 worker
processes each.

The dataset is what torchvision 0.29's references/detection build with
use_v2=True (written out here, their code is not): CocoDetection over
bench/detection_python_vs_torch.py's synthesized photos (long side 640 px,
1-8 polygon objects; ~/.cache/feedline/bench-detection), wrapped by
wrap_dataset_for_transforms_v2(target_keys=["boxes", "labels", "image_id"]),
with one of their presets as a v2.Compose, batched by
`lambda batch: tuple(zip(*batch))`:
  hflip  RandomHorizontalFlip, ToImage, ToDtype(float32, scale=True),
         ConvertBoundingBoxFormat(XYXY), SanitizeBoundingBoxes, ToPureTensor
  ssd    RandomPhotometricDistort, RandomZoomOut(fill: the mean, masks 0),
         RandomIoUCrop, then as hflip
--masks adds "masks" to the target keys.

Rounds alternate between the loaders, the order turned each round; each
loader is made anew each round (batch 8, shuffle, 2 workers), runs one
untimed epoch and one timed epoch. Printed per preset: the median images/s
and its range, the median CPU seconds per image of the process tree, and
feedline's median against torch's.

Usage: .venv/peer-torchvision/bin/python bench/detection_v2_swap_vs_torch.py
       [--rounds 5] [--images 400] [--presets hflip,ssd] [--masks]
       [--pythonpath build/python]
"""
import argparse
import collections
import contextlib
import datetime
import io
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from detection_python_vs_torch import (DEFAULT_CACHE, ensure_dataset,  # noqa: E402
                                       machine_line, tree_cpu_seconds)

BATCH = 8
WORKERS = 2
MEAN = (123, 117, 104)


def collate(batch):
    return tuple(zip(*batch))


def make_dataset(root, preset, masks):
    import torch
    import torchvision.datasets as tvd
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    steps = [v2.RandomHorizontalFlip(0.5)]
    if preset == "ssd":
        fill = collections.defaultdict(lambda: MEAN, {tv_tensors.Mask: 0})
        steps = [v2.RandomPhotometricDistort(), v2.RandomZoomOut(fill=fill), v2.RandomIoUCrop(),
                 v2.RandomHorizontalFlip(0.5)]
    steps += [v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
              v2.ConvertBoundingBoxFormat(tv_tensors.BoundingBoxFormat.XYXY),
              v2.SanitizeBoundingBoxes(), v2.ToPureTensor()]
    with contextlib.redirect_stdout(io.StringIO()):
        ds = tvd.CocoDetection(os.path.join(root, "train2017"),
                               os.path.join(root, "annotations", "instances_train2017.json"),
                               transforms=v2.Compose(steps))
    keys = ["boxes", "labels", "image_id"] + (["masks"] if masks else [])
    return tvd.wrap_dataset_for_transforms_v2(ds, target_keys=keys)


def make_loader(name, dataset):
    import torch.utils.data as tud
    import feedline.torch

    cls = tud.DataLoader if name == "torch" else feedline.torch.DataLoader
    loader = cls(dataset, batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                 collate_fn=collate)
    if name == "feedline":
        stats = loader.stats()["native_transforms"]
        if not (stats and stats["native"]):
            raise SystemExit(f"the swap did not lower it: {stats and stats['text']}")
    return loader


def epoch(loader):
    images = 0
    for batch_images, _ in loader:
        images += len(batch_images)
    return images


def run_preset(root, preset, args):
    import torch

    dataset = make_dataset(root, preset, args.masks)
    loaders = ["torch", "feedline"]
    rate = {n: [] for n in loaders}
    cpu = {n: [] for n in loaders}
    for r in range(args.rounds):
        for name in (loaders if r % 2 == 0 else loaders[::-1]):
            torch.manual_seed(r)
            loader = make_loader(name, dataset)
            epoch(loader)  # the workers start; not timed
            cpu0, t0 = tree_cpu_seconds(), time.perf_counter()
            n = epoch(loader)
            seconds, cpu_seconds = time.perf_counter() - t0, tree_cpu_seconds() - cpu0
            rate[name].append(n / seconds)
            cpu[name].append(cpu_seconds / n)
            del loader
    med = {n: statistics.median(v) for n, v in rate.items()}
    print(f"{preset}{' + masks' if args.masks else ''}: {args.images} images, batch {BATCH}, "
          f"{WORKERS} worker processes, {args.rounds} alternating rounds")
    for name in loaders:
        print(f"  {name:9s} median {med[name]:7.1f} images/s "
              f"(range {min(rate[name]):.1f}-{max(rate[name]):.1f}), "
              f"CPU {1000 * statistics.median(cpu[name]):.1f} ms/image")
    print(f"  feedline / torch: {med['feedline'] / med['torch']:.2f}x")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--presets", default="hflip,ssd")
    parser.add_argument("--masks", action="store_true")
    parser.add_argument("--cache", default=DEFAULT_CACHE)
    parser.add_argument("--pythonpath", default=os.path.join(ROOT, "build", "python"))
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.pythonpath))
    import torch
    import torchvision

    ensure_dataset(args.cache, args.images)
    # The first --images of the cache, through a file naming only them.
    import json
    import tempfile
    with open(os.path.join(args.cache, "annotations", "instances_train2017.json")) as f:
        doc = json.load(f)
    keep = {im["id"] for im in doc["images"][:args.images]}
    doc["images"] = [im for im in doc["images"] if im["id"] in keep]
    doc["annotations"] = [a for a in doc["annotations"] if a["image_id"] in keep]
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "annotations"))
        os.symlink(os.path.join(args.cache, "train2017"), os.path.join(root, "train2017"))
        with open(os.path.join(root, "annotations", "instances_train2017.json"), "w") as f:
            json.dump(doc, f)
        print(f"{datetime.date.today()}, torch {torch.__version__}, torchvision "
              f"{torchvision.__version__}; {machine_line()}")
        for preset in args.presets.split(","):
            run_preset(root, preset, args)


if __name__ == "__main__":
    main()
