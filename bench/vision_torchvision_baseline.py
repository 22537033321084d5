#!/usr/bin/python3
"""Per-core image pipeline throughput, side by side with torchvision.

The job: the 32 photo-like ~400x350 JPEGs of bench/vision_decode_benchmark
(it writes them out), decoded from memory and augmented on one core:

  train   RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize
  decode  full decode to RGB only

torchvision runs PIL (libjpeg-turbo) + torchvision.transforms in this
process with torch.set_num_threads(1); feedline runs BM_Pipeline_Train and
BM_Decode_Full / BM_Pipeline_DecodeOnly of the benchmark program. No loader,
no workers, no disk: the cost of one image, per core. The two alternate for
--rounds rounds; medians are printed as a markdown table.

Usage: bench/vision_torchvision_baseline.py [--build build] [--rounds 3]
"""
import argparse
import datetime
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torchvision
from PIL import Image
from torchvision import transforms

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def feedline_rates(build, dump_dir):
    binary = os.path.join(build, "bench", "vision_decode_benchmark")
    env = dict(os.environ, FEEDLINE_BENCH_DUMP=dump_dir)
    out = subprocess.run(
        [binary, "--benchmark_format=json", "--benchmark_min_time=1",
         "--benchmark_filter=BM_Decode_Full|BM_Pipeline_Train$|BM_Pipeline_DecodeOnly"],
        check=True, capture_output=True, text=True, env=env).stdout
    return {b["name"]: b["items_per_second"] for b in json.loads(out)["benchmarks"]}


def torch_rate(blobs, transform, seconds=3.0):
    done = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        for blob in blobs:
            image = Image.open(io.BytesIO(blob)).convert("RGB")
            if transform is not None:
                transform(image)
            done += 1
    return done / (time.process_time() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    train = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(MEAN, STD),
    ])
    rates = {"train": {"torch": [], "feedline": []}, "decode": {"torch": [], "feedline": []}}
    with tempfile.TemporaryDirectory() as dump:
        for _ in range(args.rounds):
            ours = feedline_rates(args.build, dump)
            blobs = []
            for name in sorted(os.listdir(dump)):
                with open(os.path.join(dump, name), "rb") as f:
                    blobs.append(f.read())
            rates["train"]["feedline"].append(ours["BM_Pipeline_Train"])
            rates["decode"]["feedline"].append(ours["BM_Decode_Full"])
            rates["train"]["torch"].append(torch_rate(blobs, train))
            rates["decode"]["torch"].append(torch_rate(blobs, None))

    print(f"Per-core image pipeline, 32 synthetic ~400x350 JPEGs in memory; "
          f"{datetime.date.today()}, torch {torch.__version__}, torchvision "
          f"{torchvision.__version__}, median of {args.rounds} rounds (CPU time)")
    print()
    print("| pipeline | torchvision img/s | feedline img/s | feedline / torchvision |")
    print("|---|---:|---:|---:|")
    for name in ("train", "decode"):
        t = statistics.median(rates[name]["torch"])
        f = statistics.median(rates[name]["feedline"])
        print(f"| {name} | {t:.0f} | {f:.0f} | {f / t:.1f}x |")
    full = statistics.median(rates["decode"]["feedline"])
    train_rate = statistics.median(rates["train"]["feedline"])
    print()
    print(f"feedline train / feedline full decode: {train_rate / full:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
