#!/usr/bin/python3
"""Images per second of the training pipeline iterated from Python, against
the same loader iterated from C++.

One DataLoader (ImageFolder, RandomResizedCrop + flip + ToTensor + Normalize,
shuffle) is driven alternately by a Python `for` loop over feedline.DataLoader
and by a C++ loop in the binding (DataLoader::Next with the GIL released, no
Python per batch). Epochs alternate so that both see the same machine state;
after a warm-up epoch each, the median epoch of each is compared. The ratio is
the share of the C++ speed that Python keeps (target: >= 0.95).

    PYTHONPATH=build/python /usr/bin/python3 bench/python_vs_cpp.py --images 2048
"""

import argparse
import os
import statistics
import time

import feedline
from feedline.vision import datasets, synth
from feedline.vision import transforms as T


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/tmp/feedline_bench_python",
                        help="image folder; written if missing")
    parser.add_argument("--images", type=int, default=1024, help="images to synthesize")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--epochs", type=int, default=5, help="measured epochs per side")
    return parser.parse_args()


def python_epoch(loader, overheads=None):
    waited = loader.stats()["consumer_wait_s"]
    start = time.perf_counter()
    samples, batches = 0, 0
    for images, labels in loader:
        samples += len(labels)
        batches += 1
    seconds = time.perf_counter() - start
    if overheads is not None:
        # Time not spent waiting for workers: what Python adds per batch.
        waited = loader.stats()["consumer_wait_s"] - waited
        overheads.append((seconds - waited) / batches)
    return samples, seconds


def cpp_epoch(loader):
    return loader._loader.drain_epoch()


def main():
    args = parse_args()
    if not os.path.isdir(args.data) or not os.listdir(args.data):
        print(f"writing {args.images} synthetic images to {args.data}", flush=True)
        synth.write_image_folder(args.data, args.images, classes=10, seed=0)
    transform = T.Compose([
        T.RandomResizedCrop(args.size), T.RandomHorizontalFlip(), T.ToTensor(),
        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
    ])
    data = datasets.ImageFolder(args.data, transform=transform)
    loader = feedline.DataLoader(data, batch_size=args.batch_size, shuffle=True,
                                 num_workers=args.workers, persistent_workers=True, seed=0)
    print(f"{len(data)} images, batch {args.batch_size}, {args.workers} workers, "
          f"{args.size}x{args.size} f32", flush=True)

    python_epoch(loader)  # warm-up: page cache, thread start, buffer growth
    cpp_epoch(loader)
    rates = {"python": [], "c++": []}
    overheads = []
    for epoch in range(args.epochs):
        for name, run in (("python", lambda l: python_epoch(l, overheads)), ("c++", cpp_epoch)):
            samples, seconds = run(loader)
            rates[name].append(samples / seconds)
            print(f"  epoch {epoch} {name:6s} {samples / seconds:9.1f} img/s", flush=True)
    python = statistics.median(rates["python"])
    cpp = statistics.median(rates["c++"])
    ratio = python / cpp
    print(f"python adds {statistics.median(overheads) * 1e6:.1f} us per batch outside the "
          "wait for workers")
    print(f"python {python:.1f} img/s, c++ {cpp:.1f} img/s, ratio {ratio:.3f} "
          f"({'meets' if ratio >= 0.95 else 'below'} the 0.95 target)")
    loader.close()


if __name__ == "__main__":
    main()
