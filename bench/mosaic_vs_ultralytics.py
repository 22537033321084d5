#!/usr/bin/python3
"""YOLO's training mosaic through feedline and through Ultralytics' own
dataset and loader, side by side on the same YOLO folder.

The pipeline, as YOLO trains by default, with and without its HSV step: each
sample the mosaic of its image and 3 partners (each resized to a longer
side of 640 around a random centre of a 1280 x 1280 canvas filled with 114),
then the canvas scaled by 0.5-1.5 about its centre and moved by up to 10%
into the 640 x 640 output, boxes moved, clipped and filtered, a horizontal
flip half the time; uint8 CHW images and the batch's objects as rows with
their image's index; batch 16, 2 workers, shuffled.

Loaders:
  feedline         feedline.vision.datasets.YoloDetection with
                   mosaic=Mosaic(640), RandomHorizontalFlip(0.5) and
                   PILToTensor, through feedline.DataLoader with 2 worker
                   threads, its batches turned into rows by detection_rows;
                   partners drawn from the sample's batch by (seed, epoch,
                   index), so a batch decodes each of its images once (kept
                   for its other samples: the default cache_bytes, 256 MiB)
                   and each tile's visible part is resampled once into the
                   output; it prints the images it decoded per sample
  ultralytics      Ultralytics' build_yolo_dataset + build_dataloader (its
                   YOLODataset, v8_transforms and InfiniteDataLoader, 2
                   worker processes) with its default hyperparameters but
                   hsv_h = hsv_s = hsv_v = 0 (the same work as feedline's);
                   its partners come from a buffer of the images its worker
                   decoded last, kept resized in memory, so it decodes about
                   one image per sample
  feedline_hsv     feedline's with RandomHSV() after the flip: YOLO's
                   default training pipeline
  ultralytics_hsv  Ultralytics with its defaults, HSV included (hsv_h
                   0.015, hsv_s 0.7, hsv_v 0.4)
  feedline_mixup,  the _hsv pipelines with mixup (--mixup, 0.15 by
  ultralytics_mixup  default): a sample blended with a second mosaic

`make bench-mosaic` makes .venv/ultralytics (ultralytics from PyPI, torch
2.13.0 CPU) and runs this script; feedline runs in Debian's python3 with
the build's module.

Data: bench/detection_python_vs_torch.py's synthesized photos (long side
640 px, 1-8 objects; ~/.cache/feedline/bench-detection, written by its
ensure_dataset when missing, about 4 minutes for 1600), linked into a YOLO
layout with their boxes as label files
(~/.cache/feedline/bench-mosaic/<N>/images/train, labels/train). 1600
images by default: feedline's cache holds about 280 of them decoded, so
the timed epoch finds few of the warm-up epoch's (on 400 it would find
most, which no large dataset gives).

Each round runs every loader in its own interpreter, in an order that turns
each round; each loader builds, runs one warm-up epoch and then one timed
epoch, and reports images/s and CPU per image (its process tree's, from
/proc); then a third epoch gives the tree's peak memory (PSS, each shared
page divided among its sharers, sampled every 0.1 s: bench/machine.py; a
read costs 10-15 ms a process, which would slow the timed epoch). Medians
over the rounds are printed, with the range. Usage:

  bench/mosaic_vs_ultralytics.py [--rounds 3] [--images 1600]
                                 [--loaders feedline,ultralytics,feedline_hsv,ultralytics_hsv]
                                 [--mixup 0.15]
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from machine import PeakMemory, cpu_model, process_tree_cpu  # noqa: E402  (bench/machine.py)
from peers import INTERPRETERS as PEER_INTERPRETERS  # noqa: E402  (the peers' venvs)
from detection_python_vs_torch import DEFAULT_CACHE as COCO_CACHE, ensure_dataset  # noqa: E402

BATCH = 16
WORKERS = 2
SIZE = 640
YOLO_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "feedline", "bench-mosaic")
ULTRALYTICS = os.path.join(ROOT, ".venv", "ultralytics", "bin", "python")
INTERPRETERS = {
    "feedline": PEER_INTERPRETERS["debian"],
    "ultralytics": ULTRALYTICS,
    "feedline_hsv": PEER_INTERPRETERS["debian"],
    "ultralytics_hsv": ULTRALYTICS,
    "feedline_mixup": PEER_INTERPRETERS["debian"],
    "ultralytics_mixup": ULTRALYTICS,
}


def ensure_yolo(count):
    """The first `count` photos of the COCO cache in the YOLO layout (files
    linked, labels written from their boxes); returns the images folder."""
    root = os.path.join(YOLO_CACHE, str(count))
    images = os.path.join(root, "images", "train")
    stamp = os.path.join(root, "complete")
    if os.path.exists(stamp):
        return images
    ensure_dataset(COCO_CACHE, count)
    shutil.rmtree(root, ignore_errors=True)
    labels = os.path.join(root, "labels", "train")
    os.makedirs(images)
    os.makedirs(labels)
    with open(os.path.join(COCO_CACHE, "annotations", "instances_train2017.json")) as f:
        doc = json.load(f)
    chosen = doc["images"][:count]
    objects = {image["id"]: [] for image in chosen}
    for a in doc["annotations"]:
        if a["image_id"] in objects and not a.get("iscrowd"):
            objects[a["image_id"]].append(a)
    for image in chosen:
        source = os.path.join(COCO_CACHE, "train2017", image["file_name"])
        target = os.path.join(images, image["file_name"])
        try:
            os.link(source, target)
        except OSError:
            shutil.copyfile(source, target)
        w, h = image["width"], image["height"]
        stem = os.path.splitext(image["file_name"])[0]
        with open(os.path.join(labels, stem + ".txt"), "w") as f:
            for a in objects[image["id"]]:
                x, y, bw, bh = a["bbox"]
                f.write(f"{a['category_id'] - 1} {(x + bw / 2) / w:.6f} {(y + bh / 2) / h:.6f} "
                        f"{bw / w:.6f} {bh / h:.6f}\n")
    with open(stamp, "w") as f:
        f.write("done\n")
    return images


# --------------------------------------------------------------------------
# The loaders, each an iterator factory: epoch() yields the number of images
# in each batch.
# --------------------------------------------------------------------------

# The mixup probability of the *_mixup loaders (--mixup).
MIXUP = 0.15


def make_feedline(images, hsv=False, mixup=0.0):
    import feedline
    from feedline.vision import datasets
    from feedline.vision import transforms as T
    steps = [T.RandomHorizontalFlip(0.5)] + ([T.RandomHSV()] if hsv else []) + [T.PILToTensor()]
    data = datasets.YoloDetection(images, T.Compose(steps),
                                  mosaic=datasets.Mosaic(size=SIZE, mixup=mixup))
    loader = feedline.DataLoader(data, batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                                 persistent_workers=True)

    def epoch():
        for batch in loader:
            datasets.detection_rows(batch)  # the rows YOLO's loss takes
            yield len(batch["image"])
    epoch.decoded = lambda: loader.stats()["images_decoded"]
    return epoch


def make_ultralytics(images, hsv=False, mixup=0.0):
    from ultralytics.cfg import get_cfg
    from ultralytics.data.build import build_dataloader, build_yolo_dataset
    from ultralytics.utils import DEFAULT_CFG
    overrides = {"imgsz": SIZE, "batch": BATCH, "workers": WORKERS, "cache": False,
                 "mixup": mixup}
    if not hsv:
        overrides.update(hsv_h=0.0, hsv_s=0.0, hsv_v=0.0)
    cfg = get_cfg(DEFAULT_CFG, overrides)
    names = {i: f"category_{i + 1:02d}" for i in range(80)}
    data = {"names": names, "nc": len(names), "channels": 3}
    dataset = build_yolo_dataset(cfg, images, BATCH, data, mode="train")
    loader = build_dataloader(dataset, BATCH, WORKERS, shuffle=True, rank=-1, device="cpu")

    def epoch():
        for batch in loader:
            yield len(batch["img"])
    return epoch


LOADERS = {"feedline": make_feedline, "ultralytics": make_ultralytics,
           "feedline_hsv": lambda images: make_feedline(images, hsv=True),
           "ultralytics_hsv": lambda images: make_ultralytics(images, hsv=True),
           "feedline_mixup": lambda images: make_feedline(images, hsv=True, mixup=MIXUP),
           "ultralytics_mixup": lambda images: make_ultralytics(images, hsv=True, mixup=MIXUP)}
# Whose rate each peer's is compared with.
SAME_WORK = {"ultralytics": "feedline", "ultralytics_hsv": "feedline_hsv",
             "ultralytics_mixup": "feedline_mixup"}


def serve(name, images):
    """One loader: a warm-up epoch, then a timed one; prints JSON."""
    epoch = LOADERS[name](images)
    warm = sum(epoch())
    # Worker processes are persistent: their CPU is read from /proc.
    decoded = getattr(epoch, "decoded", lambda: None)
    decoded0 = decoded()
    cpu0, t0 = process_tree_cpu(), time.perf_counter()
    count = sum(epoch())
    wall, cpu = time.perf_counter() - t0, process_tree_cpu() - cpu0
    result = {"images": count, "warm": warm, "wall": wall, "cpu": cpu}
    if decoded0 is not None:
        result["decoded"] = decoded() - decoded0
    with PeakMemory() as memory:  # an epoch of its own: reading PSS takes CPU
        sum(epoch())
    result["peak"] = memory.peak
    print(json.dumps(result))


def versions(python):
    code = ("import importlib.metadata as m, sys\n"
            "print('python', sys.version.split()[0])\n"
            "for p in ('ultralytics', 'torch', 'opencv-python', 'numpy'):\n"
            "    try: print(p, m.version(p))\n"
            "    except m.PackageNotFoundError: pass\n")
    try:
        return subprocess.run([python, "-c", code], capture_output=True, text=True,
                              timeout=60).stdout.split("\n")
    except OSError as e:
        return [f"({e})"]


def main():
    global MIXUP  # the loaders read it; --serve children get it from --mixup
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--images", type=int, default=1600)
    parser.add_argument("--loaders", default="feedline,ultralytics,feedline_hsv,ultralytics_hsv")
    parser.add_argument("--mixup", type=float, default=MIXUP,
                        help="the *_mixup loaders' mixup probability")
    parser.add_argument("--pythonpath", default=os.path.join(ROOT, "build", "python"))
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    MIXUP = args.mixup
    if args.serve:
        serve(args.serve, args.data)
        return 0
    images = ensure_yolo(args.images)
    names = args.loaders.split(",")
    print(f"mosaic vs Ultralytics, {datetime.date.today()}: {cpu_model()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()} (driver)")
    for name in names:
        print(f"  {name}: {INTERPRETERS[name]}: "
              f"{', '.join(v for v in versions(INTERPRETERS[name]) if v)}")
    print(f"data: {args.images} images in {images}; mosaic to {SIZE}x{SIZE} + flip (+ HSV), "
          f"uint8 CHW, mixup {args.mixup} in the *_mixup loaders, "
          f"batch {BATCH}, {WORKERS} workers, {args.rounds} alternating rounds")
    results = {name: [] for name in names}
    # Ultralytics stays offline and writes its settings beside the run.
    env = dict(os.environ, PYTHONPATH=args.pythonpath, YOLO_OFFLINE="1",
               YOLO_CONFIG_DIR=os.path.join(YOLO_CACHE, "ultralytics-config"))
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            run = subprocess.run([INTERPRETERS[name], __file__, "--serve", name, "--data", images,
                                  "--mixup", str(args.mixup)],
                                 capture_output=True, text=True, env=env, timeout=1800)
            lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
            if run.returncode != 0 or not lines:
                print(f"  {name}: failed (exit {run.returncode}): {run.stderr.strip()[-600:]}")
                results[name].append(None)
                continue
            result = json.loads(lines[-1])
            results[name].append(result)
            decodes = (f", {result['decoded'] / result['images']:.2f} decodes an image"
                       if "decoded" in result else "")
            print(f"  round {r + 1} {name}: {result['images'] / result['wall']:.1f} images/s, "
                  f"{1000 * result['cpu'] / result['images']:.1f} ms CPU an image, "
                  f"peak {result['peak'] / 2**20:.0f} MiB{decodes}", flush=True)
    medians, cpus = {}, {}
    for name in names:
        done = [x for x in results[name] if x]
        if not done:
            print(f"{name:15} no result")
            continue
        rates = [x["images"] / x["wall"] for x in done]
        medians[name] = statistics.median(rates)
        cpu = cpus[name] = statistics.median(1000 * x["cpu"] / x["images"] for x in done)
        peak = statistics.median(x["peak"] for x in done) / 2**20
        line = (f"{name:15} median {medians[name]:7.1f} images/s (range {min(rates):.1f}-"
                f"{max(rates):.1f})  CPU {cpu:6.1f} ms/image  peak {peak:6.0f} MiB")
        ours = SAME_WORK.get(name)
        if ours in medians:
            line += (f"  {ours} {medians[ours] / medians[name]:.2f}x its rate, "
                     f"{cpus[name] / cpus[ours]:.2f}x less CPU")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
