#!/usr/bin/python3
"""Per-image cost of the recipe augmentations, one core, side by side with
torchvision.

48 synthetic 500x375 JPEGs in memory. feedline runs its native pipeline
(RandomResizedCrop(224) + RandomHorizontalFlip + PILToTensor +
ConvertImageDtype + Normalize), plain and with each augmentation;
torchvision runs PIL decode + the same recipe with TrivialAugmentWide and
RandomErasing(0.25), with torch.set_num_threads(1). Each case runs once per
round, the cases alternating; medians over the rounds are printed, with the
ratio to feedline's plain pipeline. No loader, no workers, no disk.

Usage: PYTHONPATH=<build>/python bench/vision_augment_cost.py [--rounds 5]
"""
import argparse
import datetime
import io
import statistics
import time

import torch
import torchvision.transforms as tvt
from PIL import Image

from feedline.vision import encode_jpeg, synth
from feedline.vision import transforms as T

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    images = [encode_jpeg(synth.synthesize_image(500, 375, seed=s), 90) for s in range(48)]
    head = [T.RandomResizedCrop(224), T.RandomHorizontalFlip()]
    tail = [T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)]
    pipelines = {
        "feedline train": head + tail,
        "+ TrivialAugmentWide + RandomErasing(0.25)":
            head + [T.TrivialAugmentWide()] + tail + [T.RandomErasing(0.25)],
        "+ AutoAugment()": head + [T.AutoAugment()] + tail,
        "+ RandAugment()": head + [T.RandAugment()] + tail,
        "+ ColorJitter(0.4, 0.4, 0.4, 0.1)": head + [T.ColorJitter(0.4, 0.4, 0.4, 0.1)] + tail,
    }
    pipelines = {name: T.build_pipeline(T.Compose(steps)) for name, steps in pipelines.items()}
    torchvision = tvt.Compose([
        tvt.RandomResizedCrop(224), tvt.RandomHorizontalFlip(), tvt.TrivialAugmentWide(),
        tvt.PILToTensor(), tvt.ConvertImageDtype(torch.float), tvt.Normalize(MEAN, STD),
        tvt.RandomErasing(0.25)])

    def feedline_pass(pipeline):
        start = time.perf_counter()
        for index, data in enumerate(images):
            pipeline.run(data, "", 1, 0, index)
        return (time.perf_counter() - start) / len(images)

    def torchvision_pass():
        start = time.perf_counter()
        for data in images:
            torchvision(Image.open(io.BytesIO(data)).convert("RGB"))
        return (time.perf_counter() - start) / len(images)

    tv_name = "torchvision (PIL) + TrivialAugmentWide + RandomErasing(0.25)"
    times = {name: [] for name in list(pipelines) + [tv_name]}
    for _ in range(args.rounds):
        for name, pipeline in pipelines.items():
            times[name].append(feedline_pass(pipeline))
        times[tv_name].append(torchvision_pass())
    base = statistics.median(times["feedline train"])
    print(f"{datetime.date.today()}, one core, median of {args.rounds} rounds\n")
    print("| per image | us | vs. the plain train pipeline |\n|---|---:|---:|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median * 1e6:,.0f} | {median / base:.2f}x |")


if __name__ == "__main__":
    main()
