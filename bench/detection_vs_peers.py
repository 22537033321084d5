#!/usr/bin/python3
"""An SSD-style detection pipeline through feedline and its peers, side by
side on the same COCO-format photos.

The pipeline, as each peer spells it (boxes only, no masks): an SSD IoU
  crop chosen from the boxes (minimum IoU from {0, 0.1, 0.3, 0.5, 0.7, 0.9}
  or no crop, scale 0.3-1, aspect ratio 0.5-2), a horizontal flip half the
  time, a resize to 300 x 300, a photometric distort of the 300 x 300 image
  (brightness, contrast, saturation, hue, each half the time), then float32
  CHW normalized with ImageNet's mean and std; batch 8, 2 workers (or 2
  threads), shuffled. The distort comes after the resize, where DALI's SSD
  example puts its colour steps and where it costs least for everyone.

Loaders:
  feedline     feedline.vision.datasets.CocoDetection with RandomIoUCrop,
               RandomHorizontalFlip, Resize((300, 300)),
               RandomPhotometricDistort, ToTensor, Normalize,
               through feedline.DataLoader, 2 worker threads; the crop is
               chosen before decoding and only it is decoded
  tv2          torchvision 0.29's transforms.v2 (the library's own
               RandomIoUCrop, RandomHorizontalFlip, Resize,
               RandomPhotometricDistort, SanitizeBoundingBoxes, ToDtype,
               Normalize) on
               torchvision.datasets.CocoDetection wrapped by
               wrap_dataset_for_transforms_v2, through torch's DataLoader with
               2 worker processes; in .venv/peer-torchvision (torch 2.14.1 +
               torchvision 0.29.1 + pycocotools)
  dali         DALI 2.4 on the CPU (device_id=None, num_threads 2), its SSD
               example's operators: readers.coco (ltrb, ratio, skip_empty),
               random_bbox_crop, decoders.image_slice (decodes the crop only),
               resize, hsv + brightness_contrast (the photometric distort's
               steps, each with probability 0.5 through coin flips), flip
               by crop_mirror_normalize with bb_flip; in .venv
               (nvidia-dali-cuda120)

  feedline_masks  feedline's, with masks=True: each object's polygons
               drawn at 300 x 300 (the cost of asking for masks); only with
               --loaders

`make bench-detection-peers` makes both venvs and runs this script.

Data: bench/detection_python_vs_torch.py's synthesized COCO-format photos
(long side 640 px, 1-8 objects; ~/.cache/feedline/bench-detection, written
by its ensure_dataset when missing; --images N takes the first N through a
temporary instances file).

Each round runs every loader in its own interpreter, in an order that turns
each round; each loader builds, runs one warm-up epoch and then one timed
epoch, and reports images/s and CPU per image (its process tree's, from
/proc); then a third epoch gives the tree's peak memory (PSS, each shared
page divided among its sharers, sampled every 0.1 s: bench/machine.py; a
read costs 10-15 ms a process, which would slow the timed epoch). Medians
over the rounds are printed, with the range. Usage:

  bench/detection_vs_peers.py [--rounds 3] [--images 400] [--loaders feedline,tv2,dali]
  (run by the venv's Python: .venv/bin/python)
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from machine import PeakMemory, cpu_model, process_tree_cpu  # noqa: E402  (bench/machine.py)
from peers import INTERPRETERS as PEER_INTERPRETERS  # noqa: E402  (the peers' venvs)
from detection_python_vs_torch import DEFAULT_CACHE as CACHE, ensure_dataset  # noqa: E402

BATCH = 8
WORKERS = 2
SIZE = 300
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
INTERPRETERS = {
    "feedline": PEER_INTERPRETERS["venv"],
    "tv2": PEER_INTERPRETERS["torchvision"],
    "dali": PEER_INTERPRETERS["venv"],
    "feedline_masks": PEER_INTERPRETERS["venv"],
}


def subset_annotations(count, out):
    """An instances file of the cache's first `count` images (all their
    objects), written to `out`."""
    with open(os.path.join(CACHE, "annotations", "instances_train2017.json")) as f:
        doc = json.load(f)
    images = doc["images"][:count]
    ids = {image["id"] for image in images}
    doc["images"] = images
    doc["annotations"] = [a for a in doc["annotations"] if a["image_id"] in ids]
    with open(out, "w") as f:
        json.dump(doc, f)
    return len(images)


# --------------------------------------------------------------------------
# The loaders, each an iterator factory: epoch() yields batches and the
# number of images in each.
# --------------------------------------------------------------------------

def make_feedline(ann, masks=False):
    import feedline
    from feedline.vision import datasets
    from feedline.vision import transforms as T
    data = datasets.CocoDetection(
        os.path.join(CACHE, "train2017"), ann,
        T.Compose([T.RandomIoUCrop(sampler_options=[0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]),
                   T.RandomHorizontalFlip(0.5), T.Resize((SIZE, SIZE)),
                   T.RandomPhotometricDistort(), T.ToTensor(), T.Normalize(MEAN, STD)]),
        skip_empty=True, annotation_index=False, masks=masks)
    loader = feedline.DataLoader(data, batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                                 persistent_workers=True)

    def epoch():
        for batch in loader:
            _, targets = datasets.detection_targets(batch)
            yield len(targets)
    return epoch


def make_tv2(ann):
    import torch
    import torchvision
    from torchvision.transforms import v2
    torchvision.disable_beta_transforms_warning() if hasattr(
        torchvision, "disable_beta_transforms_warning") else None
    transforms = v2.Compose([
        v2.ToImage(),
        v2.RandomIoUCrop(),
        v2.RandomHorizontalFlip(0.5),
        v2.Resize((SIZE, SIZE)),
        v2.RandomPhotometricDistort(p=0.5),
        v2.SanitizeBoundingBoxes(),
        v2.ToDtype(torch.float32, scale=True),
        v2.Normalize(MEAN, STD),
    ])
    data = torchvision.datasets.CocoDetection(os.path.join(CACHE, "train2017"), ann,
                                              transforms=transforms)
    data = torchvision.datasets.wrap_dataset_for_transforms_v2(
        data, target_keys=("boxes", "labels", "image_id"))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True,
                                         num_workers=WORKERS, persistent_workers=True,
                                         collate_fn=lambda batch: tuple(zip(*batch)))

    def epoch():
        for images, _ in loader:
            yield len(images)
    return epoch


def make_dali(ann):
    from nvidia.dali import fn, pipeline_def, types
    mean = [m * 255 for m in MEAN]
    std = [s * 255 for s in STD]

    @pipeline_def(batch_size=BATCH, num_threads=WORKERS, device_id=None, seed=1)
    def ssd_pipeline():
        jpegs, bboxes, labels = fn.readers.coco(
            file_root=os.path.join(CACHE, "train2017"), annotations_file=ann, ltrb=True, ratio=True,
            skip_empty=True, random_shuffle=True, name="Reader")
        crop_begin, crop_size, bboxes, labels = fn.random_bbox_crop(
            bboxes, labels, device="cpu", aspect_ratio=[0.5, 2.0],
            thresholds=[0, 0.1, 0.3, 0.5, 0.7, 0.9], scaling=[0.3, 1.0],
            bbox_layout="xyXY", allow_no_crop=True, num_attempts=50)
        images = fn.decoders.image_slice(jpegs, crop_begin, crop_size, device="cpu",
                                         output_type=types.RGB)
        images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
        # The photometric distort's steps, each half the time.
        on = fn.random.coin_flip(probability=0.5)
        brightness = fn.random.uniform(range=[0.875, 1.125]) * on + (1 - on)
        on = fn.random.coin_flip(probability=0.5)
        contrast = fn.random.uniform(range=[0.5, 1.5]) * on + (1 - on)
        images = fn.brightness_contrast(images, brightness=brightness, contrast=contrast)
        on = fn.random.coin_flip(probability=0.5)
        saturation = fn.random.uniform(range=[0.5, 1.5]) * on + (1 - on)
        on = fn.random.coin_flip(probability=0.5)
        hue = fn.random.uniform(range=[-18.0, 18.0]) * on  # degrees: 0.05 of a turn
        images = fn.hsv(images, hue=hue, saturation=saturation)
        flip = fn.random.coin_flip(probability=0.5)
        bboxes = fn.bb_flip(bboxes, ltrb=True, horizontal=flip)
        images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW",
                                          mean=mean, std=std, mirror=flip)
        return images, bboxes, labels

    pipe = ssd_pipeline()
    pipe.build()
    size = pipe.epoch_size("Reader")

    def epoch():
        seen = 0
        while seen < size:
            images, _, _ = pipe.run()
            n = len(images)
            seen += n
            yield min(n, size - seen + n)
        pipe.reset()
    return epoch


LOADERS = {"feedline": make_feedline, "tv2": make_tv2, "dali": make_dali,
           "feedline_masks": lambda ann: make_feedline(ann, masks=True)}


def serve(name, ann):
    """One loader: a warm-up epoch, then a timed one; prints JSON."""
    epoch = LOADERS[name](ann)
    warm = sum(epoch())
    # Worker processes are persistent: their CPU is read from /proc.
    cpu0, t0 = process_tree_cpu(), time.perf_counter()
    images = sum(epoch())
    wall, cpu = time.perf_counter() - t0, process_tree_cpu() - cpu0
    with PeakMemory() as memory:  # an epoch of its own: reading PSS takes CPU
        sum(epoch())
    print(json.dumps({"images": images, "warm": warm, "wall": wall, "cpu": cpu,
                      "peak": memory.peak}))


def versions(python):
    code = ("import importlib.metadata as m\n"
            "for p in ('torch', 'torchvision', 'nvidia-dali-cuda120', 'pycocotools'):\n"
            "    try: print(p, m.version(p))\n"
            "    except m.PackageNotFoundError: pass\n")
    try:
        return subprocess.run([python, "-c", code], capture_output=True, text=True,
                              timeout=60).stdout.split("\n")
    except OSError as e:
        return [f"({e})"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--loaders", default="feedline,tv2,dali")
    parser.add_argument("--pythonpath", default=os.path.join(ROOT, "build", "python"))
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--ann", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.ann)
        return 0
    ensure_dataset(CACHE, args.images)
    names = args.loaders.split(",")
    work = tempfile.mkdtemp(prefix="feedline-detection-peers-")
    ann = os.path.join(work, "instances.json")
    count = subset_annotations(args.images, ann)
    print(f"detection vs peers, {datetime.date.today()}: {cpu_model()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()} (driver)")
    for name in names:
        print(f"  {name}: {INTERPRETERS[name]}: "
              f"{', '.join(v for v in versions(INTERPRETERS[name]) if v)}")
    print(f"data: {count} images of {CACHE}; SSD-style pipeline to {SIZE}x{SIZE}, batch {BATCH}, "
          f"{WORKERS} workers, {args.rounds} alternating rounds")
    results = {name: [] for name in names}
    env = dict(os.environ, PYTHONPATH=args.pythonpath)
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            run = subprocess.run([INTERPRETERS[name], __file__, "--serve", name, "--ann", ann],
                                 capture_output=True, text=True, env=env, timeout=1800)
            lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
            if run.returncode != 0 or not lines:
                print(f"  {name}: failed (exit {run.returncode}): {run.stderr.strip()[-600:]}")
                results[name].append(None)
                continue
            result = json.loads(lines[-1])
            results[name].append(result)
            print(f"  round {r + 1} {name}: {result['images'] / result['wall']:.1f} images/s, "
                  f"{1000 * result['cpu'] / result['images']:.1f} ms CPU an image, "
                  f"peak {result['peak'] / 2**20:.0f} MiB", flush=True)
    medians = {}
    for name in names:
        done = [x for x in results[name] if x]
        if not done:
            print(f"{name:9} no result")
            continue
        rates = [x["images"] / x["wall"] for x in done]
        medians[name] = statistics.median(rates)
        cpu = statistics.median(1000 * x["cpu"] / x["images"] for x in done)
        peak = statistics.median(x["peak"] for x in done) / 2**20
        line = (f"{name:9} median {medians[name]:7.1f} images/s (range {min(rates):.1f}-"
                f"{max(rates):.1f})  CPU {cpu:6.1f} ms/image  peak {peak:6.0f} MiB")
        if name != "feedline" and "feedline" in medians:
            line += f"  feedline {medians['feedline'] / medians[name]:.2f}x its rate"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
